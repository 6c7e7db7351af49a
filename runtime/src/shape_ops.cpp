// Shape ops over batch dims that view the leaves (shape_mapping.h).
#include <ATen/ATen.h>
#include <ATen/InferSize.h>

#include <algorithm>
#include <numeric>
#include <stdexcept>

#include "format.h"
#include "shape_mapping.h"

namespace tensordict {

namespace {

using detail::mapped;
using detail::mapped_pieces;
using detail::names_after;
using detail::with_features;

// permute and transpose report a dim out of range as tensordict does, a
// ValueError (std::invalid_argument), where indexing-like ops give IndexError.
int64_t wrap_dim_as_invalid(int64_t dim, int64_t batch_dims, const char* op) {
  try {
    return wrap_batch_dim(dim, batch_dims, op);
  } catch (const std::out_of_range& e) {
    throw std::invalid_argument(e.what());
  }
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
    const int64_t w = wrap_dim_as_invalid(d, nb, "permute");
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
  const int64_t d0 = wrap_dim_as_invalid(dim0, batch_dims(), "transpose");
  const int64_t d1 = wrap_dim_as_invalid(dim1, batch_dims(), "transpose");
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

namespace {
// expand and broadcast_to: the new batch size's trailing dims broadcast
// against the current ones.
TensorDict expanded(const TensorDictBase& td, at::IntArrayRef shape, bool keep_names, const char* op) {
  const int64_t nb = td.batch_dims();
  const int64_t n = static_cast<int64_t>(shape.size());
  auto fail = [&] {
    throw std::runtime_error(fmt::format("{}: batch size {} cannot be expanded to {}", op, shape_string(td.batch_size()),
                                         shape_string(shape)));
  };
  if (n < nb) fail();
  std::vector<int64_t> batch = shape.vec();
  for (int64_t i = 0; i < n; ++i) {
    const int64_t old_dim = i - (n - nb);
    if (old_dim < 0) {
      if (batch[i] < 0) fail();
      continue;
    }
    const int64_t old = td.batch_size()[old_dim];
    if (batch[i] == -1 && keep_names) batch[i] = old;  // broadcast_to takes no -1
    if (batch[i] != old && old != 1) fail();
  }
  const Names names = keep_names ? names_after(td, [&](Names& nm) { nm.insert(nm.begin(), batch.size() - nm.size(), std::nullopt); })
                                 : Names{};
  return mapped(td, batch, names, [&](const at::Tensor& t) { return t.expand(with_features(batch, t, nb)); }, op);
}
}  // namespace

TensorDict TensorDictBase::expand(at::IntArrayRef shape) const { return expanded(*this, shape, true, "expand"); }

TensorDict TensorDictBase::broadcast_to(at::IntArrayRef shape) const { return expanded(*this, shape, false, "broadcast_to"); }

TensorDict TensorDictBase::expand_as(const at::Tensor& other) const { return expand(other.sizes()); }

TensorDict TensorDictBase::expand_as(const TensorDictBase& other) const {
  // First to the other's batch size, then each leaf to its counterpart's
  // feature dims too.
  return expand(other.batch_size()).apply([](const at::Tensor& a, const at::Tensor& b) { return a.expand_as(b); }, other);
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

std::vector<TensorDict> TensorDictBase::tensor_split(int64_t sections, int64_t dim) const {
  if (sections <= 0) {
    throw std::invalid_argument(fmt::format("tensor_split: number of sections must be greater than 0, but was {}", sections));
  }
  const int64_t d = wrap_batch_dim(dim, batch_dims(), "tensor_split");
  const int64_t n = batch_size()[d];
  std::vector<int64_t> sizes;
  for (int64_t i = 0; i < sections; ++i) sizes.push_back(n / sections + (i < n % sections ? 1 : 0));
  return split(sizes, d);
}

std::vector<TensorDict> TensorDictBase::tensor_split(at::IntArrayRef indices, int64_t dim) const {
  const int64_t d = wrap_batch_dim(dim, batch_dims(), "tensor_split");
  // torch's rule for each cut: clamped to the dim, a piece never negative.
  const int64_t n = batch_size()[d];
  std::vector<int64_t> sizes;
  int64_t start = 0;
  for (int64_t cut : indices) {
    const int64_t end = std::clamp(cut < 0 ? cut + n : cut, int64_t{0}, n);
    sizes.push_back(std::max<int64_t>(end - start, 0));
    start = std::max(start, end);
  }
  sizes.push_back(n - start);
  return split(sizes, d);
}

TensorDict TensorDictBase::movedim(at::IntArrayRef source, at::IntArrayRef destination) const {
  if (source.size() != destination.size()) {
    throw std::invalid_argument(fmt::format("movedim: source {} and destination {} must have the same number of dims",
                                            shape_string(source), shape_string(destination)));
  }
  const int64_t nb = batch_dims();
  std::vector<int64_t> order(nb, -1);  // order[destination] = source
  std::vector<bool> moved(nb, false);
  for (std::size_t i = 0; i < source.size(); ++i) {
    const int64_t from = wrap_batch_dim(source[i], nb, "movedim");
    const int64_t to = wrap_batch_dim(destination[i], nb, "movedim");
    if (moved[from]) throw std::runtime_error(fmt::format("movedim: repeated dim in source {}", shape_string(source)));
    if (order[to] != -1) throw std::runtime_error(fmt::format("movedim: repeated dim in destination {}", shape_string(destination)));
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

TensorDict TensorDictBase::movedim(int64_t source, int64_t destination) const {
  return movedim(at::IntArrayRef(source), at::IntArrayRef(destination));
}

TensorDict TensorDictBase::swapaxes(int64_t dim0, int64_t dim1) const { return transpose(dim0, dim1); }

TensorDict TensorDictBase::swapdims(int64_t dim0, int64_t dim1) const { return transpose(dim0, dim1); }

TensorDict TensorDictBase::narrow(int64_t dim, int64_t start, int64_t length) const {
  const int64_t d = wrap_batch_dim(dim, batch_dims(), "narrow");
  const int64_t n = batch_size()[d];
  const int64_t first = start < 0 ? start + n : start;
  if (first < 0 || length < 0 || first + length > n) {
    throw std::out_of_range(fmt::format("narrow: elements [{}, {} + {}) are outside batch dim {} of size {}", start, start,
                                        length, d, n));
  }
  std::vector<int64_t> batch = batch_size().vec();
  batch[d] = length;
  return mapped(*this, batch, names_after(*this, [](Names&) {}), [&](const at::Tensor& t) { return t.narrow(d, first, length); },
                "narrow");
}

}  // namespace tensordict
