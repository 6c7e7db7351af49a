// Nested (jagged) tensor leaves: their shapes, as tensordict reports them,
// and to_padded_tensor.
#include <ATen/ATen.h>

#include <algorithm>
#include <stdexcept>

#include "core/format.h"
#include "ops/copies.h"
#include "tensordict/base.h"
#include "tensordict/errors.h"

namespace tensordict {

namespace detail {

std::vector<int64_t> leaf_shape(const at::Tensor& t) {
  if (!t.is_nested()) return t.sizes().vec();
  // A nested tensor has no sizes(); size(d) answers for its regular dims only.
  std::vector<int64_t> shape(static_cast<std::size_t>(t.dim()));
  for (int64_t d = 0; d < t.dim(); ++d) {
    try {
      shape[static_cast<std::size_t>(d)] = t.size(d);
    } catch (const c10::Error&) {
      shape[static_cast<std::size_t>(d)] = -1;
    }
  }
  return shape;
}

bool leaf_starts_with(const at::Tensor& t, at::IntArrayRef prefix) {
  if (!t.is_nested()) {
    const auto sizes = t.sizes();
    return sizes.size() >= prefix.size() && sizes.slice(0, prefix.size()) == prefix;
  }
  const auto shape = leaf_shape(t);
  return shape.size() >= prefix.size() && std::equal(prefix.begin(), prefix.end(), shape.begin());
}

}  // namespace detail

namespace {

// True where a nested tensor, padded to `padded_shape`, holds its own data:
// each component's extent from the origin.
at::Tensor valid_mask(const at::Tensor& nested, at::IntArrayRef padded_shape) {
  at::Tensor mask = at::zeros(padded_shape, at::TensorOptions().dtype(at::kBool).device(nested.device()));
  const auto components = nested.unbind(0);
  for (std::size_t i = 0; i < components.size(); ++i) {
    at::Tensor region = mask.select(0, static_cast<int64_t>(i));
    for (int64_t d = 0; d < components[i].dim(); ++d) region = region.narrow(d, 0, components[i].size(d));
    region.fill_(true);
  }
  return mask;
}

}  // namespace

TensorDict TensorDict::to_padded_tensor(double padding, const std::optional<NestedKey>& mask_key) const {
  const auto batch = batch_size();
  const bool ragged = std::find(batch.begin(), batch.end(), -1) != batch.end();
  if (mask_key && !ragged) {
    throw ValueError(fmt::format("to_padded_tensor: mask_key {} needs a ragged (-1) dim in the batch size, which is {}",
                                 mask_key->repr(), shape_string(batch)));
  }
  const auto pad = [padding](const at::Tensor& t) { return t.is_nested() ? at::nested_to_padded_tensor(t, padding) : t; };
  if (!ragged) return detail::leafwise(*this, pad, "to_padded_tensor", detail::ShapeCheck::Results);

  TensorDict out(apply(pad, std::vector<int64_t>{}, Names{}));  // dense: a batch size is given
  out.auto_batch_size_(batch_dims());
  if (!mask_key) return out;
  for (const auto& [key, value] : items({.include_nested = true, .leaves_only = true})) {
    if (!value.is_tensor() || !value.tensor().is_nested()) continue;
    at::Tensor mask = valid_mask(value.tensor(), out.get(key).sizes());
    // Over the batch dims: a position is valid where its last element is.
    if (mask.dim() > out.batch_dims()) mask = mask.flatten(out.batch_dims(), -1).select(-1, -1).clone();
    out.set(*mask_key, mask);
    return out;
  }
  throw ValueError(
      fmt::format("to_padded_tensor: mask_key {} was given but no leaf is a nested tensor", mask_key->repr()));
}

}  // namespace tensordict
