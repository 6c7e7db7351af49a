// Reductions over batch dims, one leaf function per Reduction.
#include <ATen/ATen.h>

#include <algorithm>
#include <functional>
#include <stdexcept>
#include <tuple>

#include "core/format.h"
#include "ops/map_leaves.h"
#include "tensordict/base.h"
#include "tensordict/errors.h"

namespace tensordict {

namespace {

bool unbiased(int64_t correction) {
  if (correction != 0 && correction != 1) {
    throw ValueError(fmt::format("std/var: correction must be 0 or 1, got {}", correction));
  }
  return correction == 1;
}

// `t` reduced over `dims` (all of its dims when empty).
at::Tensor reduce_leaf(Reduction op, const at::Tensor& t, const std::vector<int64_t>& dims, bool keepdim, int64_t correction) {
  const bool all = dims.empty();
  switch (op) {
    case Reduction::sum: return all ? t.sum() : t.sum(dims, keepdim);
    case Reduction::mean: return all ? t.mean() : t.mean(dims, keepdim);
    case Reduction::nansum: return all ? at::nansum(t) : at::nansum(t, dims, keepdim);
    case Reduction::nanmean: return all ? at::nanmean(t) : at::nanmean(t, dims, keepdim);
    case Reduction::prod: {
      if (all) return t.prod();
      std::vector<int64_t> order = dims;  // prod reduces one dim at a time: highest first
      std::sort(order.rbegin(), order.rend());
      at::Tensor out = t;
      for (int64_t d : order) out = out.prod(d, keepdim);
      return out;
    }
    case Reduction::amax:
    case Reduction::max: return all ? t.max() : t.amax(dims, keepdim);
    case Reduction::amin:
    case Reduction::min: return all ? t.min() : t.amin(dims, keepdim);
    case Reduction::std: return all ? t.std(unbiased(correction)) : t.std(dims, unbiased(correction), keepdim);
    case Reduction::var: return all ? t.var(unbiased(correction)) : t.var(dims, unbiased(correction), keepdim);
  }
  throw ValueError("unknown reduction");
}

const char* reduction_name(Reduction op) {
  switch (op) {
#define TENSORDICT_NAME(name) \
  case Reduction::name: return #name;
    TENSORDICT_REDUCTIONS(TENSORDICT_NAME)
#undef TENSORDICT_NAME
    case Reduction::std: return "std";
    case Reduction::var: return "var";
  }
  return "reduce";
}

// Normalised, sorted, distinct batch dims.
std::vector<int64_t> batch_dims_of(const std::vector<int64_t>& dims, int64_t batch_dims, const char* op) {
  std::vector<int64_t> out;
  for (int64_t d : dims) out.push_back(wrap_batch_dim(d, batch_dims, op));
  std::sort(out.begin(), out.end());
  if (std::adjacent_find(out.begin(), out.end()) != out.end()) {
    throw ValueError(fmt::format("{}: a dim appears twice in {}", op, shape_string(dims)));
  }
  return out;
}

// The batch size and names left after reducing over the sorted batch dims
// `over` (kept as size 1 with keepdim).
detail::PieceMeta reduced_meta(const TensorDict& td, const std::vector<int64_t>& over, bool keepdim) {
  detail::PieceMeta meta;
  for (int64_t d = 0; d < td.batch_dims(); ++d) {
    const bool gone = std::binary_search(over.begin(), over.end(), d);
    if (!gone || keepdim) {
      meta.batch_size.push_back(gone ? 1 : td.batch_size()[d]);
      meta.names.push_back(gone ? std::nullopt : td.names()[d]);
    }
  }
  return meta;
}

TensorDict reduced(const TensorDict& td, Reduction op, const std::vector<int64_t>& dims, bool keepdim, int64_t correction) {
  const char* name = reduction_name(op);
  const auto wrapped = batch_dims_of(dims, td.batch_dims(), name);
  detail::PieceMeta meta;
  if (wrapped.empty()) {
    meta.keep_nested_dims = false;  // every leaf becomes a scalar
  } else {
    meta = reduced_meta(td, wrapped, keepdim);
  }
  auto fn = [&](const at::Tensor& t) { return reduce_leaf(op, t, wrapped, keepdim, correction); };
  return TensorDict(TensorDict(detail::map_leaves(*td.impl(), meta, td.device(), detail::OpKind::Fold, fn, name)));
}

}  // namespace

#define TENSORDICT_DEFINE_REDUCTION(name)                                                   \
  TensorDict TensorDict::name(std::vector<int64_t> dims, const ReduceOptions& options) const { \
    return reduced(*this, Reduction::name, dims, options.keepdim, 1);                          \
  }
TENSORDICT_REDUCTIONS(TENSORDICT_DEFINE_REDUCTION)
#undef TENSORDICT_DEFINE_REDUCTION

TensorDict TensorDict::std(std::vector<int64_t> dims, const ReduceOptions& options) const {
  const auto keepdim = options.keepdim;
  const auto correction = options.correction;
  return reduced(*this, Reduction::std, dims, keepdim, correction);
}

TensorDict TensorDict::var(std::vector<int64_t> dims, const ReduceOptions& options) const {
  const auto keepdim = options.keepdim;
  const auto correction = options.correction;
  return reduced(*this, Reduction::var, dims, keepdim, correction);
}

TensorDict TensorDict::norm() const {
  detail::PieceMeta meta;
  meta.keep_nested_dims = false;
  return TensorDict(TensorDict(
      detail::map_leaves(*impl_, meta, device(), detail::OpKind::Fold, [](const at::Tensor& t) { return t.norm(); }, "norm")));
}

TensorDict TensorDict::logsumexp(std::vector<int64_t> dims, const ReduceOptions& options) const {
  const bool keepdim = options.keepdim;
  if (batch_dims() == 0) throw ValueError("logsumexp: the tensordict has no batch dim to reduce over");
  std::vector<int64_t> over = batch_dims_of(dims, batch_dims(), "logsumexp");
  if (over.empty()) {  // tensordict's dim=None: every batch dim
    for (int64_t d = 0; d < batch_dims(); ++d) over.push_back(d);
  }
  auto fn = [&](const at::Tensor& t) { return at::logsumexp(t, over, keepdim); };
  return TensorDict(
      TensorDict(detail::map_leaves(*impl_, reduced_meta(*this, over, keepdim), device(), detail::OpKind::Fold, fn, "logsumexp")));
}

TensorDict TensorDict::quantile(double q, std::optional<int64_t> dim, const QuantileOptions& options) const {
  const auto keepdim = options.keepdim;
  const auto interpolation = options.interpolation;
  const c10::string_view mode(interpolation.data(), interpolation.size());
  if (!dim) {  // tensordict's dim=None: each leaf over all its elements
    detail::PieceMeta meta;
    meta.keep_nested_dims = false;
    auto fn = [&](const at::Tensor& t) { return at::quantile(t, q, c10::nullopt, false, mode); };
    return TensorDict(TensorDict(detail::map_leaves(*impl_, meta, device(), detail::OpKind::Fold, fn, "quantile")));
  }
  const int64_t d = wrap_batch_dim(*dim, batch_dims(), "quantile");
  auto fn = [&](const at::Tensor& t) { return at::quantile(t, q, d, keepdim, mode); };
  return TensorDict(
      TensorDict(detail::map_leaves(*impl_, reduced_meta(*this, {d}, keepdim), device(), detail::OpKind::Fold, fn, "quantile")));
}

namespace {
// (values, indices) pairs: one leaf function filling both pieces, each of
// batch size and names `meta`.
using PairFn = std::function<std::tuple<at::Tensor, at::Tensor>(const at::Tensor&)>;
std::tuple<TensorDict, TensorDict> with_indices(const TensorDict& td, const detail::PieceMeta& meta, const PairFn& pair,
                                                const char* op) {
  auto fn = [&](const at::Tensor& t, at::Tensor* out) { std::tie(out[0], out[1]) = pair(t); };
  auto pieces = detail::map_leaves(*td.impl(), {meta, meta}, td.device(), detail::OpKind::Fold, fn, op);
  return {TensorDict(TensorDict(pieces[0])), TensorDict(TensorDict(pieces[1]))};
}

// cummax / cummin: the batch size is kept.
std::tuple<TensorDict, TensorDict> cumulative(const TensorDict& td, int64_t dim, bool max, const char* op) {
  const int64_t d = wrap_batch_dim(dim, td.batch_dims(), op);
  return with_indices(td, {td.batch_size().vec(), td.names()},
                      [&](const at::Tensor& t) { return max ? at::cummax(t, d) : at::cummin(t, d); }, op);
}

// max / min over one batch dim.
std::tuple<TensorDict, TensorDict> extreme(const TensorDict& td, int64_t dim, bool keepdim, bool max, const char* op) {
  const int64_t d = wrap_batch_dim(dim, td.batch_dims(), op);
  return with_indices(td, reduced_meta(td, {d}, keepdim),
                      [&](const at::Tensor& t) { return max ? at::max(t, d, keepdim) : at::min(t, d, keepdim); }, op);
}
}  // namespace

std::tuple<TensorDict, TensorDict> TensorDict::cummax(int64_t dim) const { return cumulative(*this, dim, true, "cummax"); }

std::tuple<TensorDict, TensorDict> TensorDict::cummin(int64_t dim) const { return cumulative(*this, dim, false, "cummin"); }

std::tuple<TensorDict, TensorDict> TensorDict::max(int64_t dim, const ReduceOptions& options) const {
  const bool keepdim = options.keepdim;
  return extreme(*this, dim, keepdim, true, "max");
}

std::tuple<TensorDict, TensorDict> TensorDict::min(int64_t dim, const ReduceOptions& options) const {
  const bool keepdim = options.keepdim;
  return extreme(*this, dim, keepdim, false, "min");
}

at::Tensor TensorDict::reduce(Reduction op, std::vector<int64_t> dims, const ReduceOptions& options) const {
  const auto keepdim = options.keepdim;
  const auto correction = options.correction;
  const char* name = reduction_name(op);
  const auto wrapped = batch_dims_of(dims, batch_dims(), name);
  // Every leaf as [batch..., features flattened], joined along the last dim,
  // then reduced over the batch dims asked for and that joined dim.
  std::vector<at::Tensor> parts;
  std::vector<int64_t> shape = batch_size().vec();
  shape.push_back(-1);
  detail::for_each_tensor(*impl_, [&](const at::Tensor& t) { parts.push_back(t.reshape(shape)); }, name);
  if (parts.empty()) throw ValueError(fmt::format("{}: the tensordict has no tensor to reduce", name));
  at::ScalarType common = parts.front().scalar_type();
  for (const auto& p : parts) common = at::promote_types(common, p.scalar_type());
  for (auto& p : parts) p = p.to(common);
  const at::Tensor joined = at::cat(parts, -1);
  if (wrapped.empty()) return reduce_leaf(op, joined, {}, false, correction);
  std::vector<int64_t> over = wrapped;
  over.push_back(batch_dims());
  at::Tensor out = reduce_leaf(op, joined, over, true, correction).squeeze(-1);
  if (!keepdim) {
    for (auto it = wrapped.rbegin(); it != wrapped.rend(); ++it) out = out.squeeze(*it);
  }
  return out;
}

namespace {
// all / any over one batch dim.
TensorDict logical_over(const TensorDict& td, int64_t dim, bool all, const char* op) {
  const int64_t d = wrap_batch_dim(dim, td.batch_dims(), op);
  std::vector<int64_t> batch = td.batch_size().vec();
  batch.erase(batch.begin() + d);
  Names names;  // the other dims keep their names (tensordict's _td.py all/any)
  if (td.has_names()) {
    names = td.names();
    names.erase(names.begin() + d);
  }
  auto fn = [&](const at::Tensor& t) { return all ? t.all(d) : t.any(d); };
  return TensorDict(TensorDict(
      detail::map_leaves(*td.impl(), {batch, std::move(names)}, td.device(), detail::OpKind::Fold, fn, op)));
}
}  // namespace

TensorDict TensorDict::all(int64_t dim) const { return logical_over(*this, dim, true, "all"); }

TensorDict TensorDict::any(int64_t dim) const { return logical_over(*this, dim, false, "any"); }

}  // namespace tensordict
