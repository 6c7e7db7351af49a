// A lazy stack's batch-shape ops (tensordict's _lazy.py rules): the members
// run each op with the stack dim taken out, and the result stays lazy.
#include <ATen/ATen.h>

#include <algorithm>
#include <stdexcept>

#include "core/format.h"
#include "kinds/lazy/lazy_impl.h"
#include "kinds/dense/map_leaves.h"
#include "tensordict/detail/impl.h"
#include "tensordict/lazy.h"
#include "tensordict/detail/shape_plan.h"

namespace tensordict::detail {

// tensordict's LazyStackedTensorDict shape ops (_lazy.py): each member gets
// the op with the stack dim taken out, and the stack dim moves with the op.
std::optional<TensorDict> LazyStackedImpl::reshape_parts(const BatchShapeOp& op) const {
  if (members_.empty()) return std::nullopt;  // nothing to run it on: the dense result
  const int64_t sd = stack_dim_;
  const auto n = static_cast<int64_t>(members_.size());
  // A batch dim other than the stack dim, as the members count it.
  auto member_dim = [&](int64_t d) { return d < sd ? d : d - 1; };
  std::vector<TensorDict> out;
  out.reserve(members_.size());
  switch (op.op) {
    case BatchShapeOp::Op::Unsqueeze: {
      const int64_t d = op.dims.front();
      for (const auto& m : members_) out.push_back(m.unsqueeze(d <= sd ? d : d - 1));
      return TensorDict(restack(std::move(out), d <= sd ? sd + 1 : sd));
    }
    case BatchShapeOp::Op::Squeeze: {
      const int64_t d = op.dims.front();
      if (d == sd) return members_.front();  // a stack of one member
      for (const auto& m : members_) out.push_back(m.squeeze(member_dim(d)));
      return TensorDict(restack(std::move(out), d < sd ? sd - 1 : sd));
    }
    case BatchShapeOp::Op::Permute: {
      const at::IntArrayRef order = op.dims;
      std::vector<int64_t> member_order;
      for (int64_t o : order) {
        if (o != sd) member_order.push_back(member_dim(o));
      }
      for (const auto& m : members_) out.push_back(m.permute(member_order));
      const auto new_sd = static_cast<int64_t>(std::find(order.begin(), order.end(), sd) - order.begin());
      return TensorDict(restack(std::move(out), new_sd));
    }
    case BatchShapeOp::Op::Reshape:
      return regroup(op.dims);
    case BatchShapeOp::Op::Expand: {
      // New dims lead; the stack dim keeps its place from the end.
      const at::IntArrayRef shape = op.dims;
      const int64_t new_dims = static_cast<int64_t>(shape.size() - batch_size_.size());
      const int64_t new_sd = new_dims + sd;
      const int64_t count = shape[new_sd];
      if (count == 0) return std::nullopt;
      std::vector<int64_t> member_shape = shape.vec();
      member_shape.erase(member_shape.begin() + new_sd);
      // The plan allows count != n only for one member, which is repeated.
      for (int64_t i = 0; i < count; ++i) out.push_back(members_[count == n ? i : 0].expand(member_shape));
      // tensordict stacks the expanded members densely where it can.
      TensorDict result = maybe_dense_stack(out, new_sd);
      Names names = names_;
      if (!as_lazy(*result.impl()) && any_named(names)) {
        names.insert(names.begin(), new_dims, std::nullopt);
        result.rename_(names);
      }
      return result;
    }
  }
  return std::nullopt;
}

namespace {
// The stack `td` with dims [i, j] flattened: unbound one after the other at
// i, every piece stacked lazily at i (tensordict's _regroup).
TensorDict flattened(const TensorDict& td, int64_t i, int64_t j) {
  std::vector<TensorDict> pieces{td};
  for (int64_t k = i; k <= j; ++k) {
    std::vector<TensorDict> next;
    for (const auto& p : pieces) {
      for (auto& q : p.unbind(i)) next.push_back(std::move(q));
    }
    pieces = std::move(next);
  }
  return TensorDict(std::make_shared<LazyStackedImpl>(std::move(pieces), i));
}

// The stack `td` unflattened into `shape` at dims [i, j): each dim's chunks
// stacked lazily at it, dim after dim (tensordict's _regroup).
TensorDict unflattened(TensorDict td, at::IntArrayRef shape, int64_t i, int64_t j) {
  for (int64_t k = i; k < j; ++k) td = TensorDict(std::make_shared<LazyStackedImpl>(td.chunk(shape[k], k), k));
  return td;
}

// tensordict's _check_is_flatten(to, from) (utils.py; _check_is_unflatten
// swaps them): the first dim where the shapes differ from the front, and the
// last from the back, each the last index of its loop when no size differs,
// as dims [i, j] of `from`; nullopt when they do not meet. Both shapes hold
// the same number of elements.
std::optional<std::pair<int64_t, int64_t>> flatten_dims(at::IntArrayRef to, at::IntArrayRef from) {
  const std::size_t m = std::min(to.size(), from.size());
  if (m == 0) return std::nullopt;
  std::size_t i = 0;
  while (i < m && to[i] == from[i]) ++i;
  if (i == m) i = m - 1;
  std::size_t j = 0;
  while (j < m && to[to.size() - 1 - j] == from[from.size() - 1 - j]) ++j;
  if (j == m) j = m - 1;
  if (i != to.size() - j - 1) return std::nullopt;
  return std::make_pair(static_cast<int64_t>(i), static_cast<int64_t>(from.size() - j - 1));
}
}  // namespace

// tensordict's lazy view/reshape (_lazy.py:3695 _view): flattening dims
// [i, j] unbinds them and stacks every piece lazily at i; unflattening dim i
// chunks it and stacks the chunks lazily, dim after dim. Other shapes (and
// empty dims) give nullopt: the dense result.
std::optional<TensorDict> LazyStackedImpl::regroup(at::IntArrayRef shape) const {
  const at::IntArrayRef batch = batch_size_;
  const std::size_t nb = batch.size(), ns = shape.size();
  if (std::find(batch.begin(), batch.end(), 0) != batch.end()) return std::nullopt;
  // The leading and trailing dims both shapes share; what lies between changes.
  std::size_t lead = 0;
  while (lead < nb && lead < ns && batch[lead] == shape[lead]) ++lead;
  std::size_t trail = 0;
  while (trail < nb - lead && trail < ns - lead && batch[nb - 1 - trail] == shape[ns - 1 - trail]) ++trail;
  const std::size_t from = nb - lead - trail, to = ns - lead - trail;
  const auto i = static_cast<int64_t>(lead);
  const TensorDict self(std::const_pointer_cast<TensorDictImpl>(shared_from_this()));
  std::optional<TensorDict> out;
  if (from == 0 && to == 0) {
    out = TensorDict(restack(members_, stack_dim_));  // the same shape
  } else if (from >= 1 && to == 1) {
    out = flattened(self, i, i + static_cast<int64_t>(from) - 1);
  } else if (from == 1 && to > 1) {
    out = unflattened(self, shape, i, i + static_cast<int64_t>(to) - 1);
  } else if (auto dims = from == 0 || to == 0 ? flatten_dims(shape, batch) : std::nullopt) {
    // Only dims of size 1 are removed or added ([2, 1] -> [2], [2] -> [1, 2]):
    // tensordict's _check_is_flatten and _check_is_unflatten pick the dims.
    out = flattened(self, dims->first, dims->second);
  } else if (auto dims = from == 0 || to == 0 ? flatten_dims(batch, shape) : std::nullopt) {
    out = unflattened(self, shape, dims->first, dims->second);
  } else {
    return std::nullopt;
  }
  if (is_locked()) out->lock_();  // tensordict's shape ops keep the lock
  return out;
}

// tensordict's LazyStackedTensorDict.split: along the stack dim, groups of
// members; along another dim, each member split, the pieces stacked lazily.
std::optional<std::vector<TensorDict>> LazyStackedImpl::split_parts(at::IntArrayRef sizes, int64_t dim) const {
  if (members_.empty()) return std::nullopt;
  std::vector<std::vector<TensorDict>> groups(sizes.size());
  if (dim == stack_dim_) {
    auto next = members_.begin();
    for (std::size_t i = 0; i < sizes.size(); ++i) {
      groups[i].assign(next, next + sizes[i]);
      next += sizes[i];
    }
  } else {
    for (const auto& m : members_) {
      auto pieces = m.split(sizes, dim < stack_dim_ ? dim : dim - 1);
      for (std::size_t i = 0; i < pieces.size(); ++i) groups[i].push_back(std::move(pieces[i]));
    }
  }
  std::vector<TensorDict> out;
  out.reserve(groups.size());
  for (auto& group : groups) out.emplace_back(restack(std::move(group), stack_dim_));
  return out;
}

// torch.cat with a lazy stack among `tds` (tensordict's _lazy_cat).
TensorDict lazy_cat(const std::vector<TensorDict>& tds, int64_t dim) {
  const LazyStackedImpl* first = nullptr;
  for (const auto& td : tds) {
    const LazyStackedImpl* lazy = as_lazy(*td.impl());
    if (!lazy) continue;
    if (!first) first = lazy;
    if (lazy->stack_dim() != first->stack_dim()) {
      throw RuntimeError(fmt::format("cat: lazy stacks must have the same stack dim, got {} and {}", first->stack_dim(),
                                           lazy->stack_dim()));
    }
  }
  const int64_t sd = first->stack_dim();
  const int64_t d = wrap_batch_dim(dim, tds.front().batch_dims(), "cat");
  std::vector<at::IntArrayRef> batches;
  for (const auto& td : tds) batches.push_back(td.batch_size());
  auto check_batches = [&] { shape::concatenated(batches, tds.front().names(), d); };  // tensordict's errors
  for (const auto& b : batches) {
    if (b.size() != batches.front().size()) check_batches();
  }
  // Every input cut along the stack dim (a dense one is unbound); tensordict
  // counts the parts before it compares the batch sizes.
  std::vector<std::vector<TensorDict>> parts;
  for (const auto& td : tds) {
    const LazyStackedImpl* lazy = as_lazy(*td.impl());
    parts.push_back(lazy ? lazy->members() : td.unbind(sd));
    if (d != sd && parts.back().size() != parts.front().size()) {
      throw RuntimeError(fmt::format(
          "cat: lazy stacks along a dim other than their stack dim need the same number of stacked tensordicts, got {} and {}",
          parts.front().size(), parts.back().size()));
    }
  }
  check_batches();
  std::vector<TensorDict> members;
  if (d == sd) {
    for (auto& p : parts) members.insert(members.end(), p.begin(), p.end());
  } else {
    for (std::size_t i = 0; i < parts.front().size(); ++i) {
      std::vector<TensorDict> row;
      for (const auto& p : parts) row.push_back(p[i]);
      members.push_back(tensordict::cat(row, d < sd ? d : d - 1));
    }
  }
  return TensorDict(first->restack(std::move(members), sd));
}

std::optional<TensorDict> lazy_stack_of_stacks(const std::vector<TensorDict>& tds, int64_t dim) {
  const LazyStackedImpl* first = as_lazy(*tds.front().impl());
  if (!first) return std::nullopt;
  for (const auto& td : tds) {
    const LazyStackedImpl* lazy = as_lazy(*td.impl());
    if (!lazy || lazy->stack_dim() != first->stack_dim() || lazy->members().size() != first->members().size() ||
        td.batch_dims() != tds.front().batch_dims()) {
      return std::nullopt;
    }
  }
  const int64_t sd = first->stack_dim();
  const int64_t d = wrap_batch_dim(dim, tds.front().batch_dims(), "stack", 1);
  // Member i of the result stacks member i of every input, at the new dim's
  // place among the members' dims; the stack dim moves past a new dim
  // before it.
  std::vector<TensorDict> members;
  for (std::size_t i = 0; i < first->members().size(); ++i) {
    std::vector<TensorDict> row;
    for (const auto& td : tds) row.push_back(as_lazy(*td.impl())->members()[i]);
    members.push_back(tensordict::stack(row, d <= sd ? d : d - 1));
  }
  return TensorDict(first->restack(std::move(members), d <= sd ? sd + 1 : sd));
}

}  // namespace tensordict::detail
