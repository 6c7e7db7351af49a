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
bool is_python_keyword(std::string_view name);

// Field names (docs/schema-language.md, "Field names"). A field's name is its key
// on disk and its Python name, whatever TensorClass or tensordict's classes
// call their methods. Why an identifier cannot name a field (it contains
// "__" or starts with '_' and an upper-case letter: reserved for the C++
// implementation, and mangled or special in Python classes), or nullopt.
std::optional<std::string> reserved_field_name_reason(std::string_view name);
// Whether a field's C++ member takes the name plus '_': a C++ keyword (or a
// standard macro such as NULL or errno), the generated struct `Fields`, or
// the class's own name (`class_name`), none of which a member can be named.
bool cpp_member_takes_suffix(std::string_view name, std::string_view class_name);

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
