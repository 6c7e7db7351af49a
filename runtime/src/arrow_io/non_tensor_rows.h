// Non-tensor entries as one JSON value per row (private): what tensordict's
// tolist() gives to_arrow and to_parquet.
#pragma once

#include <ATen/core/Tensor.h>
#include <nlohmann/json.hpp>

#include <vector>

#include "tensordict/non_tensor.h"

namespace tensordict::detail::arrow_io {

// The values of `data` over a level of batch size `batch` (one dim or
// more), one per element of its first dim: a stack's values, or its one
// value repeated; with more batch dims, each row is the nested lists over
// the others.
std::vector<Json> non_tensor_rows(const NonTensorData& data, at::IntArrayRef batch);

}  // namespace tensordict::detail::arrow_io
