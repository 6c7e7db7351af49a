// Text files embedded into the generator at build time.
#pragma once

#include <string_view>
#include <vector>

namespace tcgen::embedded {

struct File {
  std::string_view path;  // relative path, e.g. "torch/types.h"
  std::string_view text;
};

// templates/*.mustache, keyed by file name.
const std::vector<File>& templates();
// generator/stub_include/** plus tensordict/annotations.h.
const std::vector<File>& stub_headers();
// generator/data/*: tables taken from other projects (typed_tensordict_attributes.txt).
const std::vector<File>& data();

}  // namespace tcgen::embedded
