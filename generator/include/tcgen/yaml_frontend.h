// YAML schema frontend: file -> IR (no semantic checks beyond structure).
#pragma once

#include <string>

#include "tcgen/diagnostics.h"
#include "tcgen/ir.h"

namespace tcgen {

// Parses the YAML text `text` read from `file`; structural problems (bad
// YAML, unknown keys, wrong node kinds) are added to `diags`.
Schema parse_yaml_schema(const std::string& file, const std::string& text,
                         Diagnostics& diags);

}  // namespace tcgen
