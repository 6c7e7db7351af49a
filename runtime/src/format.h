// Small text helpers shared by error messages and repr (private).
#pragma once

#include <ATen/core/Tensor.h>
#include <fmt/format.h>
#include <fmt/ranges.h>

#include <string>

namespace tensordict::detail {

// "[3, 4]", as tensordict prints a batch size inside messages.
inline std::string shape_str(at::IntArrayRef sizes) { return fmt::format("[{}]", fmt::join(sizes, ", ")); }

}  // namespace tensordict::detail
