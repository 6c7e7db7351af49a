// What the batch-shape ops share (shape_mapping.h).
#include "ops/shape_mapping.h"

#include <ATen/ATen.h>

namespace tensordict::detail {

TensorDict mapped(const TensorDict& td, std::vector<int64_t> batch, Names names,
                  c10::function_ref<at::Tensor(const at::Tensor&)> fn, const char* op, ShapeCheck check,
                  const NestedOp* nested) {
  TensorDict out(TensorDict(
      map_leaves(*td.impl(), {std::move(batch), std::move(names)}, td.device(), OpKind::Batch, fn, op, check, nested)));
  if (td.is_locked()) out.lock_();
  return out;
}

std::vector<TensorDict> mapped_pieces(const TensorDict& td, const std::vector<std::vector<int64_t>>& batches,
                                      const Names& names, LeafFn fn, const char* op, ShapeCheck check,
                                      const NestedOp* nested) {
  std::vector<PieceMeta> metas;
  metas.reserve(batches.size());
  for (const auto& b : batches) metas.push_back({b, names});
  std::vector<TensorDict> out;
  for (auto& impl : map_leaves(*td.impl(), metas, td.device(), OpKind::Batch, fn, op, check, nested)) {
    out.emplace_back(TensorDict(std::move(impl)));
  }
  return out;
}

}  // namespace tensordict::detail
