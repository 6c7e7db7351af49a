// tensordict's from_arrow (tensordict/_arrow.py): one entry per column.
#include <ATen/ATen.h>
#include <arrow/api.h>
#include <arrow/array/concatenate.h>
#include <fmt/format.h>

#include <utility>
#include <vector>

#include "arrow_io/array_tensors.h"
#include "arrow_io/array_values.h"
#include "arrow_io/arrow_common.h"
#include "arrow_io/arrow_dtypes.h"
#include "tensordict/arrow.h"
#include "tensordict/errors.h"
#include "tensordict/non_tensor.h"

namespace tensordict {

namespace {

using detail::arrow_io::check_nulls;
using detail::arrow_io::ColumnRules;
using detail::arrow_io::value_or_throw;

// The one array a column holds: its chunks concatenated (a copy) when it
// has several.
std::shared_ptr<::arrow::Array> one_array(const ::arrow::ChunkedArray& column, const NestedKey& key) {
  if (column.num_chunks() == 1) return column.chunk(0);
  if (column.num_chunks() == 0) return value_or_throw(::arrow::MakeEmptyArray(column.type()), "from_arrow");
  return value_or_throw(::arrow::Concatenate(column.chunks()), fmt::format("from_arrow: column {}", key.repr()));
}

// The children whose nulls ArrowNulls::Raise refuses in a column of
// non-tensor values: the fields of a struct (with its null rows), the values
// of the non-null rows of a list, fixed-size list, list view or map. A
// dictionary's nulls are those of the values its rows select.
void check_inner_nulls(const ::arrow::Array& array, const NestedKey& key) {
  ::arrow::ArrayVector children;
  switch (array.type_id()) {
    case ::arrow::Type::STRUCT:
      children = value_or_throw(static_cast<const ::arrow::StructArray&>(array).Flatten(), "from_arrow");
      break;
    case ::arrow::Type::LIST:
    case ::arrow::Type::MAP:
      children.push_back(value_or_throw(static_cast<const ::arrow::ListArray&>(array).Flatten(), "from_arrow"));
      break;
    case ::arrow::Type::LARGE_LIST:
      children.push_back(value_or_throw(static_cast<const ::arrow::LargeListArray&>(array).Flatten(), "from_arrow"));
      break;
    case ::arrow::Type::FIXED_SIZE_LIST:
      children.push_back(
          value_or_throw(static_cast<const ::arrow::FixedSizeListArray&>(array).Flatten(), "from_arrow"));
      break;
    case ::arrow::Type::LIST_VIEW:
      children.push_back(value_or_throw(static_cast<const ::arrow::ListViewArray&>(array).Flatten(), "from_arrow"));
      break;
    case ::arrow::Type::LARGE_LIST_VIEW:
      children.push_back(
          value_or_throw(static_cast<const ::arrow::LargeListViewArray&>(array).Flatten(), "from_arrow"));
      break;
    case ::arrow::Type::DICTIONARY: {
      const auto& encoded = static_cast<const ::arrow::DictionaryArray&>(array);
      const auto& values = *encoded.dictionary();
      int64_t nulls = 0;
      for (int64_t row = 0; row < encoded.length(); ++row) {
        if (encoded.IsValid(row) && values.IsNull(encoded.GetValueIndex(row))) ++nulls;
      }
      if (nulls) {
        throw ValueError(fmt::format("The Arrow column {} has {} null value(s). Pass nulls='fill' to fill them, or "
                                     "nulls='mask' to also get a mask entry.",
                                     detail::arrow_io::tuple_repr(key), nulls));
      }
      children.push_back(encoded.dictionary());
      break;
    }
    default:
      return;
  }
  for (const auto& child : children) {
    check_nulls(*child, ArrowNulls::Raise, key);
    check_inner_nulls(*child, key);
  }
}

// Converts the columns of a table, collecting the masks of ArrowNulls::Mask.
struct ColumnConverter {
  ColumnRules rules;
  std::vector<std::pair<NestedKey, at::Tensor>> masks;

  Value convert(const std::shared_ptr<::arrow::Array>& array, const NestedKey& key) {
    const int64_t rows = array->length();
    const auto& type = *array->type();
    if (type.id() == ::arrow::Type::STRUCT) {
      // Flatten gives each field the struct's null rows.
      const auto fields = value_or_throw(static_cast<const ::arrow::StructArray&>(*array).Flatten(), "from_arrow");
      TensorDict level({}, {rows});
      for (int f = 0; f < type.num_fields(); ++f) {
        const std::string& name = type.field(f)->name();
        level.set(name, convert(fields[f], key + NestedKey(name)));
      }
      return level;
    }
    check_nulls(*array, rules.nulls, key);
    if (array->null_count() && rules.nulls == ArrowNulls::Mask) masks.emplace_back(key, detail::arrow_io::validity(*array));
    if (detail::arrow_io::is_tensor_type(type)) return detail::arrow_io::dense_tensor(*array, rules, key);
    if ((type.id() == ::arrow::Type::LIST || type.id() == ::arrow::Type::LARGE_LIST) &&
        detail::arrow_io::is_tensor_type(*type.field(0)->type())) {
      return detail::arrow_io::jagged_tensor(*array, rules, key);
    }
    if (rules.nulls == ArrowNulls::Raise) check_inner_nulls(*array, key);
    return NonTensorData::stack(detail::arrow_io::row_values(*array, key), {rows});
  }
};

TensorDict from_columns(const ::arrow::Schema& schema, const std::vector<std::shared_ptr<::arrow::Array>>& columns,
                        int64_t rows, const FromArrowOptions& options) {
  if (options.mask_key && options.nulls != ArrowNulls::Mask) {
    throw ValueError(fmt::format("from_arrow got a mask_key but nulls={}, not 'mask'.",
                                 detail::arrow_io::nulls_repr(options.nulls)));
  }
  const NestedKey mask_key = options.mask_key.value_or(NestedKey("_mask"));
  if (options.nulls == ArrowNulls::Mask && schema.GetFieldIndex(mask_key.front()) != -1) {
    throw ValueError(fmt::format("nulls='mask' writes the masks under the key '{}', which is a column of the table.",
                                 mask_key.front()));
  }
  ColumnConverter converter{{options.copy, options.nulls}, {}};
  TensorDict out({}, {rows});
  for (int i = 0; i < schema.num_fields(); ++i) {
    const std::string& name = schema.field(i)->name();
    out.set(name, converter.convert(columns[static_cast<std::size_t>(i)], name));
  }
  for (auto& [key, mask] : converter.masks) out.set(mask_key + key, std::move(mask));
  return options.device ? out.to(*options.device) : out;
}

}  // namespace

TensorDict from_arrow(const ::arrow::Table& table, const FromArrowOptions& options) {
  std::vector<std::shared_ptr<::arrow::Array>> columns;
  for (int i = 0; i < table.num_columns(); ++i) columns.push_back(one_array(*table.column(i), table.field(i)->name()));
  return from_columns(*table.schema(), columns, table.num_rows(), options);
}

TensorDict from_arrow(const ::arrow::RecordBatch& batch, const FromArrowOptions& options) {
  return from_columns(*batch.schema(), batch.columns(), batch.num_rows(), options);
}

}  // namespace tensordict
