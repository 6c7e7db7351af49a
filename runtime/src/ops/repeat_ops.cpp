// Ops that reorder or repeat batch elements: flip, roll, repeat, tile,
// repeat_interleave. Each leaf gets the same op over its batch dims (its
// feature dims untouched); the results own new storage.
#include <ATen/ATen.h>

#include <stdexcept>

#include "core/format.h"
#include "core/kind_ops.h"
#include "ops/shape_mapping.h"
#include "tensordict/errors.h"

namespace tensordict {

using detail::mapped;
using detail::ShapeCheck;

namespace {

// The source's names (none when unnamed): these ops keep every dim in place.
Names same_names(const TensorDict& td) { return td.has_names() ? td.names() : Names{}; }

// Normalised batch dims, each at most once.
std::vector<int64_t> distinct_dims(at::IntArrayRef dims, int64_t batch_dims, const char* op) {
  std::vector<int64_t> out;
  std::vector<bool> seen(batch_dims, false);
  for (int64_t d : dims) {
    const int64_t w = wrap_batch_dim(d, batch_dims, op);
    if (seen[w]) throw ValueError(fmt::format("{}: dim {} appears twice in {}", op, d, shape_string(dims)));
    seen[w] = true;
    out.push_back(w);
  }
  return out;
}

// `counts` for the batch dims, then 1 for each feature dim of `leaf`.
std::vector<int64_t> over_features(at::IntArrayRef counts, const at::Tensor& leaf, int64_t batch_dims) {
  std::vector<int64_t> full(counts.begin(), counts.end());
  full.insert(full.end(), leaf.dim() - batch_dims, 1);
  return full;
}

}  // namespace

TensorDict TensorDict::flip(at::IntArrayRef dims) const {
  const auto wrapped = distinct_dims(dims, batch_dims(), "flip");
  return mapped(*this, batch_size().vec(), same_names(*this), [&](const at::Tensor& t) { return t.flip(wrapped); }, "flip");
}

TensorDict TensorDict::fliplr() const {
  if (batch_dims() < 2) throw RuntimeError(fmt::format("fliplr: requires at least 2 batch dims, got {}", batch_dims()));
  return flip({1});
}

TensorDict TensorDict::flipud() const {
  if (batch_dims() < 1) throw RuntimeError("flipud: requires at least 1 batch dim, got 0");
  return flip({0});
}

TensorDict TensorDict::roll(at::IntArrayRef shifts, at::IntArrayRef dims) const {
  if (shifts.size() != dims.size() || dims.empty()) {
    throw ValueError(fmt::format("roll: got {} shifts {} for {} dims {} (one shift per batch dim)", shifts.size(),
                                 shape_string(shifts), dims.size(), shape_string(dims)));
  }
  std::vector<int64_t> wrapped;
  for (int64_t d : dims) wrapped.push_back(wrap_batch_dim(d, batch_dims(), "roll"));
  return mapped(*this, batch_size().vec(), same_names(*this), [&](const at::Tensor& t) { return t.roll(shifts, wrapped); },
                "roll");
}

TensorDict TensorDict::roll(int64_t shift, int64_t dim) const { return roll(at::IntArrayRef{shift}, at::IntArrayRef{dim}); }

TensorDict TensorDict::repeat(at::IntArrayRef repeats) const {
  const int64_t nb = batch_dims();
  if (static_cast<int64_t>(repeats.size()) != nb) {
    throw ValueError(
        fmt::format("repeat: the number of repeat counts must match the number of batch dims of the tensordict: got {} "
                    "for {} batch dims",
                    shape_string(repeats), nb));
  }
  std::vector<int64_t> batch;
  for (int64_t d = 0; d < nb; ++d) {
    if (repeats[d] < 0) throw ValueError(fmt::format("repeat: negative count in {}", shape_string(repeats)));
    batch.push_back(batch_size()[d] * repeats[d]);
  }
  // A lazy stack repeats its members (members of different shapes work).
  if (const auto own = detail::kind_ops(*impl_).repeat) return own(*this, repeats);
  // A nested lazy stack repeats itself, its own dims once.
  auto repeat_nested = [&](const TensorDict& n) {
    std::vector<int64_t> counts = repeats.vec();
    counts.resize(static_cast<std::size_t>(n.batch_dims()), 1);
    return std::vector<TensorDict>{n.repeat(counts)};
  };
  const detail::NestedOp nested = repeat_nested;
  return mapped(*this, batch, same_names(*this), [&](const at::Tensor& t) { return t.repeat(over_features(repeats, t, nb)); },
                "repeat", ShapeCheck::Results, &nested);
}

TensorDict TensorDict::tile(at::IntArrayRef reps) const {
  for (int64_t r : reps) {
    if (r < 0) throw ValueError(fmt::format("tile: negative count in {}", shape_string(reps)));
  }
  // torch.tile's alignment, on the batch dims only: counts go to the last
  // batch dims; more counts than batch dims add leading dims of size 1 first.
  const int64_t nb = batch_dims();
  const int64_t added = std::max<int64_t>(static_cast<int64_t>(reps.size()) - nb, 0);
  std::vector<int64_t> counts(nb + added - static_cast<int64_t>(reps.size()), 1);
  counts.insert(counts.end(), reps.begin(), reps.end());
  std::vector<int64_t> source(added, 1);
  source.insert(source.end(), batch_size().begin(), batch_size().end());
  std::vector<int64_t> batch;
  for (std::size_t d = 0; d < counts.size(); ++d) batch.push_back(source[d] * counts[d]);
  return mapped(*this, batch, {}, [&](const at::Tensor& t) {
    const at::Tensor lifted = t.reshape(detail::with_features(source, t, nb));
    return lifted.repeat(over_features(counts, lifted, nb + added));
  }, "tile");
}

TensorDict TensorDict::repeat_interleave(int64_t repeats, std::optional<int64_t> dim) const {
  if (repeats < 0) throw ValueError(fmt::format("repeat_interleave: repeats must be non-negative, got {}", repeats));
  return repeat_interleave(at::scalar_tensor(repeats, at::kLong), dim);
}

TensorDict TensorDict::repeat_interleave(const at::Tensor& repeats, std::optional<int64_t> dim) const {
  // As torch: no dim means the flattened batch; a batchless tensordict is
  // first given a batch dim.
  if (batch_dims() == 0) return unsqueeze(0).repeat_interleave(repeats, dim);
  if (!dim) return reshape({-1}).repeat_interleave(repeats, int64_t{0});
  const int64_t d = wrap_batch_dim(*dim, batch_dims(), "repeat_interleave");
  const int64_t n = batch_size()[d];
  if (repeats.dim() > 1 || (repeats.dim() == 1 && repeats.numel() != n && repeats.numel() != 1)) {
    throw ValueError(
        fmt::format("repeat_interleave: repeats must be one count or one per element of batch dim {} "
                    "(size {}), got shape {}",
                    d, n, shape_string(repeats.sizes())));
  }
  const at::Tensor counts = repeats.to(at::kCPU, at::kLong);
  if (counts.lt(0).any().item<bool>()) throw ValueError("repeat_interleave: repeats must be non-negative");
  std::vector<int64_t> batch = batch_size().vec();
  batch[d] = counts.numel() == n && counts.dim() == 1 ? counts.sum().item<int64_t>() : n * counts.reshape({}).item<int64_t>();
  const int64_t total = batch[d];
  // A lazy stack: member by member (members of different shapes work).
  if (const auto own = detail::kind_ops(*impl_).repeat_interleave) return own(*this, repeats, counts, d);
  auto repeat_nested = [&](const TensorDict& n) { return std::vector<TensorDict>{n.repeat_interleave(repeats, d)}; };
  const detail::NestedOp nested = repeat_nested;
  return mapped(*this, batch, same_names(*this), [&](const at::Tensor& t) {
    return t.repeat_interleave(counts.to(t.device()), d, total);
  }, "repeat_interleave", ShapeCheck::Results, &nested);
}

}  // namespace tensordict
