// tensordict's tabular conversions of one column (private): how
// from_parquet turns a column pyarrow read into an entry
// (tensordict/_tabular.py: _pyarrow_table_to_columns, then the TensorDict
// constructor's rules for NumPy arrays and Python lists).
#pragma once

#include <arrow/type_fwd.h>
#include <nlohmann/json.hpp>
#include <c10/core/ScalarType.h>

#include <optional>
#include <vector>

#include "tensordict/key.h"
#include "tensordict/non_tensor.h"
#include "tensordict/value.h"

namespace tensordict::detail::arrow_io {

// The entry of one column (see from_parquet in <tensordict/arrow.h>);
// `dtype` casts the columns that NumPy would hold as numbers or booleans.
Value tabular_entry(const ::arrow::Array& column, const NestedKey& key, std::optional<at::ScalarType> dtype);

// The entry a Python list of these values becomes: a tensor when they are
// nested lists of numbers (or numbers) of one shape (bool, int64, or float32
// as torch.tensor infers), else a non-tensor stack; an empty float32 tensor
// for no values.
Value list_entry(const std::vector<Json>& values);

}  // namespace tensordict::detail::arrow_io
