// Batch-shape plans (shape_plan.h): the checks, result batch sizes and names
// of tensordict's shape ops, written once for the dynamic and typed layers.
#include "tensordict/detail/shape_plan.h"
#include "tensordict/errors.h"

#include <ATen/ATen.h>
#include <ATen/InferSize.h>

#include <algorithm>
#include <functional>
#include <numeric>
#include <stdexcept>

#include "core/format.h"
#include "tensordict/batch_index.h"
#include "tensordict/detail/tensorclass_support.h"

namespace tensordict::shape {

namespace {

BatchDims dims_of(at::IntArrayRef sizes) { return BatchDims(sizes.begin(), sizes.end()); }

// `names` edited the way the op moves dims; unnamed stays unnamed.
template <class Edit>
Names names_after(const Names& names, Edit&& edit) {
  if (std::none_of(names.begin(), names.end(), [](const auto& n) { return n.has_value(); })) return {};
  Names out = names;
  edit(out);
  return out;
}

// permute and transpose report a dim out of range as tensordict does, a
// ValueError (std::invalid_argument), where indexing-like ops give IndexError.
int64_t wrap_dim_as_invalid(int64_t dim, int64_t batch_dims, const char* op) {
  try {
    return wrap_batch_dim(dim, batch_dims, op);
  } catch (const std::out_of_range& e) {
    throw ValueError(e.what());
  }
}

BatchDims infer_shape(at::IntArrayRef shape, int64_t numel, at::IntArrayRef batch, const char* op) {
  try {
    return dims_of(at::infer_size(shape, numel));
  } catch (const std::exception&) {  // c10::Error or std::runtime_error, depending on the libtorch version
    throw RuntimeError(fmt::format("{}: shape {} is invalid for a batch size {} ({} elements)", op, shape_string(shape),
                                         shape_string(batch), numel));
  }
}

int64_t numel_of(at::IntArrayRef batch) {
  return std::accumulate(batch.begin(), batch.end(), int64_t{1}, std::multiplies<>());
}

int64_t ndim(at::IntArrayRef batch) { return static_cast<int64_t>(batch.size()); }

}  // namespace

Reshape::Reshape(at::IntArrayRef batch, at::IntArrayRef shape, Mode mode)
    : Planned{{}, {}, mode == Mode::View ? "view" : "reshape"}, source_dims_(ndim(batch)), mode_(mode) {
  detail::require_known_sizes(batch, op);
  this->batch = infer_shape(shape, numel_of(batch), batch, op);
}

at::Tensor Reshape::operator()(const at::Tensor& leaf) const {
  if (mode_ == Mode::View) return leaf.view(detail::with_features(batch, leaf, source_dims_));
  return detail::reshape_leaf(leaf, batch, source_dims_);
}

Permute::Permute(at::IntArrayRef batch, const Names& names, at::IntArrayRef dims) : Planned{{}, {}, "permute"} {
  const int64_t nb = ndim(batch);
  if (ndim(dims) != nb) {
    throw ValueError(fmt::format("permute: got {} dims {} for {} batch dims", dims.size(), shape_string(dims), nb));
  }
  std::vector<bool> seen(nb, false);
  for (int64_t d : dims) {
    const int64_t w = wrap_dim_as_invalid(d, nb, "permute");
    if (seen[w]) throw ValueError(fmt::format("permute: dim {} is repeated in {}", d, shape_string(dims)));
    seen[w] = true;
    order_.push_back(w);
    this->batch.push_back(batch[w]);
  }
  this->names = names_after(names, [&](Names& n) {
    Names permuted;
    for (int64_t d : order_) permuted.push_back(n[d]);
    n = std::move(permuted);
  });
}

at::Tensor Permute::operator()(const at::Tensor& leaf) const {
  std::vector<int64_t> full = order_;
  for (int64_t d = ndim(order_); d < leaf.dim(); ++d) full.push_back(d);
  return leaf.permute(full);
}

Transpose::Transpose(at::IntArrayRef batch, const Names& names, int64_t dim0, int64_t dim1)
    : Planned{dims_of(batch), {}, "transpose"},
      d0_(wrap_dim_as_invalid(dim0, ndim(batch), "transpose")),
      d1_(wrap_dim_as_invalid(dim1, ndim(batch), "transpose")) {
  std::swap(this->batch[d0_], this->batch[d1_]);
  this->names = names_after(names, [&](Names& n) { std::swap(n[d0_], n[d1_]); });
}

Squeeze::Squeeze(at::IntArrayRef batch, const Names& names, std::optional<int64_t> dim)
    : Planned{dims_of(batch), {}, "squeeze"} {
  if (dim) {
    const int64_t d = wrap_batch_dim(*dim, ndim(batch), "squeeze");
    if (batch[d] == 1) drop_.push_back(d);
  } else {
    for (int64_t d = ndim(batch) - 1; d >= 0; --d) {
      if (batch[d] == 1) drop_.push_back(d);
    }
  }
  for (int64_t d : drop_) this->batch.erase(this->batch.begin() + d);
  this->names = names_after(names, [&](Names& n) {
    for (int64_t d : drop_) n.erase(n.begin() + d);
  });
}

at::Tensor Squeeze::operator()(const at::Tensor& leaf) const {
  at::Tensor out = leaf;
  for (int64_t d : drop_) out = out.squeeze(d);
  return out;
}

Unsqueeze::Unsqueeze(at::IntArrayRef batch, const Names& names, int64_t dim)
    : Planned{dims_of(batch), {}, "unsqueeze"}, d_(wrap_batch_dim(dim, ndim(batch), "unsqueeze", 1)) {
  this->batch.insert(this->batch.begin() + d_, 1);
  this->names = names_after(names, [&](Names& n) { n.insert(n.begin() + d_, std::nullopt); });
}

Expand::Expand(at::IntArrayRef batch, const Names& names, at::IntArrayRef shape, Op rule)
    : Planned{dims_of(shape), {}, rule == BroadcastTo ? "broadcast_to" : "expand"}, source_dims_(ndim(batch)) {
  detail::require_known_sizes(batch, op);
  const bool is_broadcast_to = rule == BroadcastTo;
  const int64_t n = ndim(shape);
  auto fail = [&] {
    throw RuntimeError(fmt::format("{}: batch size {} cannot be expanded to {}", op, shape_string(batch), shape_string(shape)));
  };
  if (n < source_dims_) fail();
  for (int64_t i = 0; i < n; ++i) {
    const int64_t old_dim = i - (n - source_dims_);
    auto& target = this->batch[i];
    if (old_dim < 0) {
      if (target < 0) fail();
      continue;
    }
    const int64_t old = batch[old_dim];
    if (target == -1 && !is_broadcast_to) target = old;  // broadcast_to takes no -1
    if (target != old && old != 1) fail();
  }
  if (!is_broadcast_to) {
    this->names = names_after(names, [&](Names& nm) { nm.insert(nm.begin(), this->batch.size() - nm.size(), std::nullopt); });
  }
}

at::Tensor Expand::operator()(const at::Tensor& leaf) const {
  return leaf.expand(detail::with_features(batch, leaf, source_dims_));
}

Flatten::Flatten(at::IntArrayRef batch, const Names& names, int64_t start_dim, int64_t end_dim)
    : Planned{{}, {}, "flatten"}, start_(0), end_(0) {
  detail::require_known_sizes(batch, op);
  if (batch.empty() && start_dim == 0 && (end_dim == -1 || end_dim == 0)) {
    from_scalar_batch_ = true;
    this->batch = {1};
    return;
  }
  start_ = wrap_batch_dim(start_dim, ndim(batch), "flatten");
  end_ = wrap_batch_dim(end_dim, ndim(batch), "flatten");
  if (start_ > end_) throw ValueError(fmt::format("flatten: start_dim {} comes after end_dim {}", start_dim, end_dim));
  this->batch.assign(batch.begin(), batch.begin() + start_);
  this->batch.push_back(numel_of(batch.slice(start_, end_ - start_ + 1)));
  this->batch.append(batch.begin() + end_ + 1, batch.end());
  this->names = names_after(names, [&](Names& n) {
    n.erase(n.begin() + start_, n.begin() + end_ + 1);
    n.insert(n.begin() + start_, std::nullopt);
  });
}

at::Tensor Flatten::operator()(const at::Tensor& leaf) const {
  return from_scalar_batch_ ? leaf.unsqueeze(0) : leaf.flatten(start_, end_);
}

Unflatten::Unflatten(at::IntArrayRef batch, const Names& names, int64_t dim, at::IntArrayRef sizes)
    : Planned{{}, {}, "unflatten"}, source_dims_(ndim(batch)) {
  detail::require_known_sizes(batch, op);
  const int64_t d = wrap_batch_dim(dim, ndim(batch), "unflatten");
  const BatchDims split = infer_shape(sizes, batch[d], batch.slice(d, 1), "unflatten");
  this->batch.assign(batch.begin(), batch.begin() + d);
  this->batch.append(split.begin(), split.end());
  this->batch.append(batch.begin() + d + 1, batch.end());
  this->names = names_after(names, [&](Names& n) {
    n.erase(n.begin() + d);
    n.insert(n.begin() + d, split.size(), std::nullopt);
  });
}

at::Tensor Unflatten::operator()(const at::Tensor& leaf) const {
  return leaf.reshape(detail::with_features(batch, leaf, source_dims_));
}

Narrow::Narrow(at::IntArrayRef batch, const Names& names, int64_t dim, int64_t start, int64_t length)
    : Planned{dims_of(batch), names_after(names, [](Names&) {}), "narrow"},
      d_(wrap_batch_dim(dim, ndim(batch), "narrow")),
      start_(start < 0 ? start + batch[d_] : start),
      length_(length) {
  if (start_ < 0 || length < 0 || start_ + length > batch[d_]) {
    throw IndexError(fmt::format("narrow: elements [{}, {} + {}) are outside batch dim {} of size {}", start, start,
                                 length, d_, batch[d_]));
  }
  this->batch[d_] = length;
}

Unbind::Unbind(at::IntArrayRef batch, const Names& names, int64_t dim)
    : PlannedPieces{{}, {}, "unbind"}, d_(wrap_batch_dim(dim, ndim(batch), "unbind")) {
  detail::require_known_sizes(batch, op);
  BatchDims piece = dims_of(batch);
  piece.erase(piece.begin() + d_);
  batches.assign(batch[d_], piece);
  this->names = names_after(names, [&](Names& n) { n.erase(n.begin() + d_); });
}

void Unbind::operator()(const at::Tensor& leaf, at::Tensor* out) const {
  auto parts = leaf.unbind(d_);
  std::move(parts.begin(), parts.end(), out);
}

Split::Split(at::IntArrayRef batch, const Names& names, std::vector<int64_t> sizes, int64_t dim, const char* op)
    : PlannedPieces{{}, names_after(names, [](Names&) {}), op}, sizes_(std::move(sizes)), d_(wrap_batch_dim(dim, ndim(batch), op)) {
  const int64_t total = std::accumulate(sizes_.begin(), sizes_.end(), int64_t{0});
  if (total != batch[d_]) {
    throw RuntimeError(fmt::format("{}: sizes {} sum to {} but batch dim {} has size {}", op,
                                         shape_string(sizes_), total, d_, batch[d_]));
  }
  for (int64_t s : sizes_) {
    if (s < 0) throw ValueError(fmt::format("{}: negative size in {}", op, shape_string(sizes_)));
    batches.push_back(dims_of(batch));
    batches.back()[d_] = s;
  }
}

void Split::operator()(const at::Tensor& leaf, at::Tensor* out) const {
  auto parts = leaf.split_with_sizes(sizes_, d_);
  std::move(parts.begin(), parts.end(), out);
}

std::vector<int64_t> split_sizes(int64_t n, int64_t split_size) {
  if (split_size <= 0 && n > 0) throw ValueError(fmt::format("split: split_size must be positive, got {}", split_size));
  // torch's rule: full pieces of split_size, the last one shorter; one piece
  // when the dim is empty.
  std::vector<int64_t> sizes;
  for (int64_t start = 0; start < n; start += split_size) sizes.push_back(std::min(split_size, n - start));
  if (sizes.empty()) sizes.push_back(0);
  return sizes;
}

std::vector<int64_t> chunk_sizes(int64_t n, int64_t chunks) {
  if (chunks <= 0) throw ValueError(fmt::format("chunk: chunks must be positive, got {}", chunks));
  if (n == 0) return std::vector<int64_t>(chunks, 0);  // torch gives `chunks` empty pieces
  return split_sizes(n, (n + chunks - 1) / chunks);
}

std::vector<int64_t> tensor_split_sizes(int64_t n, int64_t sections) {
  if (sections <= 0) {
    throw ValueError(fmt::format("tensor_split: number of sections must be greater than 0, but was {}", sections));
  }
  std::vector<int64_t> sizes;
  for (int64_t i = 0; i < sections; ++i) sizes.push_back(n / sections + (i < n % sections ? 1 : 0));
  return sizes;
}

std::vector<int64_t> tensor_split_sizes(int64_t n, at::IntArrayRef indices) {
  // torch's rule for each cut: clamped to the dim, a piece never negative.
  std::vector<int64_t> sizes;
  int64_t start = 0;
  for (int64_t cut : indices) {
    const int64_t end = std::clamp(cut < 0 ? cut + n : cut, int64_t{0}, n);
    sizes.push_back(std::max<int64_t>(end - start, 0));
    start = std::max(start, end);
  }
  sizes.push_back(n - start);
  return sizes;
}

Combined stacked(const std::vector<at::IntArrayRef>& batches, const std::vector<const Names*>& names, int64_t dim) {
  const at::IntArrayRef reference = batches.front();
  for (std::size_t i = 1; i < batches.size(); ++i) {
    if (batches[i] != reference) {
      throw RuntimeError(fmt::format("stack: tensordict {} has batch size {} but tensordict 0 has {}; stacked tensordicts need equal batch sizes (lazy_stack accepts different ones)",
                                           i, shape_string(batches[i]), shape_string(reference)));
    }
  }
  Combined out{dims_of(reference), {}, wrap_batch_dim(dim, ndim(reference), "stack", 1)};
  out.batch.insert(out.batch.begin() + out.dim, static_cast<int64_t>(batches.size()));
  // Sources with the same names keep them; otherwise the result is unnamed.
  const bool same = std::all_of(names.begin(), names.end(), [&](const Names* n) { return *n == *names.front(); });
  if (same) out.names = names_after(*names.front(), [&](Names& n) { n.insert(n.begin() + out.dim, std::nullopt); });
  return out;
}

Combined concatenated(const std::vector<at::IntArrayRef>& batches, const Names& first_names, int64_t dim) {
  const at::IntArrayRef reference = batches.front();
  Combined out{dims_of(reference), names_after(first_names, [](Names&) {}), wrap_batch_dim(dim, ndim(reference), "cat")};
  out.batch[out.dim] = 0;
  for (std::size_t i = 0; i < batches.size(); ++i) {
    const at::IntArrayRef b = batches[i];
    bool ok = b.size() == reference.size();
    for (std::size_t j = 0; ok && j < b.size(); ++j) ok = static_cast<int64_t>(j) == out.dim || b[j] == reference[j];
    if (!ok) {
      throw RuntimeError(fmt::format("cat: tensordict {} has batch size {} but tensordict 0 has {}; batch sizes must match except in dim {}",
                                           i, shape_string(b), shape_string(reference), out.dim));
    }
    out.batch[out.dim] += b[out.dim];
  }
  return out;
}

Names refined_names(const Names& current, const Names& wanted) {
  const std::size_t nb = current.size();
  const auto ellipsis = std::find(wanted.begin(), wanted.end(), std::optional<std::string>("..."));
  Names spread;
  if (ellipsis == wanted.end()) {
    spread = wanted;
  } else {
    if (std::find(ellipsis + 1, wanted.end(), std::optional<std::string>("...")) != wanted.end()) {
      throw ValueError("refine_names: at most one '...' is allowed");
    }
    const std::size_t listed = wanted.size() - 1;
    if (listed > nb) throw ValueError(fmt::format("refine_names: {} names for {} batch dims", listed, nb));
    spread.assign(wanted.begin(), ellipsis);
    spread.insert(spread.end(), nb - listed, std::nullopt);
    spread.insert(spread.end(), ellipsis + 1, wanted.end());
  }
  if (spread.size() != nb) throw ValueError(fmt::format("refine_names: {} names for {} batch dims", spread.size(), nb));
  Names refined = current;
  for (std::size_t d = 0; d < nb; ++d) {
    if (!spread[d]) continue;
    if (refined[d] && refined[d] != spread[d]) {
      throw RuntimeError(
          fmt::format("refine_names: dim {} is named '{}' and cannot be refined to '{}'", d, *refined[d], *spread[d]));
    }
    refined[d] = spread[d];
  }
  return refined;
}

std::string names_repr(const Names& names) {
  std::vector<std::string> parts;
  for (const auto& n : names) parts.push_back(n ? "'" + *n + "'" : "None");
  return fmt::format("[{}]", fmt::join(parts, ", "));
}

void check_unique_names(const Names& names) {
  for (std::size_t i = 0; i < names.size(); ++i) {
    for (std::size_t j = i + 1; names[i] && j < names.size(); ++j) {
      if (names[i] == names[j]) throw ValueError(fmt::format("Some dimension names are non-unique: {}.", names_repr(names)));
    }
  }
}

}  // namespace tensordict::shape
