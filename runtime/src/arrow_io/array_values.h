// The rows of an Arrow array as JSON values (private): what pyarrow's
// to_pylist gives, for the non-tensor stacks of from_arrow and from_parquet.
#pragma once

#include <arrow/type_fwd.h>
#include <nlohmann/json.hpp>

#include <vector>

#include "tensordict/key.h"
#include "tensordict/non_tensor.h"

namespace tensordict::detail::arrow_io {

// One JSON value per row: null, bool, numbers, strings; lists for list,
// fixed-size list and list-view rows; objects for struct rows (fields in
// order); a list of [key, value] for a map row; the dictionary's value for a
// dictionary-encoded row; the storage's value for an extension row. A type
// with no JSON form (binary, temporal, decimal, union, run-end encoded, at
// any depth) is a TypeError naming the column `key`, whatever the rows.
std::vector<Json> row_values(const ::arrow::Array& array, const NestedKey& key);

}  // namespace tensordict::detail::arrow_io
