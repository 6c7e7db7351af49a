#include "arrow_io/array_tensors.h"

#include <ATen/ATen.h>
#include <arrow/array.h>
#include <arrow/array/concatenate.h>
#include <arrow/device.h>
#include <arrow/extension/fixed_shape_tensor.h>
#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>

#include <limits>
#include <vector>

#include "arrow_io/arrow_common.h"
#include "arrow_io/arrow_dtypes.h"
#include "tensordict/errors.h"

namespace tensordict::detail::arrow_io {

namespace {

// The values of a primitive array as a 1-D tensor, its nulls ignored (the
// caller fills them). Numbers view Arrow's buffer unless `copy` asks for a
// copy (nullopt: a copy of an immutable buffer, which libtorch could not
// protect from writes); booleans are unpacked from their bits.
at::Tensor primitive_tensor(const ::arrow::Array& array, std::optional<bool> copy, const NestedKey& key) {
  const int64_t rows = array.length();
  const at::ScalarType dtype = *tensor_dtype(*array.type(), key);
  if (dtype == at::kBool) {
    at::Tensor out = at::empty({rows}, at::kBool);
    bool* dst = out.data_ptr<bool>();
    const auto& bits = static_cast<const ::arrow::BooleanArray&>(array);
    for (int64_t i = 0; i < rows; ++i) dst[i] = bits.Value(i);
    return out;
  }
  std::shared_ptr<::arrow::Buffer> buffer = array.data()->buffers[1];
  if (rows == 0 || buffer == nullptr) return at::empty({rows}, dtype);
  if (!buffer->is_cpu()) {
    // A device buffer (Arrow's CUDA memory): read through a CPU copy.
    buffer = value_or_throw(::arrow::Buffer::ViewOrCopy(buffer, ::arrow::default_cpu_memory_manager()),
                            fmt::format("from_arrow: column {}", tuple_repr(key)));
  }
  auto* start = const_cast<uint8_t*>(buffer->data()) + array.offset() * static_cast<int64_t>(c10::elementSize(dtype));
  // The tensor keeps the buffer (and so the table's memory) alive.
  at::Tensor view = at::from_blob(start, {rows}, [buffer](void*) {}, at::TensorOptions().dtype(dtype));
  return copy.value_or(!buffer->is_mutable()) ? view.clone() : view;
}

// NaN (floating point) or 0 at the null rows of `array` in `tensor`, a copy.
at::Tensor fill_nulls(const at::Tensor& tensor, const ::arrow::Array& array) {
  std::vector<int64_t> shape(static_cast<std::size_t>(tensor.dim()), 1);
  shape[0] = array.length();
  const at::Tensor nulls = validity(array).logical_not().view(shape);
  const at::ScalarType dtype = tensor.scalar_type();
  // libtorch has no masked_fill for uint16/32/64: fill a signed view of the
  // same size, in which 0 has the same bits.
  at::ScalarType fill_as = dtype;
  switch (c10::elementSize(dtype)) {
    case 2:
      if (!at::isFloatingType(dtype)) fill_as = at::kShort;
      break;
    case 4:
      if (!at::isFloatingType(dtype)) fill_as = at::kInt;
      break;
    case 8:
      if (!at::isFloatingType(dtype)) fill_as = at::kLong;
      break;
    default:
      break;
  }
  const at::Scalar value = at::isFloatingType(dtype) ? at::Scalar(std::numeric_limits<double>::quiet_NaN()) : 0;
  return tensor.view(fill_as).masked_fill(nulls, value).view(dtype);
}

// The rows of a list or large_list array: where each starts in `values` and
// how long it is. A null row is empty, and the values under it are dropped
// (tensordict fills null rows with [] first).
struct JaggedRows {
  std::shared_ptr<::arrow::Array> values;
  std::vector<int64_t> starts, lengths;
};

template <class ListArray>
JaggedRows jagged_rows(const ListArray& list, const NestedKey& key) {
  const int64_t rows = list.length();
  JaggedRows out;
  out.starts.resize(static_cast<std::size_t>(rows));
  out.lengths.resize(static_cast<std::size_t>(rows));
  if (rows == 0) {
    out.values = value_or_throw(::arrow::MakeEmptyArray(list.value_type()), "from_arrow");
    return out;
  }
  if (list.null_count() == 0) {
    const int64_t first = list.value_offset(0);
    out.values = list.values()->Slice(first, list.value_offset(rows) - first);
    for (int64_t i = 0; i < rows; ++i) {
      out.starts[i] = list.value_offset(i) - first;
      out.lengths[i] = list.value_length(i);
    }
    return out;
  }
  ::arrow::ArrayVector kept;
  int64_t at = 0;
  for (int64_t i = 0; i < rows; ++i) {
    out.starts[i] = at;
    out.lengths[i] = list.IsNull(i) ? 0 : list.value_length(i);
    if (out.lengths[i] == 0) continue;
    kept.push_back(list.values()->Slice(list.value_offset(i), out.lengths[i]));
    at += out.lengths[i];
  }
  out.values = kept.empty() ? value_or_throw(::arrow::MakeEmptyArray(list.value_type()), "from_arrow")
                            : value_or_throw(::arrow::Concatenate(kept), fmt::format("from_arrow: column {}", key.repr()));
  return out;
}

// An arrow.fixed_shape_tensor type whose shape and permutation fit its
// storage (a table from elsewhere may say anything): else a ValueError.
void check_tensor_type(const ::arrow::extension::FixedShapeTensorType& type, const NestedKey& key) {
  const auto& shape = type.shape();
  const auto& permutation = type.permutation();
  int64_t size = 1;
  bool fits = true;
  for (int64_t s : shape) {
    fits = fits && s >= 0 && (s == 0 || size <= std::numeric_limits<int32_t>::max() / s);
    if (fits) size *= s;
  }
  const auto* storage = dynamic_cast<const ::arrow::FixedSizeListType*>(type.storage_type().get());
  fits = fits && storage != nullptr && storage->list_size() == size;
  std::vector<int64_t> sorted(permutation.begin(), permutation.end());
  std::sort(sorted.begin(), sorted.end());
  for (std::size_t i = 0; i < sorted.size(); ++i) fits = fits && sorted[i] == static_cast<int64_t>(i);
  fits = fits && (permutation.empty() || permutation.size() == shape.size());
  if (!fits) {
    throw ValueError(fmt::format("The Arrow column {} is an arrow.fixed_shape_tensor whose shape [{}] and permutation "
                                 "[{}] do not fit its storage {}",
                                 tuple_repr(key), fmt::join(shape, ", "), fmt::join(permutation, ", "),
                                 type.storage_type()->ToString()));
  }
}

}  // namespace

void check_nulls(const ::arrow::Array& array, ArrowNulls nulls, const NestedKey& key) {
  if (array.null_count() && nulls == ArrowNulls::Raise) {
    throw ValueError(fmt::format("The Arrow column {} has {} null value(s). Pass nulls='fill' to fill them, or "
                                 "nulls='mask' to also get a mask entry.",
                                 tuple_repr(key), array.null_count()));
  }
}

at::Tensor validity(const ::arrow::Array& array) {
  const int64_t rows = array.length();
  at::Tensor out = at::empty({rows}, at::kBool);
  bool* dst = out.data_ptr<bool>();
  for (int64_t i = 0; i < rows; ++i) dst[i] = array.IsValid(i);
  return out;
}

at::Tensor dense_tensor(const ::arrow::Array& array, const ColumnRules& rules, const NestedKey& key) {
  check_nulls(array, rules.nulls, key);
  const int64_t rows = array.length();
  if (const auto* type = fixed_shape_tensor(*array.type())) {
    // shape() is the physical shape; permutation() the order of the logical dims.
    const auto& storage = static_cast<const ::arrow::ExtensionArray&>(array).storage();
    check_tensor_type(*type, key);
    std::vector<int64_t> shape{rows};
    shape.insert(shape.end(), type->shape().begin(), type->shape().end());
    at::Tensor tensor = dense_tensor(*storage, rules, key).view(shape);
    if (type->permutation().empty()) return tensor;
    std::vector<int64_t> dims{0};
    for (int64_t d : type->permutation()) dims.push_back(1 + d);
    return tensor.permute(dims);
  }
  at::Tensor tensor;
  if (array.type_id() == ::arrow::Type::FIXED_SIZE_LIST) {
    // values() is the whole child: this array's offset and nulls are not applied to it.
    const auto& list = static_cast<const ::arrow::FixedSizeListArray&>(array);
    const int64_t size = list.list_type()->list_size();
    const at::Tensor values = dense_tensor(*list.values()->Slice(array.offset() * size, rows * size), rules, key);
    std::vector<int64_t> shape{rows, size};
    shape.insert(shape.end(), values.sizes().begin() + 1, values.sizes().end());
    tensor = values.reshape(shape);
  } else {
    tensor = primitive_tensor(array, rules.copy, key);
  }
  return array.null_count() ? fill_nulls(tensor, array) : tensor;
}

at::Tensor jagged_tensor(const ::arrow::Array& array, const ColumnRules& rules, const NestedKey& key) {
  const JaggedRows rows = array.type_id() == ::arrow::Type::LARGE_LIST
                              ? jagged_rows(static_cast<const ::arrow::LargeListArray&>(array), key)
                              : jagged_rows(static_cast<const ::arrow::ListArray&>(array), key);
  const at::Tensor values = dense_tensor(*rows.values, rules, key);
  std::vector<at::Tensor> components;
  components.reserve(rows.starts.size());
  for (std::size_t i = 0; i < rows.starts.size(); ++i) components.push_back(values.narrow(0, rows.starts[i], rows.lengths[i]));
  return at::_nested_tensor_from_tensor_list(components);
}

}  // namespace tensordict::detail::arrow_io
