// The batch ops of non-tensor data (NonTensorData, one value or a stack of
// pool ids), shared by the dynamic core's leaf walks and the typed layer's
// NonTensorStack fields, so that both move per-element values the same way.
#pragma once

#include <ATen/core/Tensor.h>
#include <c10/util/FunctionRef.h>

#include <memory>
#include <vector>

#include "tensordict/batch_index.h"
#include "tensordict/non_tensor.h"

namespace tensordict::detail {

// `data` through a batch op (index, reshape, permute, ...) that `fn` applies
// to a tensor whose leading dims are the batch: one value stays as it is, a
// stack's ids go through `fn`.
NonTensorData map_non_tensor(const NonTensorData& data, c10::function_ref<at::Tensor(const at::Tensor&)> fn);

// `dest` (non-tensor data over `batch`) with `value` written at `index`: the
// non-tensor counterpart of BatchIndex::put. Collapses to one value when
// every element holds the same one.
NonTensorData put_non_tensor(const NonTensorData& dest, at::IntArrayRef batch, const BatchIndex& index,
                             const NonTensorData& value);

// Non-tensor data of several tensordicts (of the given batch sizes) as one
// entry: equal single values stay one value (tensordict's rule); otherwise
// their elements' ids are joined like tensors (`join`: at::stack or at::cat).
NonTensorData combine_non_tensor(const std::vector<NonTensorData>& items, const std::vector<std::vector<int64_t>>& batch_sizes,
                                 c10::function_ref<at::Tensor(const std::vector<at::Tensor>&)> join);

// The elements of `items` (non-tensor data over `batch`) as ids into one
// pool of their distinct values: equal values get equal ids whichever item
// holds them, so that comparing ids compares values and picking ids picks
// values (NonTensorData::from_ids(pool, picked)).
struct SharedValueIds {
  std::shared_ptr<const std::vector<Json>> pool;
  std::vector<at::Tensor> ids;  // int64, `batch` shaped, one per item
};
SharedValueIds shared_value_ids(const std::vector<NonTensorData>& items, at::IntArrayRef batch);

// The value of the element at `index` (one index per batch dim) of
// non-tensor data over `batch`; IndexError naming `what` when out of range.
const Json& non_tensor_element(const NonTensorData& data, at::IntArrayRef batch, at::IntArrayRef index,
                               std::string_view what);
// Every element's value, in row-major order over `batch`.
std::vector<Json> non_tensor_elements(const NonTensorData& data, at::IntArrayRef batch);

}  // namespace tensordict::detail
