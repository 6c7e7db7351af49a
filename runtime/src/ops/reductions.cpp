// Reductions over batch dims, one leaf function per Reduction.
#include <ATen/ATen.h>

#include <algorithm>
#include <functional>
#include <stdexcept>
#include <string_view>
#include <tuple>

#include "core/format.h"
#include "kinds/dense/map_leaves.h"
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

// `t` reduced over `dims` (all of its dims when empty), the reduced dims kept
// as size 1 with keepdim (every dim when `dims` is empty).
at::Tensor reduce_leaf(Reduction op, const at::Tensor& leaf, const std::vector<int64_t>& over, bool keepdim,
                       const ReduceOptions& options) {
  // tensordict's dtype=: torch.sum(t, dtype=d) is t cast to d, then summed.
  const at::Tensor t = options.dtype ? leaf.to(*options.dtype) : leaf;
  std::vector<int64_t> every;  // keepdim without dims: every dim, kept as size 1
  if (over.empty() && keepdim) {
    for (int64_t d = 0; d < t.dim(); ++d) every.push_back(d);
  }
  const std::vector<int64_t>& dims = every.empty() ? over : every;
  const bool all = dims.empty();
  const int64_t correction = options.correction;
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

// The checks every reduction makes of its options: dtype= is an option of
// torch's sum, mean, nansum, nanmean and prod only (tensordict passes it on).
void check_options(Reduction op, const ReduceOptions& options) {
  if (!options.dtype) return;
  switch (op) {
    case Reduction::sum:
    case Reduction::mean:
    case Reduction::nansum:
    case Reduction::nanmean:
    case Reduction::prod: return;
    default: throw TypeError(fmt::format("{}() got an unexpected keyword argument 'dtype'", reduction_name(op)));
  }
}

// tensordict's message (_cast_reduction).
void check_feature_keepdim(bool keepdim) {
  if (keepdim) throw TypeError("dim='feature' is incompatible with keepdim=True.");
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
// `over` (kept as size 1 with keepdim, keeping their names, as tensordict).
detail::PieceMeta reduced_meta(const TensorDict& td, const std::vector<int64_t>& over, bool keepdim) {
  detail::PieceMeta meta;
  for (int64_t d = 0; d < td.batch_dims(); ++d) {
    const bool gone = std::binary_search(over.begin(), over.end(), d);
    if (!gone || keepdim) {
      meta.batch_size.push_back(gone ? 1 : td.batch_size()[d]);
      meta.names.push_back(td.names()[d]);
    }
  }
  return meta;
}

// A leaf reduced over `dims` (every dim when empty), keeping them with keepdim.
using LeafReduction = c10::function_ref<at::Tensor(const at::Tensor&, const std::vector<int64_t>&, bool)>;

// A first batch dim of size `leading` (unnamed) when given: the n quantiles
// of a 1-d q, which torch.quantile puts before each leaf's dims.
void with_leading_dim(detail::PieceMeta& meta, std::optional<int64_t> leading) {
  if (!leading) return;
  meta.batch_size.insert(meta.batch_size.begin(), *leading);
  if (!meta.names.empty()) meta.names.insert(meta.names.begin(), std::nullopt);
}

// Each leaf reduced over the sorted batch dims `over`, or over all its
// elements when empty: a scalar, or with keepdim every dim as size 1 and a
// batch size of ones at every level (tensordict's sum(keepdim=True)).
// `leading`: with_leading_dim, unless every leaf loses its batch dims.
TensorDict reduced_leaves(const TensorDict& td, const std::vector<int64_t>& over, bool keepdim, LeafReduction fn,
                          const char* name, std::optional<int64_t> leading = std::nullopt) {
  detail::PieceMeta meta;
  if (!over.empty()) {
    meta = reduced_meta(td, over, keepdim);
  } else if (keepdim) {
    meta.batch_size.assign(td.batch_size().size(), 1);
    meta.names = td.names();
    meta.nested_dims_as_ones = true;
  } else {
    meta.keep_nested_dims = false;  // every leaf becomes a scalar
  }
  if (meta.keep_nested_dims) with_leading_dim(meta, leading);
  auto each = [&](const at::Tensor& t) { return fn(t, over, keepdim); };
  return TensorDict(TensorDict(detail::map_leaves(*td.impl(), meta, td.device(), detail::OpKind::Fold, each, name)));
}

// A leaf's feature dims (past the `level_dims` batch dims of the tensordict
// holding it) as one last dim; a leaf without any gets one of size 1.
at::Tensor features_joined(const at::Tensor& t, int64_t level_dims) {
  return t.dim() > level_dims ? t.flatten(level_dims, -1) : t.unsqueeze(-1);
}

// Each leaf reduced over its feature dims; every level keeps its batch size
// (tensordict's dim="feature"), after `leading` (with_leading_dim).
TensorDict reduced_features(const TensorDict& td, LeafReduction fn, const char* name,
                            std::optional<int64_t> leading = std::nullopt) {
  detail::PieceMeta meta{td.batch_size().vec(), td.has_names() ? td.names() : Names{}};
  with_leading_dim(meta, leading);
  auto each = [&](const at::Tensor& t, int64_t level_dims) { return fn(features_joined(t, level_dims), {level_dims}, false); };
  return TensorDict(TensorDict(detail::map_leaves_by_level(*td.impl(), meta, td.device(), detail::OpKind::Fold, each, name)));
}

TensorDict reduced(const TensorDict& td, Reduction op, const std::vector<int64_t>& dims, const ReduceOptions& options) {
  check_options(op, options);
  const char* name = reduction_name(op);
  auto fn = [&](const at::Tensor& t, const std::vector<int64_t>& over, bool keepdim) {
    return reduce_leaf(op, t, over, keepdim, options);
  };
  return reduced_leaves(td, batch_dims_of(dims, td.batch_dims(), name), options.keepdim, fn, name);
}

TensorDict reduced(const TensorDict& td, Reduction op, FeatureDims, const ReduceOptions& options) {
  check_options(op, options);
  check_feature_keepdim(options.keepdim);
  auto fn = [&](const at::Tensor& t, const std::vector<int64_t>& over, bool) { return reduce_leaf(op, t, over, false, options); };
  return reduced_features(td, fn, reduction_name(op));
}

// Every tensor leaf, `prepare`d, joined along `dim` into one tensor of their
// promoted dtype (reduce=True). Leaves of different numbers of dims cannot be
// joined: the error names two of them.
at::Tensor joined_leaves(const TensorDict& td, int64_t dim, c10::function_ref<at::Tensor(const at::Tensor&)> prepare,
                         const char* name) {
  std::vector<at::Tensor> parts;
  detail::for_each_tensor(*td.impl(), [&](const at::Tensor& t) { parts.push_back(prepare(t)); }, name);
  if (parts.empty()) throw ValueError(fmt::format("{}: the tensordict has no tensor to reduce", name));
  at::ScalarType common = parts.front().scalar_type();
  for (const auto& p : parts) common = at::promote_types(common, p.scalar_type());
  std::optional<std::size_t> odd;
  for (std::size_t i = 0; i < parts.size(); ++i) {
    parts[i] = parts[i].to(common);
    if (parts[i].dim() != parts.front().dim() && !odd) odd = i;
  }
  if (odd) {
    std::vector<NestedKey> keys;
    for (const auto& [key, value] : td.items({.include_nested = true, .leaves_only = true})) {
      if (value.is_tensor()) keys.push_back(key);
    }
    throw RuntimeError(fmt::format(
        "{}: reduce over batch dims joins the leaves along dim {}, so they need the same number of dims: {} has {}, {} has {}",
        name, dim, keys.front().repr(), parts.front().dim(), keys.at(*odd).repr(), parts[*odd].dim()));
  }
  return at::cat(parts, dim);
}

// reduce=True over all elements, batch dims or feature dims.
at::Tensor reduced_together(const TensorDict& td, const std::vector<int64_t>& dims, bool keepdim, LeafReduction fn,
                            const char* name) {
  const auto over = batch_dims_of(dims, td.batch_dims(), name);
  if (over.empty()) {  // tensordict: every element, keepdim or not
    return fn(joined_leaves(td, 0, [](const at::Tensor& t) { return t.reshape({-1}); }, name), {}, false);
  }
  return fn(joined_leaves(td, over.front(), [](const at::Tensor& t) { return t; }, name), over, keepdim);
}

at::Tensor reduced_together(const TensorDict& td, FeatureDims, LeafReduction fn, const char* name) {
  const int64_t dims = td.batch_dims();
  const at::Tensor joined = joined_leaves(td, -1, [&](const at::Tensor& t) { return features_joined(t, dims); }, name);
  return fn(joined, {dims}, false);
}

}  // namespace

#define TENSORDICT_DEFINE_REDUCTION(name)                                                     \
  TensorDict TensorDict::name(std::vector<int64_t> dims, const ReduceOptions& options) const { \
    return reduced(*this, Reduction::name, dims, options);                                     \
  }                                                                                            \
  TensorDict TensorDict::name(FeatureDims, const ReduceOptions& options) const {              \
    return reduced(*this, Reduction::name, feature, options);                                  \
  }
TENSORDICT_REDUCTIONS(TENSORDICT_DEFINE_REDUCTION)
TENSORDICT_DEFINE_REDUCTION(std)
TENSORDICT_DEFINE_REDUCTION(var)
#undef TENSORDICT_DEFINE_REDUCTION

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

namespace {
// torch.quantile of `t` over `dims` (at most one; every element when empty);
// `Q`: a double or a tensor of quantiles.
template <class Q>
at::Tensor quantile_leaf(const at::Tensor& t, const Q& q, const std::vector<int64_t>& dims, bool keepdim,
                         std::string_view interpolation) {
  const c10::string_view mode(interpolation.data(), interpolation.size());
  if (dims.empty()) return at::quantile(t, q, c10::nullopt, keepdim, mode);
  return at::quantile(t, q, dims.front(), keepdim, mode);
}

std::vector<int64_t> quantile_dims(std::optional<int64_t> dim) {
  return dim ? std::vector<int64_t>{*dim} : std::vector<int64_t>{};
}

// The dim a 1-d q of n quantiles adds before each leaf's (none for a
// scalar q). A tensor q is checked once, before any leaf, with libtorch's
// messages, so that a tensordict without leaves refuses it too.
std::optional<int64_t> quantile_leading(double) { return std::nullopt; }
std::optional<int64_t> quantile_leading(const at::Tensor& q) {
  if (!q.defined()) throw ValueError("quantile() q is an undefined tensor");
  if (q.dim() > 1) throw RuntimeError("quantile() q must be a scalar or 1D tensor");
  if (!at::logical_and(q.ge(0), q.le(1)).all().item<bool>()) {
    throw RuntimeError("quantile() q values must be in the range [0, 1]");
  }
  return q.dim() == 1 ? std::optional<int64_t>(q.size(0)) : std::nullopt;
}

template <class Q>
TensorDict quantile_over(const TensorDict& td, const Q& q, std::optional<int64_t> dim, const QuantileOptions& options) {
  const auto leading = quantile_leading(q);
  auto fn = [&](const at::Tensor& t, const std::vector<int64_t>& over, bool keepdim) {
    return quantile_leaf(t, q, over, keepdim, options.interpolation);
  };
  const auto over = batch_dims_of(quantile_dims(dim), td.batch_dims(), "quantile");
  return reduced_leaves(td, over, options.keepdim, fn, "quantile", leading);
}

template <class Q>
TensorDict quantile_over_features(const TensorDict& td, const Q& q, const QuantileOptions& options) {
  check_feature_keepdim(options.keepdim);
  const auto leading = quantile_leading(q);
  auto fn = [&](const at::Tensor& t, const std::vector<int64_t>& over, bool) {
    return quantile_leaf(t, q, over, false, options.interpolation);
  };
  return reduced_features(td, fn, "quantile", leading);
}

template <class Q>
at::Tensor quantile_together(const TensorDict& td, const Q& q, std::optional<int64_t> dim, const QuantileOptions& options) {
  quantile_leading(q);  // checks q: the result's shape is libtorch's
  auto fn = [&](const at::Tensor& t, const std::vector<int64_t>& over, bool keepdim) {
    return quantile_leaf(t, q, over, keepdim, options.interpolation);
  };
  return reduced_together(td, quantile_dims(dim), options.keepdim, fn, "quantile");
}

template <class Q>
at::Tensor quantile_features_together(const TensorDict& td, const Q& q, const QuantileOptions& options) {
  check_feature_keepdim(options.keepdim);
  quantile_leading(q);  // checks q: the result's shape is libtorch's
  auto fn = [&](const at::Tensor& t, const std::vector<int64_t>& over, bool) {
    return quantile_leaf(t, q, over, false, options.interpolation);
  };
  return reduced_together(td, feature, fn, "quantile");
}
}  // namespace

TensorDict TensorDict::quantile(double q, std::optional<int64_t> dim, const QuantileOptions& options) const {
  return quantile_over(*this, q, dim, options);
}
TensorDict TensorDict::quantile(const at::Tensor& q, std::optional<int64_t> dim, const QuantileOptions& options) const {
  return quantile_over(*this, q, dim, options);
}
TensorDict TensorDict::quantile(double q, FeatureDims, const QuantileOptions& options) const {
  return quantile_over_features(*this, q, options);
}
TensorDict TensorDict::quantile(const at::Tensor& q, FeatureDims, const QuantileOptions& options) const {
  return quantile_over_features(*this, q, options);
}
at::Tensor TensorDict::reduce_quantile(double q, std::optional<int64_t> dim, const QuantileOptions& options) const {
  return quantile_together(*this, q, dim, options);
}
at::Tensor TensorDict::reduce_quantile(const at::Tensor& q, std::optional<int64_t> dim, const QuantileOptions& options) const {
  return quantile_together(*this, q, dim, options);
}
at::Tensor TensorDict::reduce_quantile(double q, FeatureDims, const QuantileOptions& options) const {
  return quantile_features_together(*this, q, options);
}
at::Tensor TensorDict::reduce_quantile(const at::Tensor& q, FeatureDims, const QuantileOptions& options) const {
  return quantile_features_together(*this, q, options);
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
  check_options(op, options);
  auto fn = [&](const at::Tensor& t, const std::vector<int64_t>& over, bool keepdim) {
    return reduce_leaf(op, t, over, keepdim, options);
  };
  return reduced_together(*this, dims, options.keepdim, fn, reduction_name(op));
}

at::Tensor TensorDict::reduce(Reduction op, FeatureDims, const ReduceOptions& options) const {
  check_options(op, options);
  check_feature_keepdim(options.keepdim);
  auto fn = [&](const at::Tensor& t, const std::vector<int64_t>& over, bool) { return reduce_leaf(op, t, over, false, options); };
  return reduced_together(*this, feature, fn, reduction_name(op));
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
