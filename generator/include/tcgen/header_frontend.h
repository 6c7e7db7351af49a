// Annotated C++ header frontend (libclang): file -> IR.
#pragma once

#include <string>
#include <vector>

#include "tcgen/diagnostics.h"
#include "tcgen/ir.h"

namespace tcgen {

struct HeaderOptions {
  std::vector<std::string> include_dirs;  // -I
  std::vector<std::string> defines;       // -D (NAME or NAME=VALUE)
};

// Parses `file` with libclang (TENSORCLASS_GENERATOR defined, stand-in
// torch/ATen headers first on the include path). Any clang error is reported
// and makes the result unusable. Nested tensorclasses declared in other
// headers are returned through `externals`. `dependencies` receives every
// file clang read that is not a stand-in header.
Schema parse_header_schema(const std::string& file, const HeaderOptions& options,
                           Diagnostics& diags, ExternalClasses& externals,
                           std::vector<std::string>& dependencies);

}  // namespace tcgen
