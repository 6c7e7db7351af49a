#include "tcgen/ir.h"

namespace tcgen {

const char* to_string(FieldKind k) {
  switch (k) {
    case FieldKind::Tensor: return "Tensor";
    case FieldKind::TensorClass: return "TensorClass";
    case FieldKind::NonTensor: return "NonTensor";
    case FieldKind::NonTensorStack: return "NonTensorStack";
  }
  return "?";
}

const char* to_string(DimKind k) {
  switch (k) {
    case DimKind::Batch: return "Batch";
    case DimKind::Fixed: return "Fixed";
    case DimKind::Symbol: return "Symbol";
  }
  return "?";
}

const char* to_string(ValueType v) {
  switch (v) {
    case ValueType::None: return "None";
    case ValueType::String: return "String";
    case ValueType::Int: return "Int";
    case ValueType::Float: return "Float";
    case ValueType::Bool: return "Bool";
    case ValueType::List: return "List";
  }
  return "?";
}

const char* to_string(PythonForm f) {
  switch (f) {
    case PythonForm::Tensorclass: return "tensorclass";
    case PythonForm::TypedTensorDict: return "typed_tensordict";
    case PythonForm::Both: return "both";
  }
  return "?";
}

std::optional<PythonForm> parse_python_form(std::string_view text) {
  for (const PythonForm f : {PythonForm::Tensorclass, PythonForm::TypedTensorDict, PythonForm::Both})
    if (text == to_string(f)) return f;
  return std::nullopt;
}

std::string unknown_python_form(std::string_view text) {
  return "unknown python_form '" + std::string(text) + "'; expected tensorclass, typed_tensordict or both";
}

std::string python_module_of(const Schema& s) {
  if (s.python_module) return *s.python_module;
  std::string out;
  for (std::size_t i = 0; i < s.ns.size(); ++i) {
    if (s.ns.compare(i, 2, "::") == 0) {
      out += '.';
      ++i;
    } else {
      out += s.ns[i];
    }
  }
  return out;
}

}  // namespace tcgen
