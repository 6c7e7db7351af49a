// Shape ops over batch dims. Each computes the new batch size once, then maps
// every leaf with the same op extended over the leaf's feature dims.
#include <ATen/ATen.h>
#include <ATen/InferSize.h>

#include <numeric>
#include <stdexcept>

#include "format.h"
#include "map_leaves.h"
#include "tensordict/dense.h"

namespace tensordict {


namespace {

// `batch` followed by the leaf's dims past the first `batch_dims`.
std::vector<int64_t> with_features(at::IntArrayRef batch, const at::Tensor& leaf, int64_t batch_dims) {
  std::vector<int64_t> shape(batch.begin(), batch.end());
  const auto feature = leaf.sizes().slice(batch_dims);
  shape.insert(shape.end(), feature.begin(), feature.end());
  return shape;
}

// The names of the result of a shape op: `edit` rewrites the source's names
// the way the op rewrites dims; an unnamed tensordict stays unnamed.
Names names_after(const TensorDictBase& td, c10::function_ref<void(Names&)> edit) {
  if (!td.has_names()) return {};
  Names names = td.names();
  edit(names);
  return names;
}

TensorDict mapped(const TensorDictBase& td, std::vector<int64_t> batch, Names names,
                  c10::function_ref<at::Tensor(const at::Tensor&)> fn, const char* op) {
  TensorDict out(TensorDictBase(
      detail::map_leaves(*td.impl(), {std::move(batch), std::move(names)}, td.device(), detail::OpKind::Batch, fn, op)));
  // tensordict's shape ops keep the lock (_fast_apply(propagate_lock=True)):
  // the result is the same data seen through another shape.
  if (td.is_locked()) out.lock_();
  return out;
}

std::vector<TensorDict> mapped_pieces(const TensorDictBase& td, const std::vector<std::vector<int64_t>>& batches,
                                      const Names& names, detail::LeafFn fn, const char* op) {
  std::vector<detail::PieceMeta> metas;
  metas.reserve(batches.size());
  for (const auto& b : batches) metas.push_back({b, names});
  std::vector<TensorDict> out;
  for (auto& impl : detail::map_leaves(*td.impl(), metas, td.device(), detail::OpKind::Batch, fn, op)) out.emplace_back(TensorDictBase(std::move(impl)));
  return out;
}

std::vector<int64_t> infer_shape(at::IntArrayRef shape, int64_t numel, at::IntArrayRef batch, const char* op) {
  try {
    return at::infer_size(shape, numel);
  } catch (const std::exception&) {  // c10::Error or std::runtime_error, depending on the libtorch version
    throw std::runtime_error(fmt::format("{}: shape {} is invalid for a batch size {} ({} elements)", op, shape_string(shape),
                                         shape_string(batch), numel));
  }
}

}  // namespace

TensorDict TensorDictBase::reshape(at::IntArrayRef shape) const {
  const auto batch = infer_shape(shape, numel(), batch_size(), "reshape");
  const int64_t nb = batch_dims();
  return mapped(*this, batch, {}, [&](const at::Tensor& t) { return detail::reshape_leaf(t, batch, nb); }, "reshape");
}

TensorDict TensorDictBase::view(at::IntArrayRef shape) const {
  const auto batch = infer_shape(shape, numel(), batch_size(), "view");
  const int64_t nb = batch_dims();
  return mapped(*this, batch, {}, [&](const at::Tensor& t) { return t.view(with_features(batch, t, nb)); }, "view");
}

TensorDict TensorDictBase::permute(at::IntArrayRef dims) const {
  const int64_t nb = batch_dims();
  if (static_cast<int64_t>(dims.size()) != nb) {
    throw std::invalid_argument(fmt::format("permute: got {} dims {} for {} batch dims", dims.size(), shape_string(dims), nb));
  }
  std::vector<int64_t> order;
  std::vector<bool> seen(nb, false);
  std::vector<int64_t> batch;
  for (int64_t d : dims) {
    const int64_t w = wrap_batch_dim(d, nb, "permute");
    if (seen[w]) throw std::invalid_argument(fmt::format("permute: dim {} is repeated in {}", d, shape_string(dims)));
    seen[w] = true;
    order.push_back(w);
    batch.push_back(batch_size()[w]);
  }
  const Names names = names_after(*this, [&](Names& n) {
    Names permuted;
    for (int64_t d : order) permuted.push_back(n[d]);
    n = permuted;
  });
  return mapped(*this, batch, names, [&](const at::Tensor& t) {
    std::vector<int64_t> full = order;
    for (int64_t d = nb; d < t.dim(); ++d) full.push_back(d);
    return t.permute(full);
  }, "permute");
}

TensorDict TensorDictBase::transpose(int64_t dim0, int64_t dim1) const {
  const int64_t d0 = wrap_batch_dim(dim0, batch_dims(), "transpose");
  const int64_t d1 = wrap_batch_dim(dim1, batch_dims(), "transpose");
  std::vector<int64_t> batch = batch_size().vec();
  std::swap(batch[d0], batch[d1]);
  const Names names = names_after(*this, [&](Names& n) { std::swap(n[d0], n[d1]); });
  return mapped(*this, batch, names, [&](const at::Tensor& t) { return t.transpose(d0, d1); }, "transpose");
}

TensorDict TensorDictBase::squeeze(std::optional<int64_t> dim) const {
  std::vector<int64_t> drop;  // batch dims to remove, highest first
  if (dim) {
    const int64_t d = wrap_batch_dim(*dim, batch_dims(), "squeeze");
    if (batch_size()[d] == 1) drop.push_back(d);
  } else {
    for (int64_t d = batch_dims() - 1; d >= 0; --d) {
      if (batch_size()[d] == 1) drop.push_back(d);
    }
  }
  std::vector<int64_t> batch = batch_size().vec();
  for (int64_t d : drop) batch.erase(batch.begin() + d);
  const Names names = names_after(*this, [&](Names& n) {
    for (int64_t d : drop) n.erase(n.begin() + d);
  });
  return mapped(*this, batch, names, [&](const at::Tensor& t) {
    at::Tensor out = t;
    for (int64_t d : drop) out = out.squeeze(d);
    return out;
  }, "squeeze");
}

TensorDict TensorDictBase::unsqueeze(int64_t dim) const {
  const int64_t d = wrap_batch_dim(dim, batch_dims(), "unsqueeze", 1);
  std::vector<int64_t> batch = batch_size().vec();
  batch.insert(batch.begin() + d, 1);
  const Names names = names_after(*this, [&](Names& n) { n.insert(n.begin() + d, std::nullopt); });
  return mapped(*this, batch, names, [&](const at::Tensor& t) { return t.unsqueeze(d); }, "unsqueeze");
}

TensorDict TensorDictBase::expand(at::IntArrayRef shape) const {
  const int64_t nb = batch_dims();
  const int64_t n = static_cast<int64_t>(shape.size());
  auto fail = [&] {
    throw std::runtime_error(fmt::format("expand: batch size {} cannot be expanded to {}", shape_string(batch_size()), shape_string(shape)));
  };
  if (n < nb) fail();
  std::vector<int64_t> batch = shape.vec();
  for (int64_t i = 0; i < n; ++i) {
    const int64_t old_dim = i - (n - nb);
    if (old_dim < 0) {
      if (batch[i] < 0) fail();
      continue;
    }
    const int64_t old = batch_size()[old_dim];
    if (batch[i] == -1) batch[i] = old;
    if (batch[i] != old && old != 1) fail();
  }
  const Names names = names_after(*this, [&](Names& n) { n.insert(n.begin(), batch.size() - n.size(), std::nullopt); });
  return mapped(*this, batch, names, [&](const at::Tensor& t) {
    std::vector<int64_t> full = batch;
    const auto feature = t.sizes().slice(nb);
    full.insert(full.end(), feature.begin(), feature.end());
    return t.expand(full);
  }, "expand");
}

TensorDict TensorDictBase::flatten(int64_t start_dim, int64_t end_dim) const {
  // As torch.flatten of a 0-dim tensor (tensordict's base.py flatten): batch [1].
  if (batch_dims() == 0 && start_dim == 0 && (end_dim == -1 || end_dim == 0)) return unsqueeze(0);
  const int64_t s = wrap_batch_dim(start_dim, batch_dims(), "flatten");
  const int64_t e = wrap_batch_dim(end_dim, batch_dims(), "flatten");
  if (s > e) throw std::invalid_argument(fmt::format("flatten: start_dim {} comes after end_dim {}", start_dim, end_dim));
  std::vector<int64_t> batch(batch_size().begin(), batch_size().begin() + s);
  const auto merged = batch_size().slice(s, e - s + 1);
  batch.push_back(std::accumulate(merged.begin(), merged.end(), int64_t{1}, std::multiplies<>()));
  batch.insert(batch.end(), batch_size().begin() + e + 1, batch_size().end());
  const Names names = names_after(*this, [&](Names& n) {
    n.erase(n.begin() + s, n.begin() + e + 1);
    n.insert(n.begin() + s, std::nullopt);
  });
  return mapped(*this, batch, names, [&](const at::Tensor& t) { return t.flatten(s, e); }, "flatten");
}

TensorDict TensorDictBase::unflatten(int64_t dim, at::IntArrayRef sizes) const {
  const int64_t d = wrap_batch_dim(dim, batch_dims(), "unflatten");
  const auto split = infer_shape(sizes, batch_size()[d], batch_size().slice(d, 1), "unflatten");
  std::vector<int64_t> batch(batch_size().begin(), batch_size().begin() + d);
  batch.insert(batch.end(), split.begin(), split.end());
  batch.insert(batch.end(), batch_size().begin() + d + 1, batch_size().end());
  const int64_t nb = batch_dims();
  const Names names = names_after(*this, [&](Names& n) {
    n.erase(n.begin() + d);
    n.insert(n.begin() + d, split.size(), std::nullopt);
  });
  return mapped(*this, batch, names, [&](const at::Tensor& t) { return t.reshape(with_features(batch, t, nb)); }, "unflatten");
}

std::vector<TensorDict> TensorDictBase::unbind(int64_t dim) const {
  const int64_t d = wrap_batch_dim(dim, batch_dims(), "unbind");
  std::vector<int64_t> piece = batch_size().vec();
  const int64_t n = piece[d];
  piece.erase(piece.begin() + d);
  const Names names = names_after(*this, [&](Names& nm) { nm.erase(nm.begin() + d); });
  return mapped_pieces(*this, std::vector<std::vector<int64_t>>(n, piece), names, [&](const at::Tensor& t, at::Tensor* out) {
    auto parts = t.unbind(d);
    std::move(parts.begin(), parts.end(), out);
  }, "unbind");
}

std::vector<TensorDict> TensorDictBase::split(at::IntArrayRef split_sizes, int64_t dim) const {
  const int64_t d = wrap_batch_dim(dim, batch_dims(), "split");
  const int64_t total = std::accumulate(split_sizes.begin(), split_sizes.end(), int64_t{0});
  if (total != batch_size()[d]) {
    throw std::invalid_argument(fmt::format("split: sizes {} sum to {} but batch dim {} has size {}", shape_string(split_sizes),
                                            total, d, batch_size()[d]));
  }
  std::vector<std::vector<int64_t>> batches;
  for (int64_t s : split_sizes) {
    if (s < 0) throw std::invalid_argument(fmt::format("split: negative size in {}", shape_string(split_sizes)));
    batches.push_back(batch_size().vec());
    batches.back()[d] = s;
  }
  return mapped_pieces(*this, batches, names_after(*this, [](Names&) {}), [&](const at::Tensor& t, at::Tensor* out) {
    auto parts = t.split_with_sizes(split_sizes, d);
    std::move(parts.begin(), parts.end(), out);
  }, "split");
}

std::vector<TensorDict> TensorDictBase::split(int64_t split_size, int64_t dim) const {
  const int64_t d = wrap_batch_dim(dim, batch_dims(), "split");
  const int64_t n = batch_size()[d];
  if (split_size <= 0 && n > 0) throw std::invalid_argument(fmt::format("split: split_size must be positive, got {}", split_size));
  // torch's rule: full pieces of split_size, the last one shorter; one piece
  // when the dim is empty.
  std::vector<int64_t> sizes;
  for (int64_t start = 0; start < n; start += split_size) sizes.push_back(std::min(split_size, n - start));
  if (sizes.empty()) sizes.push_back(0);
  return split(sizes, d);
}

std::vector<TensorDict> TensorDictBase::chunk(int64_t chunks, int64_t dim) const {
  if (chunks <= 0) throw std::invalid_argument(fmt::format("chunk: chunks must be positive, got {}", chunks));
  const int64_t d = wrap_batch_dim(dim, batch_dims(), "chunk");
  const int64_t n = batch_size()[d];
  if (n == 0) return split(std::vector<int64_t>(chunks, 0), d);  // torch gives `chunks` empty pieces
  return split((n + chunks - 1) / chunks, d);
}

}  // namespace tensordict
