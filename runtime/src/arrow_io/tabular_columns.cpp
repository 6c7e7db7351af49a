#include "arrow_io/tabular_columns.h"

#include <nlohmann/json.hpp>

#include <ATen/ATen.h>
#include <arrow/api.h>
#include <arrow/extension/fixed_shape_tensor.h>

#include <limits>

#include "arrow_io/array_tensors.h"
#include "arrow_io/array_values.h"
#include "arrow_io/arrow_dtypes.h"

namespace tensordict::detail::arrow_io {

namespace {

// The shape of nested lists of numbers and bools ({} for one), nullopt when
// the lists are ragged or hold anything else.
std::optional<std::vector<int64_t>> number_shape(const Json& value) {
  if (value.is_boolean() || value.is_number()) return std::vector<int64_t>{};
  if (!value.is_array()) return std::nullopt;
  if (value.empty()) return std::vector<int64_t>{0};
  auto inner = number_shape(value.front());
  if (!inner) return std::nullopt;
  for (const Json& element : value) {
    if (number_shape(element) != inner) return std::nullopt;
  }
  inner->insert(inner->begin(), static_cast<int64_t>(value.size()));
  return inner;
}

// The leaves of nested lists, in row-major order.
void leaves(const Json& value, std::vector<const Json*>& out) {
  if (!value.is_array()) {
    out.push_back(&value);
    return;
  }
  for (const Json& element : value) leaves(element, out);
}

// NumPy's datetime64[ns] of a timestamp column as int64 (a null: NaT).
at::Tensor nanoseconds(const ::arrow::TimestampArray& column) {
  int64_t factor = 1;
  switch (static_cast<const ::arrow::TimestampType&>(*column.type()).unit()) {
    case ::arrow::TimeUnit::SECOND:
      factor = 1000000000;
      break;
    case ::arrow::TimeUnit::MILLI:
      factor = 1000000;
      break;
    case ::arrow::TimeUnit::MICRO:
      factor = 1000;
      break;
    case ::arrow::TimeUnit::NANO:
      break;
  }
  at::Tensor out = at::empty({column.length()}, at::kLong);
  int64_t* dst = out.data_ptr<int64_t>();
  for (int64_t i = 0; i < column.length(); ++i) {
    dst[i] = column.IsNull(i) ? std::numeric_limits<int64_t>::min() : column.Value(i) * factor;
  }
  return out;
}

// Whether an arrow.fixed_shape_tensor column NumPy reads as one array: of
// numbers, with no null row and no null value.
bool numeric_tensor_column(const ::arrow::Array& column) {
  const auto* type = fixed_shape_tensor(*column.type());
  if (type == nullptr || column.null_count()) return false;
  const auto value_id = type->value_type()->id();
  if (!::arrow::is_integer(value_id) && !::arrow::is_floating(value_id)) return false;
  const auto& storage = static_cast<const ::arrow::FixedSizeListArray&>(
      *static_cast<const ::arrow::ExtensionArray&>(column).storage());
  return storage.null_count() == 0 && storage.values()->null_count() == 0;
}

at::Tensor cast(at::Tensor tensor, std::optional<at::ScalarType> dtype) {
  return dtype ? tensor.to(*dtype) : tensor;
}

}  // namespace

Value list_entry(const std::vector<Json>& values) {
  if (values.empty()) return at::empty({0}, at::kFloat);  // torch.tensor([])
  std::optional<std::vector<int64_t>> shape = number_shape(values.front());
  for (const Json& row : values) {
    if (!shape) break;
    if (number_shape(row) != shape) shape.reset();
  }
  if (!shape) return NonTensorData::stack(values, {static_cast<int64_t>(values.size())});
  std::vector<const Json*> flat;
  for (const Json& row : values) leaves(row, flat);
  bool any_float = false, any_int = false;
  for (const Json* leaf : flat) {
    any_float = any_float || leaf->is_number_float();
    any_int = any_int || leaf->is_number_integer();
  }
  // torch.tensor: float32 (the default dtype) for floats, int64 for integers
  // (and bools among them), bool for bools alone, float32 for no value.
  const at::ScalarType dtype = any_float || flat.empty() ? at::kFloat : any_int ? at::kLong : at::kBool;
  shape->insert(shape->begin(), static_cast<int64_t>(values.size()));
  at::Tensor out = at::empty(*shape, at::kDouble);
  double* dst = out.data_ptr<double>();
  for (const Json* leaf : flat) *dst++ = leaf->is_boolean() ? double(leaf->get<bool>()) : leaf->get<double>();
  if (dtype == at::kLong) {
    // Through int64 directly: a double cannot hold every int64.
    at::Tensor ints = at::empty(*shape, at::kLong);
    int64_t* out_int = ints.data_ptr<int64_t>();
    for (const Json* leaf : flat) *out_int++ = leaf->is_boolean() ? int64_t(leaf->get<bool>()) : leaf->get<int64_t>();
    return ints;
  }
  return out.to(dtype);
}

Value tabular_entry(const ::arrow::Array& column, const NestedKey& key, std::optional<at::ScalarType> dtype) {
  const auto id = column.type_id();
  if (::arrow::is_integer(id) || ::arrow::is_floating(id)) {
    if (column.null_count() == 0) return cast(dense_tensor(column, {.copy = true}, key), dtype);
    // NumPy holds integers with nulls as float64 with NaN.
    at::Tensor filled = dense_tensor(column, {.copy = true, .nulls = ArrowNulls::Fill}, key);
    if (::arrow::is_integer(id)) {
      filled = filled.to(at::kDouble).masked_fill(validity(column).logical_not(), std::numeric_limits<double>::quiet_NaN());
    }
    return cast(filled, dtype);
  }
  if (id == ::arrow::Type::BOOL) {
    if (column.null_count() == 0) return cast(dense_tensor(column, {}, key), dtype);
    return NonTensorData::stack(row_values(column, key), {column.length()});
  }
  if (id == ::arrow::Type::TIMESTAMP) return nanoseconds(static_cast<const ::arrow::TimestampArray&>(column));
  if (numeric_tensor_column(column)) return cast(dense_tensor(column, {.copy = true}, key).contiguous(), dtype);
  return list_entry(row_values(column, key));
}

}  // namespace tensordict::detail::arrow_io
