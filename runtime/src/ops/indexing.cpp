// Batch indexing and indexed assignment.
#include <stdexcept>
#include <nlohmann/json.hpp>

#include "core/format.h"
#include "core/holding_level.h"
#include "core/kind_ops.h"
#include "kinds/dense/map_leaves.h"
#include "ops/shared_mark.h"
#include "tensordict/base.h"
#include "tensordict/errors.h"
#include "tensordict/detail/impl.h"
#include "tensordict/non_tensor.h"

namespace tensordict {


TensorDict TensorDict::index(at::ArrayRef<TensorIndex> index) const {
  TensorDict out = impl_->index(index);
  return detail::index_keeps_shared(index) ? detail::keep_shared_mark(*this, std::move(out)) : out;
}

// The default: every leaf indexed, a dense result.
TensorDict TensorDictImpl::index(at::ArrayRef<TensorIndex> index) const {
  const BatchIndex resolved(index, batch_size());
  auto apply = [&](const at::Tensor& leaf) { return resolved.apply(leaf); };
  detail::PieceMeta meta{resolved.result_batch_size().vec(), detail::any_named(names()) ? resolved.result_names(names()) : Names{}};
  // A nested lazy stack indexes itself (its members, which may differ in
  // shape), with the index's Ellipsis spelled out for this batch.
  auto index_nested = [&](const TensorDict& n) {
    return std::vector<TensorDict>{n.index(detail::without_ellipsis(index, static_cast<int64_t>(batch_size().size())))};
  };
  const detail::NestedOp nested = index_nested;
  return TensorDict(detail::map_leaves(*this, meta, device(), detail::OpKind::Batch, apply, "index",
                                       detail::ShapeCheck::Planned, &nested));
}

at::Tensor TensorDictImpl::read_at(const std::string& key, const BatchIndex& resolved, at::ArrayRef<TensorIndex>) const {
  return resolved.apply(find(key)->tensor());
}

void TensorDictImpl::assign_at(const std::string& key, const BatchIndex& resolved, at::ArrayRef<TensorIndex>,
                               const at::Tensor& value) {
  const Value target = *find(key);
  // The whole batch shares an UnbatchedTensor: a write at any index writes
  // it whole (tensordict's rule for indexed assignment).
  if (target.is_unbatched()) return assign(key, value);
  detail::put_entry(*this, key, target.tensor(), resolved, value);
}

namespace {
// The write of put_at once the level holding the tensor at `key` is known.
void assign_at_key(TensorDictImpl& level, const NestedKey& key, const BatchIndex& resolved,
                   at::ArrayRef<TensorIndex> index, const at::Tensor& value, const char* op) {
  try {
    level.assign_at(key.back(), resolved, index, value);
  } catch (...) {
    detail::rethrow_for_key(op, key);
  }
}
}  // namespace

TensorDict& TensorDict::index_put_(at::ArrayRef<TensorIndex> index, const TensorDict& value) {
  const BatchIndex resolved(index, batch_size());
  const auto target = resolved.result_batch_size();
  TensorDict source = value;
  if (source.batch_size() != target) {
    try {
      source = value.expand(target);
    } catch (const std::exception&) {
      throw RuntimeError(fmt::format("index_put_: the value's batch size {} cannot be expanded to the indexed batch size {}",
                                           shape_string(value.batch_size()), shape_string(target)));
    }
  }
  // A lazy stack writes into the members the index selects, each its part
  // of the value (tensordict's _setitem_index): a new key goes into those
  // members only.
  if (const auto own = detail::kind_ops(*impl_).index_put; own && own(*this, index, source)) return *this;
  // A nested lazy stack takes its part the same way, at the same index. The
  // value's entries are looked through only when this level holds one: the
  // common write pays a pass over this level's children, not a copy of the
  // value's items.
  bool holds_lazy = false;
  impl_->for_each_child([&](const TensorDict& child) { holds_lazy = holds_lazy || detail::kind_ops(*child.impl()).index_put; });
  if (holds_lazy) {
    for (const auto& [key, item] : source.items()) {
      if (!item.is_tensordict()) continue;
      const auto held = impl_->find(key.front());
      if (!held || !held->is_tensordict() || !detail::kind_ops(*held->tensordict().impl()).index_put) continue;
      TensorDict(held->tensordict()).index_put_(detail::without_ellipsis(index, batch_dims()), item.tensordict());
      source = source.exclude({key});
    }
  }
  // A nested level the value has and this tensordict lacks is created with
  // this batch size followed by the level's own extra dims (base.py:18405).
  auto create_levels = [&](const NestedKey& key) {
    for (std::size_t depth = 1; depth < key.size(); ++depth) {
      const NestedKey level(std::vector<std::string>(key.path().begin(), key.path().begin() + static_cast<std::ptrdiff_t>(depth)));
      if (contains(level)) continue;
      std::vector<int64_t> batch = batch_size().vec();
      const auto own = source.get_td(level).batch_size().slice(target.size());
      batch.insert(batch.end(), own.begin(), own.end());
      set(level, TensorDict({}, batch, device()));
    }
  };
  for (const auto& [key, item] : source.items({.include_nested = true, .leaves_only = true, .is_leaf = IsLeaf::NonTensor})) {
    // One walk to the level holding the key tells whether we hold it, and
    // where to write a tensor we hold (the common case).
    const auto level = detail::holding_level(impl_, key);
    const auto kind = level ? level->entry_kind(key.back()) : std::nullopt;
    if (kind == EntryKind::Tensor && item.is_tensor()) {
      assign_at_key(*level, key, resolved, index, item.tensor(), "index_put_");
      continue;
    }
    const bool held = kind.has_value();
    if (!held) create_levels(key);
    if (!held && item.is_unbatched()) {  // no batch dims to write at: the whole of it
      set(key, item);
      continue;
    }
    if (item.is_non_tensor()) {
      // tensordict writes non-tensor data at the index too. A missing key
      // takes one value for the whole batch, written or not; a stack of
      // values leaves None outside the index, as a missing tensor holds
      // zeros (base.py, __setitem__).
      if (!held) {
        if (!item.non_tensor().is_stack()) {
          set(key, item);
          continue;
        }
        set(key, NonTensorData(Json()));
      }
      put_non_tensor_at(key, resolved, item, "index_put_");
      continue;
    }
    const at::Tensor& leaf = item.tensor();
    if (!held) {
      // tensordict creates the missing entry, zero outside the index.
      std::vector<int64_t> shape = batch_size().vec();
      const auto feature = leaf.sizes().slice(target.size());
      shape.insert(shape.end(), feature.begin(), feature.end());
      set(key, at::zeros(shape, leaf.options().device(device().value_or(leaf.device()))));
    }
    put_at(key, resolved, index, leaf, "index_put_");
  }
  return *this;
}

TensorDict& TensorDict::index_put_(at::ArrayRef<TensorIndex> index, const at::Tensor& value) {
  const BatchIndex resolved(index, batch_size());
  // An UnbatchedTensor has no batch dims to broadcast into: it is left as it is.
  for (const auto& [key, item] : items({.include_nested = true, .leaves_only = true})) {
    if (item.is_tensor() && !item.is_unbatched()) put_at(key, resolved, index, value, "index_put_");
  }
  return *this;
}

TensorDict& TensorDict::index_put_(at::ArrayRef<TensorIndex> index, const at::Scalar& value) {
  return index_put_(index, Operand(value).tensor());
}

TensorDict TensorDict::tensor_level(const NestedKey& key) const {
  TensorDict parent = parent_of(key, false);
  // get()'s KeyError or kind error, from the entry's kind alone (an h5 file
  // reads no dataset to answer).
  if (parent.impl_->entry_kind(key.back()) != EntryKind::Tensor) (void)get(key);
  return parent;
}

at::Tensor TensorDict::get_at(const NestedKey& key, at::ArrayRef<TensorIndex> index) const {
  const BatchIndex resolved(index, batch_size());
  const TensorDict parent = tensor_level(key);
  try {
    return parent.impl_->read_at(key.back(), resolved, index);
  } catch (...) {
    detail::rethrow_for_key("get_at", key);
  }
}

TensorDict& TensorDict::set_at_(const NestedKey& key, const at::Tensor& value, at::ArrayRef<TensorIndex> index) {
  put_at(key, BatchIndex(index, batch_size()), index, value, "set_at_");
  return *this;
}

TensorDict& TensorDict::set_at_(const NestedKey& key, const NonTensorData& value, at::ArrayRef<TensorIndex> index) {
  (void)get_non_tensor(key);  // the KeyError or kind error of a key we lack
  put_non_tensor_at(key, BatchIndex(index, batch_size()), Value(value), "set_at_");
  return *this;
}

void TensorDict::put_non_tensor_at(const NestedKey& key, const BatchIndex& resolved, const Value& value, const char* op) {
  TensorDict parent = parent_of(key, false);
  const Value current = *parent.impl_->find(key.back());
  if (!current.is_non_tensor()) {
    throw ValueError(fmt::format("{} failed for key {}: the tensordict holds {} there and the value non-tensor data", op,
                                 key.repr(), current.is_tensor() ? "a tensor" : "a tensordict"));
  }
  // Like indexed tensor writes, allowed on a locked tensordict.
  detail::put_non_tensor_entry(*parent.impl_, key, current.non_tensor(), parent.batch_size(), resolved, value.non_tensor());
}


TensorDict& TensorDict::update_at_(const TensorDict& other, at::ArrayRef<TensorIndex> index,
                                           const std::optional<std::vector<NestedKey>>& keys_to_update) {
  if (keys_to_update && keys_to_update->empty()) return *this;
  const BatchIndex resolved(index, batch_size());
  // The keys named are the keys written, as update()'s keys_to_update.
  const TensorDict source = keys_to_update ? TensorDict(other.select(*keys_to_update, {.strict = false})) : other;
  for (const auto& [key, item] : source.items({.include_nested = true, .leaves_only = true, .is_leaf = IsLeaf::NonTensor})) {
    if (item.is_tensor()) {
      put_at(key, resolved, index, item.tensor(), "update_at_");
    } else {
      (void)get_non_tensor(key);  // the KeyError or kind error of a key we lack
      put_non_tensor_at(key, resolved, item, "update_at_");
    }
  }
  return *this;
}

void TensorDict::put_at(const NestedKey& key, const BatchIndex& resolved, at::ArrayRef<TensorIndex> index,
                            const at::Tensor& value, const char* op) {
  assign_at_key(*tensor_level(key).impl_, key, resolved, index, value, op);
}

}  // namespace tensordict
