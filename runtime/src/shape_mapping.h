// What the batch-shape ops share (private): each computes the result's batch
// size and names once, then maps every leaf with the same op extended over the
// leaf's feature dims (detail::map_leaves).
#pragma once

#include <c10/util/FunctionRef.h>

#include <vector>

#include "map_leaves.h"
#include "tensordict/dense.h"
#include "tensordict/shape_plan.h"
#include "tensordict/tensorclass_support.h"  // with_features, shared with the typed layer

namespace tensordict::detail {

// The tensordict of fn(leaf) over batch size `batch`; non-tensor stacks move
// like the batch. A locked source gives a locked result (tensordict's shape
// ops propagate the lock: the same data seen through another shape).
TensorDict mapped(const TensorDictBase& td, std::vector<int64_t> batch, Names names,
                  c10::function_ref<at::Tensor(const at::Tensor&)> fn, const char* op);

// One tensordict per batch size in `batches`; fn writes a leaf's pieces.
std::vector<TensorDict> mapped_pieces(const TensorDictBase& td, const std::vector<std::vector<int64_t>>& batches,
                                      const Names& names, LeafFn fn, const char* op);

// A shape plan (shape_plan.h) run over every leaf.
template <class Plan>
TensorDict mapped(const TensorDictBase& td, const Plan& plan) {
  return mapped(td, std::vector<int64_t>(plan.batch.begin(), plan.batch.end()), plan.names, plan, plan.op);
}
template <class Plan>
std::vector<TensorDict> mapped_pieces(const TensorDictBase& td, const Plan& plan) {
  std::vector<std::vector<int64_t>> batches;
  batches.reserve(plan.batches.size());
  for (const auto& b : plan.batches) batches.emplace_back(b.begin(), b.end());
  return mapped_pieces(td, batches, plan.names, plan, plan.op);
}

}  // namespace tensordict::detail
