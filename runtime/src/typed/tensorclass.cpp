// The non-template half of TensorClass<Derived>: validation, errors, repr.
#include "tensordict/detail/tensorclass_support.h"

#include <ATen/ATen.h>
#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <cmath>
#include <stdexcept>

#include "core/unbatched.h"
#include "tensordict/dtype.h"
#include "tensordict/errors.h"

namespace tensordict::detail {

std::string FieldPath::str() const { return parent ? fmt::format("{}.{}", parent->str(), name) : std::string(name); }

// A broken contract (dtype, declared dims, symbolic dims, the number of batch
// dims) is a ValueError, as the Python class generated from the same schema
// raises in __post_init__. A leaf that does not start with the batch size,
// and a nested class whose batch size does not start with its parent's, stay
// RuntimeErrors: tensordict itself raises those before __post_init__ runs.
void validate_tensor_field(const FieldPath& path, const schema::FieldInfo& field, const at::Tensor& tensor,
                           at::IntArrayRef batch_size, SymbolTable& symbols) {
  if (!tensor.defined()) {
    if (field.optional) return;
    throw ValueError(fmt::format("{}: required field is not set", path.str()));
  }
  if (tensor.is_nested()) {
    // Declared dims need a size per dim, which a ragged dim does not have.
    throw ValueError(fmt::format(
        "{}: a nested (jagged) tensor cannot be a tensorclass field; pad it (at::nested_to_padded_tensor) or keep it "
        "in a TensorDict",
        path.str()));
  }
  if (!field.dtype.empty()) {
    const std::string_view got = dtype_name(tensor.scalar_type());
    if (got != field.dtype)
      throw ValueError(fmt::format("{}: dtype must be {} (got {})", path.str(), field.dtype, got));
  }
  const auto sizes = tensor.sizes();
  // An unbatched field has no batch dims: its declared dims are all of it.
  if (field.unbatched) batch_size = {};
  const int64_t nb = static_cast<int64_t>(batch_size.size());
  if (static_cast<int64_t>(sizes.size()) < nb || sizes.slice(0, nb) != batch_size) {
    throw RuntimeError(fmt::format("{}: shape {} does not start with the batch size {}", path.str(), shape_string(sizes),
                                         shape_string(batch_size)));
  }
  if (!field.has_shape) return;
  std::size_t event = 0;
  for (const auto& d : field.shape) event += d.kind == schema::DimKind::Batch ? 0 : 1;
  if (sizes.size() != nb + event) {
    throw ValueError(fmt::format("{}: expected {} dims ({} batch + {} declared) but got shape {}", path.str(), nb + event,
                                 nb, event, shape_string(sizes)));
  }
  int64_t dim = nb;
  for (const auto& d : field.shape) {
    if (d.kind == schema::DimKind::Batch) continue;
    const int64_t got = sizes[dim];
    if (d.kind == schema::DimKind::Fixed && got != d.size) {
      throw ValueError(fmt::format("{}: dim {} must be {} (got {})", path.str(), dim, d.size, got));
    }
    if (d.kind == schema::DimKind::Symbol) {
      auto it = std::find_if(symbols.begin(), symbols.end(), [&](const SymbolBinding& b) { return b.symbol == d.symbol; });
      if (it == symbols.end()) {
        symbols.push_back({d.symbol, got, std::string(field.name)});
      } else if (it->size != got) {
        throw ValueError(fmt::format("{}: symbolic dim {} is {} in {} but {} in {} (dim {})", path.str(), d.symbol,
                                     it->size, it->field, got, field.name, dim));
      }
    }
    ++dim;
  }
}

const at::Tensor& first_unbatched(const std::vector<at::Tensor>& tensors) {
  std::vector<Value> values;
  values.reserve(tensors.size());
  for (const auto& t : tensors) values.emplace_back(UnbatchedTensor(t));
  return tensors[&detail::first_unbatched(values) - values.data()];
}

void validate_batch_dims(const schema::ClassInfo& info, const FieldPath& path, at::IntArrayRef batch_size) {
  if (info.fixed_batch_dims && batch_size.size() != info.batch_names.size()) {
    throw ValueError(fmt::format("{}: batch size {} must have {} dims ({})", path.str(), shape_string(batch_size),
                                 info.batch_names.size(), fmt::join(info.batch_names, ", ")));
  }
}

void validate_nested_batch(const FieldPath& path, at::IntArrayRef nested, at::IntArrayRef parent) {
  if (nested.size() < parent.size() || nested.slice(0, parent.size()) != parent) {
    throw RuntimeError(fmt::format("{}: batch size {} does not start with the parent's batch size {}", path.str(),
                                         shape_string(nested), shape_string(parent)));
  }
}

void validate_stack_field(const FieldPath& path, at::IntArrayRef element_shape, at::IntArrayRef batch_size) {
  if (element_shape != batch_size) {
    throw ValueError(fmt::format("{}: NonTensorStack holds values over batch size {}, expected the batch size {}",
                                 path.str(), shape_string(element_shape), shape_string(batch_size)));
  }
}

void throw_locked(std::string_view class_name, std::string_view key) {
  throw RuntimeError(fmt::format(
      "Cannot modify locked TensorDict. For in-place modification, consider using the `set_()` method and make sure "
      "the key is present. ({}.{})",
      class_name, key));
}

void throw_no_field(std::string_view class_name, std::string_view key) {
  throw KeyError(fmt::format("{} has no field '{}'", class_name, key));
}

void throw_not_tensor(std::string_view class_name, std::string_view key, std::string_view what) {
  throw TypeError(fmt::format("{}.{} is {}", class_name, key, what));
}

void throw_non_tensor_mismatch(std::string_view op, std::string_view path, const std::string& first,
                               const std::string& other, std::size_t index) {
  throw RuntimeError(fmt::format("{}: non-tensor field {} differs: {} in element 0 but {} in element {}", op, path,
                                       first, other, index));
}

void throw_per_element_data(std::string_view path, const std::string& held, const std::string& written) {
  throw ValueError(fmt::format("index_put_: non-tensor field {} holds {} for the whole batch and cannot take {} at an "
                               "index (one value per object; tensordict would store one per element)",
                               path, held, written));
}

void throw_feature_shape_mismatch(std::string_view op, std::string_view path, at::IntArrayRef first,
                                  at::IntArrayRef other, std::size_t index) {
  throw RuntimeError(fmt::format("{}: tensor field {} has feature shape {} in element 0 but {} in element {} "
                                 "(lazy_stack keeps objects whose shapes differ)",
                                 op, path, shape_string(first), shape_string(other), index));
}

void throw_optional_mismatch(std::string_view op, std::string_view path, std::size_t index) {
  throw RuntimeError(
      fmt::format("{}: optional field {} is set in element 0 but not in element {} (or the reverse)", op, path, index));
}

void check_declared_dtype(std::string_view op, const FieldPath& path, const schema::FieldInfo& field, at::ScalarType got) {
  const std::string_view name = dtype_name(got);
  if (name == field.dtype) return;
  throw ValueError(
      fmt::format("{}: {} would be {}, but the schema declares {} (to_tensordict() gives a TensorDict "
                  "free of the schema's dtypes)",
                  op, path.str(), name, field.dtype));
}

void throw_h5_non_tensor(std::string_view class_name, const schema::FieldInfo& field, const std::string& value) {
  throw ValueError(
      fmt::format("to_h5: {}.{} holds {}, not its default: h5 stores string non-tensor data only "
                  "(memmap() stores every field)",
                  class_name, field.name, value));
}

void throw_empty_list(std::string_view op, std::string_view class_name) {
  throw RuntimeError(fmt::format("{}: expected a non-empty list of {}", op, class_name));
}


std::string tensorclass_repr(std::string_view class_name, std::vector<std::string> tensor_fields,
                             const std::vector<std::string>& non_tensor_fields, at::IntArrayRef batch_size,
                             const std::optional<at::Device>& device, bool is_shared, const PrintOptions& options) {
  if (options.sort_keys.is_alphabetical()) {
    std::sort(tensor_fields.begin(), tensor_fields.end());
  } else if (options.sort_keys.less()) {
    std::stable_sort(tensor_fields.begin(), tensor_fields.end(), options.sort_keys.less());
  }
  std::vector<std::string> parts;
  if (!tensor_fields.empty()) parts.push_back(indent(fmt::format("{}", fmt::join(tensor_fields, ",\n")), 4));
  if (!non_tensor_fields.empty()) parts.push_back(indent(fmt::format("{}", fmt::join(non_tensor_fields, ",\n")), 4));
  for (const auto& part : header_parts(batch_size, device, is_shared, options)) parts.push_back(indent(part, 4));
  return fmt::format("{}({})", class_name, parts.empty() ? std::string() : fmt::format("\n{}", fmt::join(parts, ",\n")));
}

std::vector<int64_t> with_features(at::IntArrayRef batch, const at::Tensor& t, int64_t skip) {
  std::vector<int64_t> shape(batch.begin(), batch.end());
  const auto feature = t.sizes().slice(skip);
  shape.insert(shape.end(), feature.begin(), feature.end());
  return shape;
}

}  // namespace tensordict::detail
