// IR -> mstch context -> text, through the embedded (or given) templates.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <mstch/mstch.hpp>

#include "tcgen/ir.h"
#include "tcgen/text.h"

namespace tcgen {

struct EmitOptions {
  // Directory with tensorclass.h.mustache; nullopt: the embedded template.
  std::optional<std::string> templates_dir;
  // The Python form of every schema of the run and of their imports
  // (--python-form); nullopt: each schema's python_form, else a @tensorclass.
  std::optional<PythonForm> python_form;
};

// The output file names for a schema: "rollout.yaml" -> "rollout.tc.h" and
// "rollout.tc.cpp".
std::string output_name(const std::string& schema_file);
std::string source_output_name(const std::string& schema_file);

// Renders the generated header for a validated schema. `imported_headers` are
// the "#include" spellings of the headers generated for imported schemas.
std::string emit_header(const Schema& schema, const EmitOptions& options);
// Renders the generated source: the explicit instantiations of the typed
// engine for the schema's classes, which the header declares extern.
std::string emit_source(const Schema& schema, const EmitOptions& options);

// The text of template `name` ("tensorclass.h.mustache"): from
// options.templates_dir when set, else the embedded one.
std::string load_template(std::string_view name, const EmitOptions& options);
// Renders a mustache template whose values are already spelled for the target
// language (no HTML escaping). `partials`: the template files it includes
// (load_template), each as `{{> name}}` for "name.<ext>.mustache".
std::string render_template(const std::string& text, const mstch::map& context,
                            const std::vector<std::string>& partials = {}, const EmitOptions& options = {});

}  // namespace tcgen
