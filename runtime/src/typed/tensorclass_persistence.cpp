// The non-template half of TensorClass<Derived>'s persistence: class checks,
// error locations and h5 batch inference.
#include "tensordict/tensorclass_persistence.h"

#include <ATen/ATen.h>
#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <exception>
#include <filesystem>
#include <optional>
#include <stdexcept>

#include "tensordict/errors.h"

namespace tensordict::detail {

namespace {

// "<class 'a.b.Name'>" -> "Name"; a bare name stays as it is.
std::string bare_name(std::string type) {
  if (type.starts_with("<class '") && type.ends_with("'>")) type = type.substr(8, type.size() - 10);
  if (auto dot = type.rfind('.'); dot != std::string::npos) type = type.substr(dot + 1);
  return type;
}

std::string_view value_type_name(schema::ValueType t) {
  switch (t) {
    case schema::ValueType::String: return "string";
    case schema::ValueType::Int: return "int";
    case schema::ValueType::Float: return "float";
    case schema::ValueType::Bool: return "bool";
    case schema::ValueType::List: return "list";
    case schema::ValueType::None: break;
  }
  return "value";
}

}  // namespace

void check_memmap_class(const Json& meta, const schema::ClassInfo& info, const std::string& dir) {
  const std::string file = (std::filesystem::path(dir) / "meta.json").string();
  if (!meta.contains("_type") || !meta["_type"].is_string()) {
    throw RuntimeError(fmt::format("malformed {}: no \"_type\" string naming the class (expected {})", file,
                                         info.python_type));
  }
  const std::string type = meta["_type"].get<std::string>();
  if (type == info.python_type || bare_name(type) == info.name) return;
  throw RuntimeError(fmt::format("{} holds a {}, not a {} ({})", file, type, info.cpp_name, info.python_type));
}

std::vector<int64_t> infer_batch_size(const schema::ClassInfo& info, const TensorDict& td,
                                      std::optional<at::IntArrayRef> parent) {
  std::optional<std::size_t> dims;
  if (info.fixed_batch_dims) dims = info.batch_names.size();
  std::optional<at::Tensor> witness;
  for (const auto& field : info.fields) {
    if (field.kind != schema::FieldKind::Tensor) continue;
    const std::string name(field.name);
    auto value = td.get_value(name);
    if (!value || !value->is_tensor()) continue;
    const at::Tensor& t = value->tensor();
    if (!witness) witness = t;
    if (dims || !field.has_shape) continue;
    std::size_t feature = 0;
    for (const auto& d : field.shape) feature += d.kind == schema::DimKind::Batch ? 0 : 1;
    // A tensor with too few dims fails validation later, with the field's name.
    if (static_cast<std::size_t>(t.dim()) >= feature) {
      dims = t.dim() - feature;
      witness = t;
    }
  }
  if (dims && witness && static_cast<std::size_t>(witness->dim()) >= *dims) {
    return witness->sizes().slice(0, *dims).vec();
  }
  return parent ? parent->vec() : td.batch_size().vec();
}

void throw_bad_non_tensor(const std::string& path, const schema::FieldInfo& field, const Json& got) {
  const std::string expected = field.value_type == schema::ValueType::Int
                                   ? "an int in int64's range"
                                   : fmt::format("a {}", value_type_name(field.value_type));
  throw TypeError(fmt::format("{}: non-tensor field must be {}{}, got {}", path, expected,
                              field.value_type == schema::ValueType::List
                                  ? fmt::format(" of {}", value_type_name(field.element_type))
                                  : std::string(),
                              got.dump()));
}

}  // namespace tensordict::detail
