// Arrow arrays of numbers as tensors (private): tensordict's _primitive,
// _to_tensor and _to_jagged (tensordict/_arrow.py).
#pragma once

#include <ATen/core/Tensor.h>
#include <arrow/type_fwd.h>

#include <optional>

#include "tensordict/arrow.h"
#include "tensordict/key.h"

namespace tensordict::detail::arrow_io {

// What a column's conversion follows: from_arrow's copy= and nulls=.
struct ColumnRules {
  std::optional<bool> copy = std::nullopt;
  ArrowNulls nulls = ArrowNulls::Raise;
};

// tensordict's ValueError when `array` has nulls and `nulls` is Raise; the
// message names the column `key`.
void check_nulls(const ::arrow::Array& array, ArrowNulls nulls, const NestedKey& key);
// A bool tensor of `array`'s length: true where the row is not null.
at::Tensor validity(const ::arrow::Array& array);

// An array of a tensor type (is_tensor_type) as a tensor [rows, ...]: a view
// of Arrow's buffer where the rules allow it, else a copy; null rows filled
// (NaN, or 0) unless the rules raise.
at::Tensor dense_tensor(const ::arrow::Array& array, const ColumnRules& rules, const NestedKey& key);
// A list or large_list array of a tensor type as a nested tensor, one
// component per row (a null row: an empty one).
at::Tensor jagged_tensor(const ::arrow::Array& array, const ColumnRules& rules, const NestedKey& key);

}  // namespace tensordict::detail::arrow_io
