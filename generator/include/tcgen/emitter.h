// IR -> mstch context -> text, through the embedded (or given) templates.
#pragma once

#include <optional>
#include <string>

#include "tcgen/ir.h"

namespace tcgen {

struct EmitOptions {
  // Directory with tensorclass.h.mustache; nullopt: the embedded template.
  std::optional<std::string> templates_dir;
};

// The output file name for a schema: "rollout.yaml" -> "rollout.tc.h".
std::string output_name(const std::string& schema_file);

// Renders the generated header for a validated schema. `imported_headers` are
// the "#include" spellings of the headers generated for imported schemas.
std::string emit_header(const Schema& schema, const EmitOptions& options);

// C++ string literal for `s` ("\"a\\\"b\"").
std::string cpp_string_literal(const std::string& s);

}  // namespace tcgen
