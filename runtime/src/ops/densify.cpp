// From lazy stacks to dense tensordicts: densify, maybe_dense_stack and
// dense_stack_tds (tensordict's _lazy.py densify, _torch_func.py _stack with
// maybe_dense_stack, functional.py dense_stack_tds). A lazy stack's own part
// is kinds/lazy/lazy_densify.cpp's (KindOps::densify, maybe_dense_stack,
// dense_stack_tds).
#include <ATen/ATen.h>

#include <algorithm>
#include <optional>
#include <stdexcept>

#include "core/format.h"
#include "core/kind_ops.h"
#include "kinds/dense/map_leaves.h"
#include "tensordict/errors.h"
#include "tensordict/detail/impl.h"
#include "tensordict/lazy.h"

namespace tensordict {

namespace {

// The same keys, of the same kinds, and tensors of the same shapes.
bool same_level(const std::vector<TensorDict>& tds) {
  const TensorDictImpl& first = *tds.front().impl();
  for (std::size_t i = 1; i < tds.size(); ++i) {
    const TensorDictImpl& other = *tds[i].impl();
    if (tds[i].batch_size() != tds.front().batch_size() || other.num_keys() != first.num_keys()) return false;
    bool same = true;
    first.for_each_key([&](const std::string& key, EntryKind) {
      if (!same) return;
      const auto a = first.find(key);
      const auto b = other.find(key);
      same = b && a->is_tensor() == b->is_tensor() && a->is_tensordict() == b->is_tensordict() &&
             (!a->is_tensor() || a->tensor().sizes() == b->tensor().sizes());
    });
    if (!same) return false;
  }
  return true;
}

}  // namespace

TensorDict TensorDict::densify() const {
  if (const auto own = detail::kind_ops(*impl_).densify) return own(*this);
  TensorDict out = empty();
  impl_->for_each([&](const std::string& key, const Value& value) {
    out.impl()->insert(key, value.is_tensordict() ? Value(value.tensordict().densify()) : value);
  });
  return out;
}

TensorDict maybe_dense_stack(const std::vector<TensorDict>& tds, int64_t dim) {
  if (tds.empty()) throw ValueError("maybe_dense_stack needs at least one tensordict");
  const int64_t d = wrap_batch_dim(dim, tds.front().batch_dims(), "maybe_dense_stack", 1);
  // Lazy stacks of as many members along the same dim: member by member.
  if (const auto own = detail::kind_ops(*tds.front().impl()).maybe_dense_stack) {
    if (auto stacked = own(tds, d)) return *std::move(stacked);
  }
  if (!same_level(tds)) return lazy_stack(tds, d);
  // Dense at this level: the leaves through stack(), each nested level again.
  std::vector<NestedKey> leaves;
  tds.front().impl()->for_each_key([&](const std::string& key, EntryKind kind) {
    if (kind != EntryKind::TensorDict) leaves.emplace_back(key);
  });
  std::vector<TensorDict> leaf_parts;
  for (const auto& td : tds) leaf_parts.push_back(td.select(leaves));
  const TensorDict stacked = stack(leaf_parts, d);
  TensorDict out = stacked.empty();
  tds.front().impl()->for_each_key([&](const std::string& key, EntryKind kind) {
    if (kind != EntryKind::TensorDict) {
      out.impl()->insert(key, *stacked.impl()->find(key));
      return;
    }
    std::vector<TensorDict> nested;
    for (const auto& td : tds) nested.push_back(td.impl()->find(key)->tensordict());
    out.impl()->insert(key, Value(maybe_dense_stack(nested, d)));
  });
  return out;
}

TensorDict dense_stack_tds(const TensorDict& td) {
  const auto own = detail::kind_ops(*td.impl()).dense_stack_tds;
  return own ? own(td) : td;
}

TensorDict dense_stack_tds(const std::vector<TensorDict>& tds, int64_t dim) { return maybe_dense_stack(tds, dim); }

}  // namespace tensordict
