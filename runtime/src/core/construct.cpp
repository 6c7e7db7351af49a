// Building tensordicts: inferred batch sizes, merging (padding: ops/pad.cpp).
#include <ATen/ATen.h>

#include <algorithm>
#include <optional>
#include <set>
#include <stdexcept>

#include "core/format.h"
#include "core/entry_writes.h"
#include "tensordict/errors.h"
#include "tensordict/functional.h"
#include "tensordict/detail/impl.h"

namespace tensordict {

namespace {

// The longest common prefix of two shapes.
std::vector<int64_t> common_prefix(const std::vector<int64_t>& a, at::IntArrayRef b) {
  std::size_t n = 0;
  while (n < a.size() && n < b.size() && a[n] == b[n]) ++n;
  return std::vector<int64_t>(a.begin(), a.begin() + static_cast<std::ptrdiff_t>(n));
}

}  // namespace

TensorDict& TensorDict::auto_batch_size_(std::optional<int64_t> batch_dims) {
  // Nested levels first: their batch sizes bound ours.
  std::optional<std::vector<int64_t>> shared;
  impl_->for_each([&](const std::string&, const Value& value) {
    std::vector<int64_t> shape;
    if (value.is_unbatched()) {
      return;  // no batch dims: the batch size comes from the other entries
    } else if (value.is_tensor()) {
      shape = detail::leaf_shape(value.tensor());
    } else if (value.is_tensordict()) {
      TensorDict nested = value.tensordict();
      nested.auto_batch_size_(batch_dims);  // tensordict bounds every level
      shape = nested.batch_size().vec();
    } else {
      return;  // non-tensor data spans whatever batch it is given
    }
    shared = shared ? common_prefix(*shared, shape) : std::move(shape);
  });
  std::vector<int64_t> batch = shared.value_or(std::vector<int64_t>{});
  // A negative batch_dims keeps no dim, as tensordict's (it adds dims while
  // fewer than batch_dims).
  if (batch_dims && static_cast<int64_t>(batch.size()) > *batch_dims) {
    batch.resize(static_cast<std::size_t>(std::max<int64_t>(*batch_dims, 0)));
  }
  impl_->set_meta(batch_size().vec(), device(), {});  // names do not survive a batch change
  set_batch_size(batch);
  return *this;
}

TensorDict make_tensordict(std::vector<TensorDict::Entry> entries, std::optional<std::vector<int64_t>> batch_size,
                           std::optional<at::Device> device, std::optional<int64_t> batch_dims) {
  if (batch_size) return TensorDict(std::move(entries), *batch_size, device);
  TensorDict td(std::move(entries), {}, device);
  td.auto_batch_size_(batch_dims);
  return td;
}

namespace {
// functional.py's merge_tensordicts: each leaf is settled once, by the first
// tensordict that has it.
TensorDict merge(const std::vector<TensorDict>& tds, c10::function_ref<const MergeCallback*(const NestedKey&)> callback_for) {
  if (tds.size() < 2) {
    throw RuntimeError(
        fmt::format("merge_tensordicts: at least 2 tensordicts must be provided, got {}", tds.size()));
  }
  TensorDict out = tds.front().empty({.recurse = true});
  std::set<NestedKey> settled;
  for (const auto& td : tds) {
    for (const auto& [key, value] : td.items({.include_nested = true, .leaves_only = true, .is_leaf = IsLeaf::NonTensor})) {
      if (!settled.insert(key).second) continue;
      const MergeCallback* callback = callback_for(key);
      std::vector<at::Tensor> values;  // gathered only for a callback
      for (std::size_t i = 0; callback && *callback && i < tds.size(); ++i) {
        const auto v = tds[i].get_value(key);
        if (!v || !v->is_tensor()) break;
        values.push_back(v->tensor());
      }
      out.set(key, values.size() == tds.size() ? Value((*callback)(values)) : value);
    }
  }
  return out;
}
}  // namespace

TensorDict merge_tensordicts(const std::vector<TensorDict>& tds, const MergeCallback& callback_exist) {
  return merge(tds, [&](const NestedKey&) { return &callback_exist; });
}

TensorDict merge_tensordicts(const std::vector<TensorDict>& tds, const std::map<NestedKey, MergeCallback>& callback_exist) {
  return merge(tds, [&](const NestedKey& key) -> const MergeCallback* {
    auto it = callback_exist.find(key);
    return it == callback_exist.end() ? nullptr : &it->second;
  });
}

}  // namespace tensordict
