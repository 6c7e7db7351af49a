// JSON values as an Arrow array (private): the non-tensor columns of
// to_arrow and to_parquet, typed as pyarrow.array types the same Python
// values.
#pragma once

#include <arrow/type_fwd.h>
#include <nlohmann/json.hpp>

#include <memory>
#include <string_view>
#include <vector>

#include "tensordict/key.h"
#include "tensordict/non_tensor.h"

namespace tensordict::detail::arrow_io {

// One row per value. The type, as pyarrow infers it: null when every value
// is null; bool; int64 (uint64 for integers beyond it, none negative);
// double when floats and integers mix; string; a list of the type its
// elements infer; a struct of the keys of every object, in the order first
// seen (null where an object lacks one). Values that no one type holds
// (strings and numbers, bools and integers) are a TypeError naming `key`
// and `op` (the caller: to_arrow, to_parquet).
std::shared_ptr<::arrow::Array> json_array(const std::vector<Json>& values, const NestedKey& key, std::string_view op);

}  // namespace tensordict::detail::arrow_io
