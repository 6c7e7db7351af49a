#include "tensordict/batch_index.h"
#include "tensordict/errors.h"

#include <ATen/ExpandUtils.h>
#include <ATen/core/TensorBody.h>
#include <c10/core/DispatchKeySet.h>
#include <c10/core/InferenceMode.h>
#include <c10/core/TensorImpl.h>
#include <c10/util/SmallVector.h>

#include <algorithm>
#include <stdexcept>
#include <type_traits>

#include "ops/direct_view.h"
#include "core/format.h"
#include "core/libtorch_compat.h"

namespace tensordict {


int64_t wrap_batch_dim(int64_t dim, int64_t batch_dims, const char* op, int64_t extra) {
  const int64_t n = batch_dims + extra;
  if (dim < -n || dim >= n) {
    throw IndexError(
        fmt::format("{}: dim {} is out of range for a tensordict with {} batch dims (expected a dim in [{}, {}])", op,
                    dim, batch_dims, -n, n - 1));
  }
  return dim < 0 ? dim + n : dim;
}

namespace {

// How many batch dims one index item consumes.
int64_t consumed_by(const TensorIndex& item) {
  if (item.is_integer() || item.is_slice()) return 1;
  if (item.is_tensor()) {
    const auto& t = item.tensor();
    const bool mask = t.scalar_type() == at::kBool || t.scalar_type() == at::kByte;
    return mask ? t.dim() : 1;
  }
  return 0;  // None, Ellipsis, bool
}

}  // namespace

void detail::require_known_sizes(at::IntArrayRef batch_size, const char* op) {
  if (std::all_of(batch_size.begin(), batch_size.end(), [](int64_t s) { return s >= 0; })) return;
  throw RuntimeError(fmt::format(
      "{}: the batch size {} has dims of unknown size (-1: a lazy stack of tensordicts of different batch sizes); "
      "index or unbind its stack dim first",
      op, shape_string(batch_size)));
}

std::vector<TensorIndex> detail::without_ellipsis(at::ArrayRef<TensorIndex> index, int64_t batch_dims) {
  int64_t consumed = 0;
  for (const auto& item : index) consumed += consumed_by(item);
  std::vector<TensorIndex> out;
  for (const auto& item : index) {
    if (!item.is_ellipsis()) {
      out.push_back(item);
      continue;
    }
    for (int64_t d = consumed; d < batch_dims; ++d) out.emplace_back(at::indexing::Slice());
  }
  return out;
}

namespace {

// Python slice semantics with clamping, as at::slice applies them.
int64_t clamp_bound(int64_t bound, int64_t size) {
  if (bound < 0) bound += size;
  return std::clamp<int64_t>(bound, 0, size);
}

}  // namespace

BatchIndex::BatchIndex(at::ArrayRef<TensorIndex> index, at::IntArrayRef batch_size) {
  detail::require_known_sizes(batch_size, "index");
  const auto batch_dims = static_cast<int64_t>(batch_size.size());
  int64_t consumed = 0;
  int ellipses = 0;
  for (const auto& item : index) {
    consumed += consumed_by(item);
    ellipses += item.is_ellipsis();
  }
  if (ellipses > 1) {
    throw RuntimeError(fmt::format("an index can only have a single ellipsis (got {})", ellipses));
  }
  if (consumed > batch_dims) {
    throw IndexError(
        fmt::format("too many indices for a tensordict with batch_size {}: {} batch dims indexed but only {} exist",
                    shape_string(batch_size), consumed, batch_dims));
  }

  std::vector<int64_t> shape(batch_size.begin(), batch_size.end());  // the stepped batch shape
  std::vector<int64_t> origin(shape.size());                          // its dims' source dims (-1: new)
  for (std::size_t d = 0; d < origin.size(); ++d) origin[d] = static_cast<int64_t>(d);
  std::vector<std::pair<int64_t, at::Tensor>> advanced;              // (dim in stepped shape, index)
  bool from_mask = false;
  int64_t mask_dims = 0;
  int64_t src = 0;  // dim of the source batch the next item applies to
  int64_t cur = 0;  // the same dim in the stepped shape

  auto add_bool_scalar = [&](bool value) {
    // libtorch turns a bool into an unsqueeze plus a one- or zero-element index.
    steps_.push_back({Op::Unsqueeze, cur});
    shape.insert(shape.begin() + cur, 1);
    origin.insert(origin.begin() + cur, -1);
    advanced.emplace_back(cur, value ? at::zeros({1}, at::kLong) : at::empty({0}, at::kLong));
    ++cur;
  };

  for (const auto& item : index) {
    if (item.is_ellipsis()) {
      const int64_t skip = batch_dims - consumed;
      src += skip;
      cur += skip;
    } else if (item.is_none()) {
      steps_.push_back({Op::Unsqueeze, cur});
      shape.insert(shape.begin() + cur, 1);
      origin.insert(origin.begin() + cur, -1);
      ++cur;
    } else if (item.is_boolean()) {
      add_bool_scalar(item.boolean());
    } else if (item.is_integer() || (item.is_tensor() && item.tensor().dim() == 0 &&
                                     at::isIntegralType(item.tensor().scalar_type(), /*includeBool=*/false) &&
                                     item.tensor().scalar_type() != at::kByte)) {
      // A 0-dim integer tensor indexes like an int (torch's rule): it
      // removes the dim and is bounds-checked here.
      const int64_t size = shape[cur];
      int64_t i = item.is_integer() ? detail::index_integer(item) : item.tensor().item<int64_t>();
      if (i < -size || i >= size) {
        throw IndexError(fmt::format("index {} is out of range for batch dim {} of size {} (batch_size {})", i, src,
                                     size, shape_string(batch_size)));
      }
      if (i < 0) i += size;
      steps_.push_back({Op::Select, cur, i});
      shape.erase(shape.begin() + cur);
      origin.erase(origin.begin() + cur);
      ++src;
    } else if (item.is_slice()) {
      const auto s = detail::slice_bounds(item.slice());
      const int64_t step = s.step;
      if (step <= 0) {
        throw ValueError(fmt::format("slice step must be positive, got {} (batch dim {})", step, src));
      }
      const int64_t size = shape[cur];
      const int64_t start = clamp_bound(s.start, size);
      const int64_t stop = std::max(start, clamp_bound(s.stop, size));
      const int64_t length = (stop - start + step - 1) / step;
      if (start != 0 || stop != size || step != 1) {
        steps_.push_back({Op::Slice, cur, start, stop, step});
      }
      shape[cur] = length;
      ++src;
      ++cur;
    } else {  // tensor
      const at::Tensor& t = item.tensor();
      const auto type = t.scalar_type();
      if (type == at::kBool || type == at::kByte) {
        if (t.dim() == 0) {
          add_bool_scalar(t.item<bool>());
          continue;
        }
        const auto covered = at::IntArrayRef(shape).slice(cur, t.dim());
        if (t.sizes() != covered) {
          throw ValueError(fmt::format("mask of shape {} does not match batch dims {}..{} of shape {} (batch_size {})",
                                       shape_string(t.sizes()), src, src + t.dim() - 1, shape_string(covered),
                                       shape_string(batch_size)));
        }
        // nonzero once for every leaf: one index tensor per masked dim.
        const at::Tensor nz = t.nonzero();
        for (int64_t j = 0; j < t.dim(); ++j) advanced.emplace_back(cur + j, nz.select(1, j));
        from_mask = true;
        mask_dims = t.dim();
        src += t.dim();
        cur += t.dim();
      } else if (at::isIntegralType(type, /*includeBool=*/false)) {
        // libtorch 1.x indexes with long tensors only; convert once here.
        advanced.emplace_back(cur, type == at::kLong ? t : t.to(at::kLong));
        ++src;
        ++cur;
      } else {
        throw ValueError(fmt::format("index tensors must be long, int or bool; got {}", c10::toString(type)));
      }
    }
  }
  consumed_dims_ = src;

  if (advanced.empty()) {
    result_batch_size_ = std::move(shape);
    result_origin_ = std::move(origin);
    return;
  }

  // Advanced indexing: the index tensors broadcast together into one block of
  // dims, placed where they stood if adjacent, else in front (numpy's rule).
  std::vector<int64_t> block = advanced.front().second.sizes().vec();
  for (const auto& [dim, t] : advanced) {
    try {
      block = at::infer_size(block, t.sizes());
    } catch (const c10::Error&) {
      throw ValueError(fmt::format("index tensors of shapes {} and {} cannot be broadcast together",
                                   shape_string(block), shape_string(t.sizes())));
    }
  }
  const int64_t first = advanced.front().first;
  const int64_t last = advanced.back().first;
  const bool adjacent = last - first + 1 == static_cast<int64_t>(advanced.size());
  // tensordict's names rule (base.py _get_names_idx): the dims an integer
  // index tensor creates take the name of the dim it indexes (the first one's
  // when several); a mask's dim is unnamed.
  const int64_t block_origin = from_mask ? -1 : origin[first];
  std::vector<int64_t> result;
  std::vector<int64_t> result_origin;
  if (adjacent) {
    result.assign(shape.begin(), shape.begin() + first);
    result_origin.assign(origin.begin(), origin.begin() + first);
    result.insert(result.end(), block.begin(), block.end());
    result_origin.insert(result_origin.end(), block.size(), block_origin);
    result.insert(result.end(), shape.begin() + last + 1, shape.end());
    result_origin.insert(result_origin.end(), origin.begin() + last + 1, origin.end());
  } else {
    result = block;
    result_origin.assign(block.size(), block_origin);
    for (int64_t d = 0; d < static_cast<int64_t>(shape.size()); ++d) {
      const bool indexed = std::any_of(advanced.begin(), advanced.end(), [&](const auto& a) { return a.first == d; });
      if (!indexed) {
        result.push_back(shape[d]);
        result_origin.push_back(origin[d]);
      }
    }
  }
  result_batch_size_ = std::move(result);
  result_origin_ = std::move(result_origin);

  Advanced adv;
  std::vector<std::optional<at::Tensor>> per_dim(last + 1);
  for (auto& [dim, t] : advanced) per_dim[dim] = t;
  adv.indices.reserve(per_dim.size());
  for (const auto& t : per_dim) adv.indices.push_back(t ? c10::optional<at::Tensor>(*t) : c10::nullopt);
  adv.dim = first;
  if (from_mask && static_cast<int64_t>(advanced.size()) == mask_dims) {
    // The only advanced index is one mask: its indices are in range and
    // non-negative, so a single index_select over the (flattened) masked dims
    // gathers every leaf.
    adv.flatten_dims = mask_dims;
    adv.linear = advanced.front().second;
    for (int64_t j = 1; j < mask_dims; ++j) adv.linear = adv.linear * shape[first + j] + advanced[j].second;
  }
  advanced_ = std::move(adv);
}

std::vector<std::optional<std::string>> BatchIndex::result_names(const std::vector<std::optional<std::string>>& source) const {
  std::vector<std::optional<std::string>> names;
  names.reserve(result_origin_.size());
  for (int64_t from : result_origin_) {
    names.push_back(from >= 0 && from < static_cast<int64_t>(source.size()) ? source[from] : std::nullopt);
  }
  return names;
}

at::Tensor BatchIndex::step_view(const at::Tensor& leaf) const {
  if (steps_.empty()) return leaf;
  // The steps were resolved against a batch size; a leaf that does not start
  // with it (a caller's bug, or a file whose datasets disagree) must not be
  // viewed out of its storage: refuse it clearly.
  auto check_step = [&leaf](const Step& s, at::IntArrayRef sizes, const at::Tensor&) {
    const auto ndim = static_cast<int64_t>(sizes.size());
    bool fits = true;
    switch (s.op) {
      case Op::Select: fits = s.dim < ndim && s.start >= 0 && s.start < sizes[static_cast<std::size_t>(s.dim)]; break;
      case Op::Slice: fits = s.dim < ndim && s.start >= 0 && s.stop <= sizes[static_cast<std::size_t>(s.dim)]; break;
      case Op::Unsqueeze: fits = s.dim <= ndim; break;
    }
    if (!fits) {
      throw ValueError(fmt::format(
          "cannot apply a batch index to a leaf of shape {}: it does not start with the batch size the index was "
          "resolved for",
          shape_string(leaf.sizes())));
    }
  };
  if (detail::direct_view_ok(leaf)) {
    // The steps applied to the geometry, as at::select / at::slice /
    // at::unsqueeze compute it.
    const auto leaf_sizes = leaf.sizes();  // each call is out of line: once
    const auto leaf_strides = leaf.strides();
    c10::SmallVector<int64_t, 8> sizes(leaf_sizes.begin(), leaf_sizes.end());
    c10::SmallVector<int64_t, 8> strides(leaf_strides.begin(), leaf_strides.end());
    int64_t offset = leaf.storage_offset();
    for (const auto& s : steps_) {
      check_step(s, sizes, leaf);
      switch (s.op) {
        case Op::Select:
          offset += s.start * strides[s.dim];
          sizes.erase(sizes.begin() + s.dim);
          strides.erase(strides.begin() + s.dim);
          break;
        case Op::Slice:
          offset += s.start * strides[s.dim];
          sizes[s.dim] = (s.stop - s.start + s.step - 1) / s.step;
          strides[s.dim] *= s.step;
          break;
        case Op::Unsqueeze: {
          const auto d = static_cast<std::size_t>(s.dim);
          const int64_t stride = d >= sizes.size() ? 1 : sizes[d] * strides[d];
          sizes.insert(sizes.begin() + s.dim, 1);
          strides.insert(strides.begin() + s.dim, stride);
          break;
        }
      }
    }
    return detail::direct_view(leaf, sizes, strides, offset);
  }
  at::Tensor t = leaf;
  for (const auto& s : steps_) {
    check_step(s, t.sizes(), leaf);
    switch (s.op) {
      case Op::Select: t = t.select(s.dim, s.start); break;
      case Op::Slice: t = t.slice(s.dim, s.start, s.stop, s.step); break;
      case Op::Unsqueeze: t = t.unsqueeze(s.dim); break;
    }
  }
  return t;
}

at::Tensor BatchIndex::apply(const at::Tensor& leaf) const {
  at::Tensor t = step_view(leaf);
  if (!advanced_) return t;
  const auto& adv = *advanced_;
  if (adv.linear.defined()) {
    if (adv.flatten_dims > 1) t = t.flatten(adv.dim, adv.dim + adv.flatten_dims - 1);
    return t.index_select(adv.dim, adv.linear);
  }
  return t.index(adv.indices);
}

void BatchIndex::put(const at::Tensor& leaf, const at::Tensor& value) const {
  at::Tensor t = step_view(leaf);
  if (!advanced_) {
    t.copy_(value);
    return;
  }
  // index_put_ wants the leaf's dtype and device (copy_ converts by itself).
  t.index_put_(advanced_->indices, value.to(leaf.options()));
}

}  // namespace tensordict

namespace tensordict::detail {

at::Tensor reshape_leaf(const at::Tensor& leaf, at::IntArrayRef batch, int64_t batch_dims) {
  c10::SmallVector<int64_t, 8> sizes(batch.begin(), batch.end());
  const auto feature = leaf.sizes().slice(static_cast<std::size_t>(batch_dims));
  sizes.append(feature.begin(), feature.end());
  if (!detail::direct_view_ok(leaf) || !leaf.is_contiguous()) return leaf.reshape(sizes);
  // Contiguous strides, as at::reshape gives a contiguous leaf's view.
  c10::SmallVector<int64_t, 8> strides(sizes.size());
  int64_t stride = 1;
  for (std::size_t d = sizes.size(); d-- > 0;) {
    strides[d] = stride;
    stride *= std::max<int64_t>(sizes[d], 1);
  }
  return detail::direct_view(leaf, sizes, strides, leaf.storage_offset());
}

bool index_keeps_shared(at::ArrayRef<TensorIndex> index) {
  return std::all_of(index.begin(), index.end(), [](const TensorIndex& item) {
    if (item.is_slice()) return slice_bounds(item.slice()).start == 0;
    return item.is_integer() || item.is_none() || item.is_ellipsis();
  });
}

}  // namespace tensordict::detail
