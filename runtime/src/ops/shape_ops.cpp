// Shape ops over batch dims that view the leaves (shape_mapping.h); those
// tensordict counts as views keep share_memory_()'s mark (shared_mark.h).
#include <ATen/ATen.h>

#include <algorithm>
#include <numeric>
#include <stdexcept>

#include "core/format.h"
#include "ops/shape_mapping.h"
#include "ops/shared_mark.h"
#include "tensordict/errors.h"
#include "tensordict/detail/impl.h"

namespace tensordict {

using detail::keep_shared_mark;
using detail::mapped;
using detail::mapped_pieces;

namespace {
// The op run part by part where the kind does (a lazy stack keeps its
// members), else the plan over every leaf.
// `nested`: the same op on a nested lazy stack inside the batch, whose
// members may differ in shape (tensordict runs it there member by member).
template <class Plan>
TensorDict parts_or_mapped(const TensorDict& td, const Plan& plan, BatchShapeOp::Op op, at::IntArrayRef dims,
                           const detail::NestedOp* nested = nullptr) {
  if (auto parts = td.impl()->reshape_parts(BatchShapeOp{op, dims})) return std::move(*parts);
  return mapped(td, plan, nested);
}

// `batch` followed by a nested level's batch dims past `td`'s: the shape a
// nested lazy stack takes when `td`'s batch becomes `batch`.
std::vector<int64_t> with_own_dims(at::IntArrayRef batch, const TensorDict& td, const TensorDict& nested) {
  std::vector<int64_t> out = batch.vec();
  const auto own = nested.batch_size().slice(static_cast<std::size_t>(td.batch_dims()));
  out.insert(out.end(), own.begin(), own.end());
  return out;
}

// The nested op of reshape, flatten and unflatten (view: `as_view`): the
// nested lazy stack takes the new batch followed by its own dims, which
// regroups its members (tensordict's _view of a nested value).
template <class Plan>
TensorDict regrouped(const TensorDict& td, const Plan& plan, bool as_view = false) {
  auto reshape_nested = [&](const TensorDict& n) {
    const auto to = with_own_dims(plan.batch, td, n);
    return std::vector<TensorDict>{as_view ? n.view(to) : n.reshape(to)};
  };
  const detail::NestedOp nested = reshape_nested;
  return parts_or_mapped(td, plan, BatchShapeOp::Op::Reshape, plan.batch, &nested);
}

// `order` extended over a nested level's own dims, which stay in place.
std::vector<int64_t> order_for(at::IntArrayRef order, const TensorDict& td, const TensorDict& nested) {
  std::vector<int64_t> out = order.vec();
  for (int64_t d = td.batch_dims(); d < nested.batch_dims(); ++d) out.push_back(d);
  return out;
}

shape::BatchDims identity_order(int64_t n) {
  shape::BatchDims order(static_cast<std::size_t>(n));
  std::iota(order.begin(), order.end(), 0);
  return order;
}
}  // namespace

TensorDict TensorDict::reshape(at::IntArrayRef shape) const {
  return regrouped(*this, shape::Reshape(batch_size(), shape));
}

TensorDict TensorDict::view(at::IntArrayRef shape) const {
  return keep_shared_mark(*this, regrouped(*this, shape::Reshape(batch_size(), shape, shape::Reshape::Mode::View),
                                           /*as_view=*/true));
}

TensorDict TensorDict::permute(at::IntArrayRef dims) const {
  const shape::Permute plan(batch_size(), names(), dims);
  auto permute_nested = [&](const TensorDict& n) { return std::vector<TensorDict>{n.permute(order_for(plan.order(), *this, n))}; };
  const detail::NestedOp nested = permute_nested;
  return keep_shared_mark(*this, parts_or_mapped(*this, plan, BatchShapeOp::Op::Permute, plan.order(), &nested));
}

TensorDict TensorDict::transpose(int64_t dim0, int64_t dim1) const {
  const shape::Transpose plan(batch_size(), names(), dim0, dim1);
  auto order = identity_order(batch_dims());
  std::swap(order[plan.dim0()], order[plan.dim1()]);
  auto transpose_nested = [&](const TensorDict& n) { return std::vector<TensorDict>{n.permute(order_for(order, *this, n))}; };
  const detail::NestedOp nested = transpose_nested;
  return keep_shared_mark(*this, parts_or_mapped(*this, plan, BatchShapeOp::Op::Permute, order, &nested));
}

TensorDict TensorDict::squeeze(std::optional<int64_t> dim) const {
  const shape::Squeeze plan(batch_size(), names(), dim);
  const auto& drop = plan.dropped();
  // A nested lazy stack squeezes the same dims itself.
  auto squeeze_nested = [&](const TensorDict& n) {
    TensorDict out = n;
    for (int64_t d : drop) out = out.squeeze(d);
    return std::vector<TensorDict>{out};
  };
  const detail::NestedOp nested = squeeze_nested;
  // Nothing to squeeze: the same dims (an identity permutation).
  if (drop.empty()) {
    return keep_shared_mark(
        *this, parts_or_mapped(*this, plan, BatchShapeOp::Op::Permute, identity_order(batch_dims()), &nested));
  }
  // One dim at a time, the highest first (the lower dims keep their place).
  auto first = impl_->reshape_parts(BatchShapeOp{BatchShapeOp::Op::Squeeze, {drop.front()}});
  if (!first) return keep_shared_mark(*this, mapped(*this, plan, &nested));
  TensorDict out = std::move(*first);
  for (std::size_t i = 1; i < drop.size(); ++i) out = out.squeeze(drop[i]);
  return keep_shared_mark(*this, std::move(out));
}

TensorDict TensorDict::unsqueeze(int64_t dim) const {
  const shape::Unsqueeze plan(batch_size(), names(), dim);
  auto unsqueeze_nested = [&](const TensorDict& n) { return std::vector<TensorDict>{n.unsqueeze(plan.dim())}; };
  const detail::NestedOp nested = unsqueeze_nested;
  return keep_shared_mark(*this, parts_or_mapped(*this, plan, BatchShapeOp::Op::Unsqueeze, {plan.dim()}, &nested));
}

TensorDict TensorDict::expand(at::IntArrayRef shape) const {
  const shape::Expand plan(batch_size(), names(), shape);
  auto expand_nested = [&](const TensorDict& n) { return std::vector<TensorDict>{n.expand(with_own_dims(plan.batch, *this, n))}; };
  const detail::NestedOp nested = expand_nested;
  return parts_or_mapped(*this, plan, BatchShapeOp::Op::Expand, plan.batch, &nested);
}

TensorDict TensorDict::broadcast_to(at::IntArrayRef shape) const {
  const shape::Expand plan(batch_size(), names(), shape, shape::Expand::BroadcastTo);
  auto expand_nested = [&](const TensorDict& n) { return std::vector<TensorDict>{n.expand(with_own_dims(plan.batch, *this, n))}; };
  const detail::NestedOp nested = expand_nested;
  return mapped(*this, plan, &nested);
}

TensorDict TensorDict::expand_as(const at::Tensor& other) const { return expand(other.sizes()); }

TensorDict TensorDict::expand_as(const TensorDict& other) const {
  // First to the other's batch size, then each leaf to its counterpart's
  // feature dims too.
  return mapped(*this, shape::Expand(batch_size(), names(), other.batch_size()))
      .apply([](const at::Tensor& a, const at::Tensor& b) { return a.expand_as(b); }, other);
}

TensorDict TensorDict::flatten(int64_t start_dim, int64_t end_dim) const {
  return regrouped(*this, shape::Flatten(batch_size(), names(), start_dim, end_dim));
}

TensorDict TensorDict::unflatten(int64_t dim, at::IntArrayRef sizes) const {
  return regrouped(*this, shape::Unflatten(batch_size(), names(), dim, sizes));
}

std::vector<TensorDict> TensorDict::unbind(int64_t dim) const { return keep_shared_mark(*this, impl_->unbind(dim)); }

// The defaults: dense results.
std::optional<TensorDict> TensorDictImpl::reshape_parts(const BatchShapeOp&) const { return std::nullopt; }

std::optional<std::vector<TensorDict>> TensorDictImpl::split_parts(at::IntArrayRef, int64_t) const { return std::nullopt; }

// Every leaf unbound, dense pieces.
std::vector<TensorDict> TensorDictImpl::unbind(int64_t dim) const {
  const TensorDict self(std::const_pointer_cast<TensorDictImpl>(shared_from_this()));
  const shape::Unbind plan(batch_size(), names(), dim);
  // A nested lazy stack unbinds itself (along its stack dim: its members).
  const int64_t d = wrap_batch_dim(dim, static_cast<int64_t>(batch_size().size()), "unbind");
  auto unbind_nested = [&](const TensorDict& n) { return n.unbind(d); };
  const detail::NestedOp nested = unbind_nested;
  auto pieces = mapped_pieces(self, plan, &nested);
  return {std::make_move_iterator(pieces.begin()), std::make_move_iterator(pieces.end())};
}

std::vector<TensorDict> TensorDict::split(at::IntArrayRef split_sizes, int64_t dim) const {
  const shape::Split plan(batch_size(), names(), split_sizes.vec(), dim);
  if (auto parts = impl_->split_parts(plan.sizes(), plan.dim())) return keep_shared_mark(*this, std::move(*parts));
  auto split_nested = [&](const TensorDict& n) { return n.split(plan.sizes(), plan.dim()); };
  const detail::NestedOp nested = split_nested;
  auto pieces = mapped_pieces(*this, plan, &nested);
  return keep_shared_mark(*this, {std::make_move_iterator(pieces.begin()), std::make_move_iterator(pieces.end())});
}

std::vector<TensorDict> TensorDict::split(int64_t split_size, int64_t dim) const {
  const int64_t d = wrap_batch_dim(dim, batch_dims(), "split");
  return split(shape::split_sizes(batch_size()[d], split_size), d);
}

std::vector<TensorDict> TensorDict::chunk(int64_t chunks, int64_t dim) const {
  const int64_t d = wrap_batch_dim(dim, batch_dims(), "chunk");
  return split(shape::chunk_sizes(batch_size()[d], chunks), d);
}

std::vector<TensorDict> TensorDict::tensor_split(int64_t sections, int64_t dim) const {
  const int64_t d = wrap_batch_dim(dim, batch_dims(), "tensor_split");
  return split(shape::tensor_split_sizes(batch_size()[d], sections), d);
}

std::vector<TensorDict> TensorDict::tensor_split(at::IntArrayRef indices, int64_t dim) const {
  const int64_t d = wrap_batch_dim(dim, batch_dims(), "tensor_split");
  return split(shape::tensor_split_sizes(batch_size()[d], indices), d);
}

TensorDict TensorDict::movedim(at::IntArrayRef source, at::IntArrayRef destination) const {
  if (source.size() != destination.size()) {
    throw ValueError(fmt::format("movedim: source {} and destination {} must have the same number of dims",
                                 shape_string(source), shape_string(destination)));
  }
  const int64_t nb = batch_dims();
  std::vector<int64_t> order(nb, -1);  // order[destination] = source
  std::vector<bool> moved(nb, false);
  for (std::size_t i = 0; i < source.size(); ++i) {
    const int64_t from = wrap_batch_dim(source[i], nb, "movedim");
    const int64_t to = wrap_batch_dim(destination[i], nb, "movedim");
    if (moved[from]) throw RuntimeError(fmt::format("movedim: repeated dim in source {}", shape_string(source)));
    if (order[to] != -1) throw RuntimeError(fmt::format("movedim: repeated dim in destination {}", shape_string(destination)));
    moved[from] = true;
    order[to] = from;
  }
  // The other dims keep their order in the free positions.
  int64_t next = 0;
  for (auto& o : order) {
    if (o != -1) continue;
    while (moved[next]) ++next;
    o = next++;
  }
  return permute(order);
}

TensorDict TensorDict::movedim(int64_t source, int64_t destination) const {
  return movedim(at::IntArrayRef(source), at::IntArrayRef(destination));
}

TensorDict TensorDict::swapaxes(int64_t dim0, int64_t dim1) const { return transpose(dim0, dim1); }

TensorDict TensorDict::swapdims(int64_t dim0, int64_t dim1) const { return transpose(dim0, dim1); }

TensorDict TensorDict::narrow(int64_t dim, int64_t start, int64_t length) const {
  return keep_shared_mark(*this, mapped(*this, shape::Narrow(batch_size(), names(), dim, start, length)));
}

}  // namespace tensordict
