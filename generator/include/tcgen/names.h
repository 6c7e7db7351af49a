// The generator's own small tables: dtypes, value types, reserved names.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "tcgen/ir.h"

namespace tcgen {

// Canonical tensordict dtype names, in the order error messages list them.
const std::vector<std::string_view>& known_dtypes();
bool is_known_dtype(std::string_view name);

bool is_identifier(std::string_view name);
bool is_cpp_keyword(std::string_view name);
// Why a field may not be named `name` (a TensorClass member it would hide, or
// a name reserved for tensordict), or nullopt when it may. `name` is a
// non-empty identifier.
std::optional<std::string> reserved_field_name_reason(std::string_view name);

// Non-tensor type spellings: string, int, float, bool, list<T>.
struct ValueTypeSpec {
  ValueType type = ValueType::None;
  ValueType element = ValueType::None;
};
// nullopt when `text` is not a value type spelling (it may be a class name).
std::optional<ValueTypeSpec> parse_value_type(std::string_view text);
// "string", "list<int>", ...
std::string value_type_spelling(ValueType type, ValueType element);

}  // namespace tcgen
