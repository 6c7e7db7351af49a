#include "tcgen/python_fields.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <filesystem>

#include "tcgen/diagnostics.h"
#include "tcgen/names.h"
#include "tcgen/text.h"

namespace tcgen {
namespace {

std::string python_bool(bool b) { return b ? "True" : "False"; }

std::string scalar_python_type(ValueType v) {
  switch (v) {
    case ValueType::String: return "str";
    case ValueType::Int: return "int";
    case ValueType::Float: return "float";
    case ValueType::Bool: return "bool";
    default: return "object";
  }
}

// A schema scalar (validated YAML text) as a Python literal of its type.
std::string scalar_python_value(ValueType v, const std::string& text) {
  switch (v) {
    case ValueType::String: return python_string_literal(text);
    case ValueType::Bool: return text == "true" ? "True" : "False";
    case ValueType::Float: return float_literal(text);  // "1" is a float field's 1.0, not the int 1
    default: return text;
  }
}

// The value a non-tensor field has when the schema gives no default: the C++
// member's value-initialised one.
std::string zero_value(ValueType v) {
  switch (v) {
    case ValueType::String: return "\"\"";
    case ValueType::Int: return "0";
    case ValueType::Float: return "0.0";
    case ValueType::Bool: return "False";
    default: return "None";
  }
}

// Annotations name types through the module's `_tc__` aliases (the
// template defines one per builtin and per class): a field may be named
// `int`, `str` or after a class, and a bare name in the class body would
// then mean that field (to type checkers, and to code after the defaults).
// No field can take an alias's name: field names never contain "__".
std::string type_alias(const std::string& type) { return "_tc__" + type; }

// A docstring line: printable already; backslashes and quotes escaped so that
// nothing ends the string or turns into an escape sequence.
std::string docstring_text(const std::string& line) {
  std::string out;
  for (char c : line) {
    if (c == '\\' || c == '"') out += '\\';
    out += c;
  }
  return out;
}

// What the attribute list says of a field besides its doc: "(float32, [..., 3])".
std::string field_summary(const Field& f) {
  std::vector<std::string> parts;
  if (f.kind == FieldKind::TensorClass) parts.push_back(f.type_name);
  if (f.kind == FieldKind::NonTensor) parts.push_back(value_type_spelling(f.value_type, f.element_type));
  if (f.kind == FieldKind::NonTensorStack) parts.push_back("NonTensorStack<" + value_type_spelling(f.value_type, f.element_type) + ">");
  if (f.kind == FieldKind::Tensor) {
    if (f.dtype) parts.push_back(*f.dtype);
    if (f.shape) {
      std::vector<std::string> tokens;
      for (const auto& t : *f.shape) tokens.push_back(t.text);
      parts.push_back(fmt::format("[{}]", fmt::join(tokens, ", ")));
    }
  }
  if (f.optional) parts.push_back("optional");
  if (f.unbatched) parts.push_back("unbatched");
  return parts.empty() ? std::string() : fmt::format("({})", fmt::join(parts, ", "));
}

}  // namespace

std::vector<std::string> split_module(const std::string& module) {
  std::vector<std::string> parts;
  std::size_t start = 0;
  while (true) {
    const auto dot = module.find('.', start);
    parts.push_back(module.substr(start, dot == std::string::npos ? std::string::npos : dot - start));
    if (dot == std::string::npos) return parts;
    start = dot + 1;
  }
}

std::string checked_python_module(const Schema& s) {
  const std::string module = python_module_of(s);
  const SourceLoc where = s.ns_loc.file.empty() ? SourceLoc{s.file, 0, 0} : s.ns_loc;
  if (module.empty())
    throw Error(where, "a Python module needs a name: give the schema a python_module or a namespace");
  for (const auto& part : split_module(module)) {
    if (!is_identifier(part) || is_python_keyword(part))
      throw Error(where, fmt::format("'{}' is not a Python module name (dotted identifiers, no keywords)", module));
  }
  return module;
}

// Field names need no check here: the @tensorclass form declares a field
// named like a Python keyword in its decorator, the TypedTensorDict form
// refuses one, and the validator refused the rest.
void check_python_class_names(const Schema& s) {
  std::vector<Diagnostic> errors;
  for (const Class& c : s.classes) {
    if (is_python_keyword(c.name))
      errors.push_back({c.loc, Severity::Error, fmt::format("class name '{}' is a Python keyword", c.name)});
  }
  if (!errors.empty()) throw Error(std::move(errors));
}

std::string python_tuple(const std::vector<std::string>& items) {
  if (items.size() == 1) return "(" + items[0] + ",)";
  return fmt::format("({})", fmt::join(items, ", "));
}

std::string python_annotation(const Field& f) {
  std::string type;
  switch (f.kind) {
    case FieldKind::Tensor: type = "_torch.Tensor"; break;
    case FieldKind::TensorClass: type = type_alias(f.type_name); break;
    case FieldKind::NonTensor:
      // A tuple: tensordict would take a list as a batch of values, one per
      // element along the first batch dim, where a tuple stays one value.
      return f.value_type == ValueType::List ? "_Tuple[" + type_alias(scalar_python_type(f.element_type)) + ", ...]"
                                             : type_alias(scalar_python_type(f.value_type));
    case FieldKind::NonTensorStack:
      // A plain annotation: tensordict keeps one value per element when
      // instances with different values are stacked or written at an index.
      return type_alias(scalar_python_type(f.value_type));
  }
  return f.optional ? "_Optional[" + type + "]" : type;
}

std::string python_default(const Field& f) {
  if (f.kind != FieldKind::NonTensor && f.kind != FieldKind::NonTensorStack) return f.optional ? "None" : "";
  if (f.value_type == ValueType::List) {
    std::vector<std::string> items;
    for (const auto& i : f.default_items) items.push_back(scalar_python_value(f.element_type, i));
    return python_tuple(items);
  }
  return f.default_value ? scalar_python_value(f.value_type, *f.default_value) : zero_value(f.value_type);
}

std::string python_contract_row(const Field& f) {
  const char* kind = f.kind == FieldKind::Tensor            ? "tensor"
                     : f.kind == FieldKind::TensorClass     ? "class"
                     : f.kind == FieldKind::NonTensorStack  ? "stack"
                                                            : "value";
  std::string dims = "None";
  if (f.kind == FieldKind::Tensor && f.shape) {
    std::vector<std::string> items;
    for (const Dim& d : f.dims) {
      if (d.kind == DimKind::Fixed) items.push_back(std::to_string(d.size));
      if (d.kind == DimKind::Symbol) items.push_back(python_string_literal(d.symbol));
    }
    dims = python_tuple(items);
  }
  const std::string dtype = f.kind == FieldKind::Tensor && f.dtype ? python_string_literal(*f.dtype) : "None";
  return fmt::format("{}, \"{}\", {}, {}, {}{}", python_string_literal(f.name), kind, dtype, dims,
                     python_bool(f.optional), f.unbatched ? ", unbatched=True" : "");
}

std::string python_batch_names(const Class& c) {
  if (!c.batch_names) return "None";
  std::vector<std::string> names;
  for (const auto& b : *c.batch_names) names.push_back(python_string_literal(b));
  return python_tuple(names);
}

std::string python_docstring(const Schema& s, const Class& c) {
  std::vector<std::string> lines = doc_lines(c.doc);
  if (lines.empty())
    lines.push_back(fmt::format("{}, from {}.", c.name, printable(std::filesystem::path(s.file).filename().string())));
  if (!c.fields.empty()) {
    lines.emplace_back();
    lines.emplace_back("Attributes:");
    for (const Field& f : c.fields) {
      std::vector<std::string> doc = doc_lines(f.doc);
      const std::string summary = field_summary(f);
      std::string first = "    " + f.name + ":";
      if (!doc.empty()) first += " " + doc.front();
      if (!summary.empty()) (doc.size() > 1 ? doc.back() : first) += " " + summary;
      lines.push_back(first);
      for (std::size_t i = 1; i < doc.size(); ++i) lines.push_back("        " + doc[i]);
    }
  }
  std::string out = "    \"\"\"";
  for (std::size_t i = 0; i < lines.size(); ++i) {
    if (i) out += lines[i].empty() ? "\n" : "\n    ";
    out += docstring_text(lines[i]);
  }
  if (lines.size() > 1) out += "\n    ";
  return out + "\"\"\"";
}

}  // namespace tcgen
