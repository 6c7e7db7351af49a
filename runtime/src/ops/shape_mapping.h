// What the batch-shape ops share (private): each computes the result's batch
// size and names once, then maps every leaf with the same op extended over the
// leaf's feature dims (detail::map_leaves).
#pragma once

#include <c10/util/FunctionRef.h>

#include <type_traits>
#include <vector>

#include "kinds/dense/map_leaves.h"
#include "tensordict/base.h"
#include "tensordict/detail/shape_plan.h"
#include "tensordict/detail/tensorclass_support.h"  // with_features, shared with the typed layer

namespace tensordict::detail {

// The tensordict of fn(leaf) over batch size `batch`; non-tensor stacks move
// like the batch. A locked source gives a locked result (tensordict's shape
// ops propagate the lock: the same data seen through another shape).
// `nested`: the op run on a nested lazy stack inside the batch (map_leaves).
TensorDict mapped(const TensorDict& td, std::vector<int64_t> batch, Names names,
                  c10::function_ref<at::Tensor(const at::Tensor&)> fn, const char* op,
                  ShapeCheck check = ShapeCheck::Results, const NestedOp* nested = nullptr);

// One tensordict per batch size in `batches`; fn writes a leaf's pieces.
// `nested`: one result per piece.
std::vector<TensorDict> mapped_pieces(const TensorDict& td, const std::vector<std::vector<int64_t>>& batches,
                                      const Names& names, LeafFn fn, const char* op,
                                      ShapeCheck check = ShapeCheck::Results, const NestedOp* nested = nullptr);

// The plans whose leaf results have the planned batch prefix whenever the
// leaves start with the source's batch size (map_leaves' ShapeCheck::Planned);
// the others (Expand, Narrow) keep the per-leaf check.
template <class Plan>
inline constexpr ShapeCheck plan_check =
    std::is_same_v<Plan, shape::Reshape> || std::is_same_v<Plan, shape::Permute> ||
            std::is_same_v<Plan, shape::Transpose> || std::is_same_v<Plan, shape::Squeeze> ||
            std::is_same_v<Plan, shape::Unsqueeze> || std::is_same_v<Plan, shape::Flatten> ||
            std::is_same_v<Plan, shape::Unflatten> || std::is_same_v<Plan, shape::Unbind> ||
            std::is_same_v<Plan, shape::Split>
        ? ShapeCheck::Planned
        : ShapeCheck::Results;

// A shape plan (shape_plan.h) run over every leaf.
template <class Plan>
TensorDict mapped(const TensorDict& td, const Plan& plan, const NestedOp* nested = nullptr) {
  return mapped(td, std::vector<int64_t>(plan.batch.begin(), plan.batch.end()), plan.names, plan, plan.op,
                plan_check<Plan>, nested);
}
template <class Plan>
std::vector<TensorDict> mapped_pieces(const TensorDict& td, const Plan& plan, const NestedOp* nested = nullptr) {
  std::vector<std::vector<int64_t>> batches;
  batches.reserve(plan.batches.size());
  for (const auto& b : plan.batches) batches.emplace_back(b.begin(), b.end());
  return mapped_pieces(td, batches, plan.names, plan, plan.op, plan_check<Plan>, nested);
}

}  // namespace tensordict::detail
