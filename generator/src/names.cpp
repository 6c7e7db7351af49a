#include "tcgen/names.h"

#include <algorithm>
#include <array>

namespace tcgen {

const std::vector<std::string_view>& known_dtypes() {
  static const std::vector<std::string_view> dtypes = {
      "float32", "float64", "float16", "bfloat16", "int8",      "int16",
      "int32",   "int64",   "uint8",   "bool",     "complex64", "complex128"};
  return dtypes;
}

bool is_known_dtype(std::string_view name) {
  const auto& d = known_dtypes();
  return std::find(d.begin(), d.end(), name) != d.end();
}

bool is_identifier(std::string_view name) {
  if (name.empty()) return false;
  auto alpha = [](char c) { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_'; };
  auto digit = [](char c) { return c >= '0' && c <= '9'; };
  if (!alpha(name[0])) return false;
  return std::all_of(name.begin(), name.end(), [&](char c) { return alpha(c) || digit(c); });
}

bool is_cpp_keyword(std::string_view name) {
  static constexpr std::array<std::string_view, 97> keywords = {
      "alignas",     "alignof",      "and",          "and_eq",       "asm",
      "auto",        "bitand",       "bitor",        "bool",         "break",
      "case",        "catch",        "char",         "char8_t",      "char16_t",
      "char32_t",    "class",        "compl",        "concept",      "const",
      "consteval",   "constexpr",    "constinit",    "const_cast",   "continue",
      "co_await",    "co_return",    "co_yield",     "decltype",     "default",
      "delete",      "do",           "double",       "dynamic_cast", "else",
      "enum",        "explicit",     "export",       "extern",       "false",
      "float",       "for",          "friend",       "goto",         "if",
      "inline",      "int",          "long",         "mutable",      "namespace",
      "new",         "noexcept",     "not",          "not_eq",       "nullptr",
      "operator",    "or",           "or_eq",        "private",      "protected",
      "public",      "register",     "reinterpret_cast", "requires", "return",
      "short",       "signed",       "sizeof",       "static",       "static_assert",
      "static_cast", "struct",       "switch",       "template",     "this",
      "thread_local", "throw",       "true",         "try",          "typedef",
      "typeid",      "typename",     "union",        "unsigned",     "using",
      "virtual",     "void",         "volatile",     "wchar_t",      "while",
      "xor",         "xor_eq",       "final",        "override",     "import",
      "module",      "NULL"};
  return std::find(keywords.begin(), keywords.end(), name) != keywords.end();
}

bool is_python_keyword(std::string_view name) {
  static constexpr std::array<std::string_view, 35> keywords = {
      "False", "None",   "True",    "and",      "as",       "assert", "async", "await", "break",
      "class", "continue", "def",   "del",      "elif",     "else",   "except", "finally", "for",
      "from",  "global", "if",      "import",   "in",       "is",     "lambda", "nonlocal", "not",
      "or",    "pass",   "raise",   "return",   "try",      "while",  "with",  "yield"};
  return std::find(keywords.begin(), keywords.end(), name) != keywords.end();
}

std::optional<std::string> reserved_field_name_reason(std::string_view name) {
  if (name.find("__") != std::string_view::npos)
    return "names containing '__' are reserved for the C++ implementation (and Python mangles or reserves them in "
           "a class)";
  if (name.size() > 1 && name[0] == '_' && name[1] >= 'A' && name[1] <= 'Z')
    return "names starting with '_' and an upper-case letter are reserved for the C++ implementation";
  return std::nullopt;
}

bool cpp_member_takes_suffix(std::string_view name, std::string_view class_name) {
  // Object-like macros of the C and C++ standard libraries: a member so named
  // would be replaced by the preprocessor.
  static constexpr std::array<std::string_view, 2> macros = {"EOF", "errno"};  // NULL: a keyword above
  return is_cpp_keyword(name) || std::find(macros.begin(), macros.end(), name) != macros.end() ||
         name == "Fields" || name == class_name;
}

static std::optional<ValueType> scalar_value_type(std::string_view t) {
  if (t == "string") return ValueType::String;
  if (t == "int") return ValueType::Int;
  if (t == "float") return ValueType::Float;
  if (t == "bool") return ValueType::Bool;
  return std::nullopt;
}

std::optional<ValueTypeSpec> parse_value_type(std::string_view text) {
  if (auto s = scalar_value_type(text)) return ValueTypeSpec{*s, ValueType::None};
  constexpr std::string_view prefix = "list<";
  if (text.size() > prefix.size() + 1 && text.substr(0, prefix.size()) == prefix &&
      text.back() == '>') {
    auto inner = text.substr(prefix.size(), text.size() - prefix.size() - 1);
    if (auto e = scalar_value_type(inner)) return ValueTypeSpec{ValueType::List, *e};
  }
  return std::nullopt;
}

std::string value_type_spelling(ValueType type, ValueType element) {
  auto scalar = [](ValueType v) -> std::string {
    switch (v) {
      case ValueType::String: return "string";
      case ValueType::Int: return "int";
      case ValueType::Float: return "float";
      case ValueType::Bool: return "bool";
      default: return "?";
    }
  };
  if (type == ValueType::List) return "list<" + scalar(element) + ">";
  return scalar(type);
}

}  // namespace tcgen
