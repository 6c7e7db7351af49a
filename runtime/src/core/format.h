// Small text helpers shared by error messages and repr (private).
#pragma once

#include <ATen/core/Tensor.h>
#include <fmt/format.h>
#include <fmt/ranges.h>

#include <string>

#include "tensordict/detail/tensorclass_support.h"

namespace tensordict {

// "[3, 4]", as tensordict prints a batch size inside messages.
using detail::shape_string;

}  // namespace tensordict
