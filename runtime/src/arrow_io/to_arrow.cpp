// tensordict's to_arrow (tensordict/_arrow.py): one column per entry.
#include <ATen/ATen.h>
#include <arrow/api.h>
#include <fmt/format.h>

#include "arrow_io/arrow_common.h"
#include "arrow_io/json_arrays.h"
#include "arrow_io/non_tensor_rows.h"
#include "arrow_io/tensor_arrays.h"
#include "core/format.h"
#include "tensordict/arrow.h"
#include "tensordict/errors.h"
#include "tensordict/non_tensor.h"

namespace tensordict {

namespace {

constexpr std::string_view kOp = "to_arrow";

std::shared_ptr<::arrow::Array> entry_array(const Value& value, const NestedKey& key, at::IntArrayRef batch);

// A nested tensordict as a struct array, one field per entry.
std::shared_ptr<::arrow::Array> struct_array(const TensorDict& level, const NestedKey& key) {
  ::arrow::ArrayVector children;
  std::vector<std::string> names;
  for (const auto& [child_key, child] : level.items()) {
    children.push_back(entry_array(child, key + child_key, level.batch_size()));
    names.push_back(child_key.front());
  }
  if (children.empty()) {
    return std::make_shared<::arrow::StructArray>(::arrow::struct_({}), level.batch_size()[0], ::arrow::ArrayVector{});
  }
  return detail::arrow_io::value_or_throw(::arrow::StructArray::Make(children, names),
                                          fmt::format("to_arrow: key {}", key.repr()));
}

std::shared_ptr<::arrow::Array> entry_array(const Value& value, const NestedKey& key, at::IntArrayRef batch) {
  if (value.is_non_tensor()) {
    return detail::arrow_io::json_array(detail::arrow_io::non_tensor_rows(value.non_tensor(), batch), key, kOp);
  }
  if (value.is_tensordict()) return struct_array(value.tensordict(), key);
  return detail::arrow_io::tensor_array(value.tensor(), key, kOp);
}

}  // namespace

std::shared_ptr<::arrow::Table> to_arrow(const TensorDict& td) {
  if (td.batch_dims() != 1) {
    throw ValueError(fmt::format("to_arrow needs a tensordict with one batch dimension, got the batch size "
                                 "torch.Size({}). Call td.reshape(-1) first to flatten it.",
                                 shape_string(td.batch_size())));
  }
  ::arrow::FieldVector fields;
  ::arrow::ArrayVector columns;
  for (const auto& [key, value] : td.items()) {
    columns.push_back(entry_array(value, key, td.batch_size()));
    fields.push_back(::arrow::field(key.front(), columns.back()->type()));
  }
  const int64_t rows = columns.empty() ? 0 : td.batch_size()[0];
  return ::arrow::Table::Make(::arrow::schema(fields), columns, rows);
}

}  // namespace tensordict
