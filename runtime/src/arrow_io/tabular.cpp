// tensordict's from_parquet and to_parquet (tensordict/_tabular.py): one
// column per leaf, nested keys through a separator.
#include <ATen/ATen.h>
#include <arrow/api.h>
#include <arrow/array/concatenate.h>
#include <fmt/format.h>

#include <utility>
#include <vector>

#include "arrow_io/arrow_common.h"
#include "arrow_io/json_arrays.h"
#include "arrow_io/non_tensor_rows.h"
#include "arrow_io/tabular_columns.h"
#include "arrow_io/tensor_arrays.h"
#include "core/format.h"
#include "tensordict/arrow.h"
#include "tensordict/errors.h"
#include "tensordict/non_tensor.h"

namespace tensordict {

namespace {

using detail::arrow_io::value_or_throw;

constexpr std::string_view kWrite = "to_parquet";

// `name` split on `separator` (Python's str.split: empty parts kept).
std::vector<std::string> split(const std::string& name, const std::string& separator) {
  std::vector<std::string> parts;
  std::size_t start = 0;
  for (std::size_t at; (at = name.find(separator, start)) != std::string::npos; start = at + separator.size()) {
    parts.push_back(name.substr(start, at - start));
  }
  parts.push_back(name.substr(start));
  return parts;
}

// Sets `value` at the column `name` of `out`, nested at the separator as
// tensordict's _unflatten_columns does: a part that is a leaf already cannot
// become a prefix.
void set_column(TensorDict& out, const std::string& name, Value value, const std::optional<std::string>& separator) {
  if (!separator || separator->empty()) {
    out.set(name, std::move(value));
    return;
  }
  const std::vector<std::string> parts = split(name, *separator);
  for (std::size_t depth = 1; depth < parts.size(); ++depth) {
    const NestedKey prefix(std::vector<std::string>(parts.begin(), parts.begin() + static_cast<std::ptrdiff_t>(depth)));
    const auto existing = out.get_value(prefix);
    if (existing && !existing->is_tensordict()) {
      throw ValueError(
          fmt::format("Key conflict: '{}' is both a leaf and a prefix in column names", parts[depth - 1]));
    }
  }
  out.set(NestedKey(parts), std::move(value));
}

// The leaves of `td` as to_pandas lists its columns: nested levels joined
// with the separator, and refused without one.
void flat_columns(const TensorDict& td, const std::optional<std::string>& separator, const std::string& prefix,
                  std::vector<std::pair<std::string, std::pair<Value, std::vector<int64_t>>>>& out) {
  for (const auto& [key, value] : td.items()) {
    const std::string name = prefix + key.front();
    if (value.is_tensordict()) {
      if (!separator) {
        throw ValueError(fmt::format("Nested TensorDict at key '{}' requires a separator parameter to flatten to "
                                     "DataFrame columns. Use to_pandas(separator='.').",
                                     name));
      }
      flat_columns(value.tensordict(), separator, name + *separator, out);
      continue;
    }
    out.emplace_back(name, std::make_pair(value, td.batch_size().vec()));
  }
}

}  // namespace

TensorDict from_parquet(const std::string& path, const FromParquetOptions& options) {
  const bool automatic = options.auto_batch_size || options.batch_dims;
  if (automatic && options.batch_size) {
    throw TypeError("Conflicting batch sizes in from_parquet: batch_size and auto_batch_size cannot be both specified.");
  }
  const auto table = read_parquet_table(path, options.columns);
  std::vector<int64_t> batch_size = options.batch_size.value_or(std::vector<int64_t>{table->num_rows()});
  TensorDict out({}, batch_size, options.device);
  for (int i = 0; i < table->num_columns(); ++i) {
    const std::string& name = table->field(i)->name();
    const auto& chunks = *table->column(i);
    const std::shared_ptr<::arrow::Array> column =
        chunks.num_chunks() == 1 ? chunks.chunk(0)
        : chunks.num_chunks() == 0
            ? value_or_throw(::arrow::MakeEmptyArray(chunks.type()), "from_parquet")
            : value_or_throw(::arrow::Concatenate(chunks.chunks()), fmt::format("from_parquet: column '{}'", name));
    set_column(out, name, detail::arrow_io::tabular_entry(*column, name, options.dtype), options.separator);
  }
  if (automatic) out.auto_batch_size_(options.batch_dims);
  return out;
}

void to_parquet(const TensorDict& td, const std::string& path, const ToParquetOptions& options) {
  std::vector<std::pair<std::string, std::pair<Value, std::vector<int64_t>>>> columns;
  flat_columns(td, options.separator, "", columns);
  ::arrow::FieldVector fields;
  ::arrow::ArrayVector arrays;
  for (const auto& [name, entry] : columns) {
    const auto& [value, batch] = entry;
    std::shared_ptr<::arrow::Array> array;
    if (value.is_tensor()) {
      const at::Tensor& tensor = value.tensor();
      if (tensor.dim() != 1) {
        throw ValueError(fmt::format("Cannot convert tensor with shape torch.Size({}) at key '{}' to a single "
                                     "DataFrame column. Only 1D tensors (matching the batch size) are supported.",
                                     shape_string(detail::leaf_shape(tensor)), name));
      }
      array = detail::arrow_io::primitive_array(tensor, name, kWrite);
    } else {
      if (batch.size() != 1) {
        throw ValueError(fmt::format("Cannot convert the non-tensor entry at key '{}' to a single DataFrame column: "
                                     "its tensordict has the batch size torch.Size({}), not one batch dimension.",
                                     name, shape_string(batch)));
      }
      array = detail::arrow_io::json_array(detail::arrow_io::non_tensor_rows(value.non_tensor(), batch), name, kWrite);
    }
    if (!arrays.empty() && array->length() != arrays.front()->length()) {
      throw ValueError(fmt::format("to_parquet: the column '{}' has {} rows, the column '{}' {}", name,
                                   array->length(), fields.front()->name(), arrays.front()->length()));
    }
    fields.push_back(::arrow::field(name, array->type()));
    arrays.push_back(std::move(array));
  }
  const int64_t rows = arrays.empty() ? 0 : arrays.front()->length();
  write_parquet_table(*::arrow::Table::Make(::arrow::schema(fields), arrays, rows), path);
}

}  // namespace tensordict
