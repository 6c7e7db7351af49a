// Padding tensordicts: pad, pad_sequence (functional.h).
#include <ATen/ATen.h>

#include <algorithm>
#include <optional>
#include <stdexcept>

#include "core/format.h"
#include "ops/copies.h"
#include "tensordict/detail/impl.h"
#include "tensordict/errors.h"
#include "tensordict/functional.h"

namespace tensordict {

TensorDict pad(const TensorDict& td, const std::vector<int64_t>& pad_size, const at::Scalar& value) {
  const int64_t nb = td.batch_dims();
  if (pad_size.size() % 2 != 0 || static_cast<int64_t>(pad_size.size()) > 2 * nb) {
    throw RuntimeError(fmt::format("pad: pad_size {} must have an even length of at most 2 * {} (the batch dims)",
                                         shape_string(pad_size), nb));
  }
  std::vector<int64_t> batch = td.batch_size().vec();
  for (std::size_t d = 0; d < pad_size.size() / 2; ++d) {
    batch[d] += pad_size[2 * d] + pad_size[2 * d + 1];
    if (batch[d] < 0)
      throw RuntimeError(fmt::format("pad: padding {} crops batch dim {} below zero", shape_string(pad_size), d));
  }
  auto fn = [&](const at::Tensor& t) {
    // constant_pad_nd lists pads from the last dim backwards.
    std::vector<int64_t> pads(2 * static_cast<std::size_t>(t.dim()), 0);
    for (std::size_t d = 0; d < pad_size.size() / 2; ++d) {
      const std::size_t from_end = static_cast<std::size_t>(t.dim()) - 1 - d;
      pads[2 * from_end] = pad_size[2 * d];
      pads[2 * from_end + 1] = pad_size[2 * d + 1];
    }
    return at::constant_pad_nd(t, pads, value);
  };
  return TensorDict(TensorDict(detail::map_leaves(*td.impl(), {batch, td.names()}, td.device(), detail::OpKind::Fold, fn, "pad")));
}

TensorDict pad_sequence(const std::vector<TensorDict>& tds, const PadSequenceOptions& options) {
  const auto& pad_dim = options.pad_dim;
  const auto& padding_value = options.padding_value;
  const auto& return_mask = options.return_mask;
  if (tds.empty()) throw RuntimeError("pad_sequence needs at least one tensordict");
  const auto keys = tds.front().keys({.include_nested = true, .leaves_only = true, .is_leaf = IsLeaf::NonTensor});
  std::vector<TensorDict> padded;
  std::vector<TensorDict> masks;
  for (std::size_t i = 0; i < tds.size(); ++i) {
    padded.push_back(detail::dense_shallow_copy(tds[i], "pad_sequence"));
    // tensordict's masks have the root's batch at every level (functional.py).
    masks.emplace_back(std::vector<TensorDict::Entry>{}, tds[i].batch_size());
  }
  std::optional<int64_t> padded_batch_len;
  for (const auto& key : keys) {
    if (!tds.front().get_value(key)->is_tensor()) continue;
    // This key's longest length along pad_dim.
    int64_t longest = 0;
    for (std::size_t i = 0; i < tds.size(); ++i) {
      const at::Tensor t = tds[i].get(key);
      if (pad_dim < 0 || pad_dim >= t.dim()) {
        throw IndexError(fmt::format("pad_sequence: pad_dim {} is out of range for key {} of shape {}", pad_dim,
                                     key.repr(), shape_string(t.sizes())));
      }
      longest = std::max(longest, t.size(pad_dim));
    }
    if (pad_dim < tds.front().batch_dims()) padded_batch_len = longest;
    for (std::size_t i = 0; i < tds.size(); ++i) {
      const at::Tensor t = tds[i].get(key);
      std::vector<int64_t> pads(2 * static_cast<std::size_t>(t.dim()), 0);
      pads[2 * static_cast<std::size_t>(t.dim() - 1 - pad_dim) + 1] = longest - t.size(pad_dim);
      detail::replace_entry(padded[i], key, at::constant_pad_nd(t, pads, padding_value));
      if (return_mask) {
        // The mask has the batch shape, plus the padded dim when it lies past
        // the batch (tensordict's functional.py pad_sequence).
        const int64_t batch_dims = tds[i].batch_dims();
        std::vector<int64_t> mask_shape = tds[i].batch_size().vec();
        const int64_t mask_dim = std::min(pad_dim, batch_dims);
        if (pad_dim >= batch_dims) mask_shape.push_back(t.size(pad_dim));
        std::vector<int64_t> mask_pads(2 * mask_shape.size(), 0);
        mask_pads[2 * (mask_shape.size() - 1 - static_cast<std::size_t>(mask_dim)) + 1] = longest - t.size(pad_dim);
        const at::Tensor mask = at::ones(mask_shape, at::kBool);
        masks[i].set(key, mask);  // creates the nested levels, with the root's batch
        detail::replace_entry(masks[i], key, at::constant_pad_nd(mask, mask_pads, false));
      }
    }
  }
  std::vector<TensorDict> members;
  for (std::size_t i = 0; i < tds.size(); ++i) {
    if (padded_batch_len) {
      // The padded dim is a batch dim: every level's batch grows with it.
      auto grow = [&](auto&& self, TensorDict level) -> void {
        std::vector<int64_t> batch = level.batch_size().vec();
        batch[static_cast<std::size_t>(pad_dim)] = *padded_batch_len;
        level.impl()->set_meta(batch, level.device(), level.names());
        level.impl()->for_each([&](const std::string&, const Value& v) {
          if (v.is_tensordict()) self(self, v.tensordict());
        });
      };
      grow(grow, padded[i]);
      if (return_mask) grow(grow, masks[i]);
    }
    if (return_mask) padded[i].impl()->insert("masks", Value(masks[i]));
    members.push_back(padded[i]);
  }
  return stack(members, 0);
}

}  // namespace tensordict
