// IR -> Python module: one tensordict @tensorclass per schema class, with the
// schema's contract checked in __post_init__ (templates/tensorclass.py.mustache).
#pragma once

#include <string>

#include "tcgen/emitter.h"
#include "tcgen/ir.h"

namespace tcgen {

// Where the module of `schema` goes under an output directory: its Python
// module path as a package, "tc.rl" -> "tc/rl/__init__.py" (a package, so that
// the modules of "rl" and "rl.common" can both exist). Throws Error when the
// schema names no valid module.
std::string python_output_name(const Schema& schema);

// Renders the Python module of a validated schema. Throws Error (with the
// locations) for names Python cannot take: keywords as field, class or module
// names.
std::string emit_python(const Schema& schema, const EmitOptions& options);

}  // namespace tcgen
