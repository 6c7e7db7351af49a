// dtype names as tensordict writes them: the str(torch.dtype) forms without the
// "torch." prefix ("float32", "int64", "bool", ...).
#pragma once

#include <c10/core/ScalarType.h>

#include <optional>
#include <string_view>

namespace tensordict {

// "float32" for at::kFloat; throws ValueError for a dtype tensordict
// has no name for.
std::string_view dtype_name(at::ScalarType dtype);
// The inverse; accepts an optional "torch." prefix. nullopt if unknown.
std::optional<at::ScalarType> dtype_from_name(std::string_view name);

}  // namespace tensordict
