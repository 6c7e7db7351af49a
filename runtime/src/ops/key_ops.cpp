// Operations on the key structure: select, exclude, update, renaming,
// flattening keys, splitting by keys, emptying.
#include <ATen/ATen.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <set>
#include <stdexcept>

#include "kinds/dense/dense_impl.h"
#include "core/format.h"
#include "core/kind_ops.h"
#include "ops/copies.h"
#include "core/nesting.h"
#include "tensordict/base.h"
#include "tensordict/errors.h"
#include "tensordict/detail/impl.h"

namespace tensordict {

namespace {

// A dense tensordict with `like`'s batch size, device and names and no entries.
TensorDict no_entries_like(const TensorDict& like) {
  return TensorDict(TensorDict(std::make_shared<detail::DenseImpl>(like.batch_size().vec(), like.device(), like.names())));
}

// Copies `value` into `target` at `key`, creating the intermediate levels of
// `target` with the batch sizes they have in `source` (nested tensordicts may
// have longer batches than their parent).
void copy_entry(const TensorDict& source, TensorDict& target, const NestedKey& key, const Value& value) {
  TensorDict src = source;
  TensorDict dst = target;
  for (std::size_t depth = 0; depth + 1 < key.size(); ++depth) {
    src = src.get_td(key[depth]);
    auto found = dst.get_value(key[depth]);
    if (found && found->is_tensordict()) {
      dst = found->tensordict();
    } else {
      TensorDict level = no_entries_like(src);
      dst.impl()->insert(key[depth], Value(level));
      dst = level;
    }
  }
  dst.impl()->insert(key.back(), value.is_tensordict() ? Value(value.tensordict().clone({.recurse = false})) : value);
}

// What `keys` say of the first-level entry `key`: whether one names the entry
// itself, and the rest of those that reach inside it.
struct KeysAt {
  bool whole = false;
  std::vector<NestedKey> below;
};
KeysAt keys_at(const std::vector<NestedKey>& keys, const std::string& key) {
  KeysAt out;
  for (const auto& k : keys) {
    if (k.front() != key) continue;
    if (!k.is_nested()) {
      out.whole = true;
    } else {
      out.below.emplace_back(std::vector<std::string>(k.path().begin() + 1, k.path().end()));
    }
  }
  return out;
}

}  // namespace

TensorDict TensorDict::select(const std::vector<NestedKey>& keys, const SelectOptions& options) const {
  const bool strict = options.strict;
  // A lazy stack: its members' selections, sharing their tensors.
  if (auto parts = impl_->map_parts([&](const TensorDict& m) { return m.select(keys, options); })) return TensorDict(parts);
  TensorDict out = no_entries_like(*this);
  for (const auto& key : keys) {
    auto value = get_value(key);
    if (!value) {
      if (strict) get(key);  // throws the KeyError naming the key
      continue;
    }
    copy_entry(*this, out, key, *value);
  }
  return out;
}

TensorDict TensorDict::exclude(const std::vector<NestedKey>& keys) const {
  if (auto parts = impl_->map_parts([&](const TensorDict& m) { return m.exclude(keys); })) return TensorDict(parts);
  // Built from the kept keys only: a nested lazy stack never stacks what it drops.
  TensorDict out = no_entries_like(*this);
  impl_->for_each_key([&](const std::string& key, EntryKind kind) {
    const KeysAt excluded = keys_at(keys, key);
    if (excluded.whole) return;
    const Value value = *impl_->find(key);
    if (kind == EntryKind::TensorDict) {
      out.impl()->insert(key, Value(value.tensordict().exclude(excluded.below)));
    } else {
      out.impl()->insert(key, value);
    }
  });
  return out;
}

TensorDict& TensorDict::update(const TensorDict& other) {
  // A lazy stack is updated member by member with the other's parts along
  // its stack dim, which needs no stacking of either side.
  if (const auto own = detail::kind_ops(*impl_).update) {
    check_unlocked();
    own(*this, other);
    return *this;
  }
  // Entries are set by their path from this level, so that an error (a
  // sub-view refusing to change the kind of an entry) names the whole key.
  std::vector<std::string> path;
  auto walk = [&](auto&& self, const TensorDictImpl& from) -> void {
    detail::NestingGuard guard("update");
    from.for_each([&](const std::string& key, const Value& value) {
      path.push_back(key);
      const NestedKey full{std::span<const std::string>(path)};
      std::optional<Value> mine;
      if (value.is_tensordict() && (mine = get_value(full)) && mine->is_tensordict()) {
        // Nested tensordicts are updated, not replaced.
        // A level with its own update (a lazy stack) updates itself; one
        // updated by a source with its own update (a lazy stack) is replaced
        // by what that gives (a lazy stack of its slices).
        if (detail::kind_ops(*mine->impl()).update) {
          TensorDict(mine->tensordict()).update(value.tensordict());
        } else if (const auto into = detail::kind_ops(*value.impl()).update_into) {
          set(full, into(mine->tensordict(), value.tensordict()));
        } else {
          self(self, *value.impl());
        }
      } else {
        set(full, value);
      }
      path.pop_back();
    });
  };
  walk(walk, *other.impl());
  return *this;
}

TensorDict& TensorDict::rename_key_(const NestedKey& old_key, const NestedKey& new_key, const RenameKeyOptions& options) {
  const bool safe = options.safe;
  if (old_key == new_key) return *this;
  check_unlocked();  // tensordict's @lock_blocked: the lock error comes first
  if (safe && contains(new_key)) {
    // tensordict's message (_td.py rename_key_), the key as Python formats it.
    throw KeyError(fmt::format("key {} already present in TensorDict.",
                               new_key.size() == 1 ? new_key.front() : new_key.repr()));
  }
  const bool same_level = old_key.size() == new_key.size() &&
                          std::equal(old_key.path().begin(), old_key.path().end() - 1, new_key.path().begin());
  if (same_level) {
    TensorDict parent = parent_of(old_key, false);
    parent.check_unlocked();
    const auto value = parent.impl()->find(old_key.back());
    if (!value) get(old_key);  // throws the KeyError naming the key
    // tensordict's order: an overwritten key keeps its place, else the
    // renamed entry goes last.
    if (parent.impl()->find(new_key.back())) {
      parent.impl()->insert(new_key.back(), *value);
      parent.impl()->erase(old_key.back());
    } else {
      parent.impl()->rename(old_key.back(), new_key.back());
    }
  } else {
    Value value = pop(old_key);
    set(new_key, value);
  }
  return *this;
}

TensorDict& TensorDict::select_(const std::vector<NestedKey>& keys, const SelectOptions& options) {
  const bool strict = options.strict;
  for (const auto& key : keys) {
    if (strict && !contains(key)) get(key);  // throws the KeyError naming the key
  }
  check_unlocked();
  std::vector<std::string> drop;
  impl_->for_each_key([&](const std::string& key, EntryKind kind) {
    const KeysAt selected = keys_at(keys, key);
    if (selected.whole) return;
    if (selected.below.empty() || kind != EntryKind::TensorDict) {
      drop.push_back(key);
    } else {
      impl_->find(key)->tensordict().select_(selected.below, options);
    }
  });
  for (auto it = drop.rbegin(); it != drop.rend(); ++it) impl_->erase(*it);
  return *this;
}

TensorDict& TensorDict::exclude_(const std::vector<NestedKey>& keys) {
  for (const auto& key : keys) {
    if (contains(key)) del_(key);
  }
  return *this;
}

namespace {
// Replaces td's entries by `from`'s (the in-place forms of the key ops).
TensorDict& replace_entries(TensorDict& td, const TensorDict& from) {
  td.clear();
  from.impl()->for_each([&](const std::string& key, const Value& value) { td.impl()->insert(key, value); });
  return td;
}
}  // namespace

TensorDict& TensorDict::flatten_keys_(std::string_view separator) {
  check_unlocked();
  return replace_entries(*this, flatten_keys(separator));
}

TensorDict& TensorDict::unflatten_keys_(std::string_view separator) {
  check_unlocked();
  return replace_entries(*this, unflatten_keys(separator));
}

namespace {
// tensordict's update_batch_size: every level of `dest` takes `source`'s
// batch size. Nested tensordicts present on both sides keep their identity;
// every other entry goes (the update then sets them from `source`).
void rebatch(TensorDict dest, const TensorDict& source) {
  std::vector<std::string> drop;
  dest.impl()->for_each_key([&](const std::string& key, EntryKind kind) {
    const auto theirs = source.impl()->find(key);
    if (kind == EntryKind::TensorDict && theirs && theirs->is_tensordict()) {
      rebatch(dest.impl()->find(key)->tensordict(), theirs->tensordict());
    } else {
      drop.push_back(key);
    }
  });
  for (auto it = drop.rbegin(); it != drop.rend(); ++it) dest.impl()->erase(*it);
  dest.impl()->set_meta(source.batch_size().vec(), dest.device(), {});
}

// update_batch_size into another batch size: every leaf key of `dest` must
// be in `source` (RuntimeError naming those it lacks); with `refuse_options`
// (a level that takes the source's batch size whole, or a lazy stack that
// takes more members), inplace and keys_to_update cannot apply.
void check_rebatch(const TensorDict& dest, const TensorDict& source, const UpdateOptions& options, bool refuse_options) {
  if (refuse_options && options.inplace) {
    throw RuntimeError("update: the batch sizes differ, but update was called with inplace=true, which cannot be achieved");
  }
  if (refuse_options && options.keys_to_update) {
    throw RuntimeError("update: updating tensordicts of different batch sizes with keys_to_update is not supported");
  }
  std::vector<std::string> missing;
  for (const auto& key : dest.keys({.include_nested = true, .leaves_only = true, .is_leaf = IsLeaf::NonTensor})) {
    if (!source.contains(key)) missing.push_back(key.repr());
  }
  if (!missing.empty()) {
    throw RuntimeError(fmt::format("update: with update_batch_size every key of the destination must be in the source; "
                                   "missing from the source: {}", fmt::join(missing, ", ")));
  }
}
}  // namespace

TensorDict& TensorDict::update(const TensorDict& other, const UpdateOptions& options) {
  // A lazy stack takes another batch size member by member (tensordict's
  // _lazy.py _update_entries).
  if (const auto own = detail::kind_ops(*impl_).update_batch_size;
      own && options.update_batch_size && other.batch_size() != batch_size()) {
    own(*this, other, options, [&] { check_unlocked(); }, [&](bool refuse_options) { check_rebatch(*this, other, options, refuse_options); });
    return *this;
  }
  const auto nb = std::min(batch_dims(), other.batch_dims());
  if (batch_size().slice(0, nb) != other.batch_size().slice(0, nb)) {
    if (!options.update_batch_size) {
      throw RuntimeError(fmt::format("update: the batch sizes differ ({} and {}); set update_batch_size to take the source's",
                                           shape_string(batch_size()), shape_string(other.batch_size())));
    }
    check_rebatch(*this, other, options, /*refuse_options=*/true);
    check_unlocked();
    rebatch(*this, other);
    return update(options.clone ? TensorDict(other.clone()) : other);
  }
  TensorDict source = options.keys_to_update ? TensorDict(other.select(*options.keys_to_update, {.strict = false})) : other;
  if (options.clone) source = source.clone();
  if (!options.inplace) return update(source);
  for (const auto& [key, value] : source.items({.include_nested = true, .leaves_only = true, .is_leaf = IsLeaf::NonTensor})) set(key, value, {.inplace = true});
  return *this;
}

TensorDict TensorDict::flatten_keys(std::string_view separator) const {
  TensorDict out = no_entries_like(*this);
  for (const auto& [key, value] : items({.include_nested = true})) {
    // Leaves, and nested tensordicts only when they hold no entry at all.
    if (value.is_tensordict() && value.tensordict().num_keys() > 0) continue;
    std::string flat = key.join(separator);
    if (out.impl()->find(flat)) {
      throw KeyError(fmt::format("flatten_keys: key {} flattens to '{}', which already exists", key.repr(), flat));
    }
    out.impl()->insert(flat, value);
  }
  return out;
}

TensorDict TensorDict::unflatten_keys(std::string_view separator) const {
  TensorDict out = no_entries_like(*this);
  impl_->for_each([&](const std::string& flat, const Value& value) {
    std::vector<std::string> parts;
    std::size_t start = 0;
    while (true) {
      const std::size_t at = separator.empty() ? std::string::npos : flat.find(separator, start);
      parts.push_back(flat.substr(start, at == std::string::npos ? std::string::npos : at - start));
      if (at == std::string::npos) break;
      start = at + separator.size();
    }
    // A key that lands on an entry, or under a tensor or non-tensor value,
    // would override it: tensordict's KeyError (base.py:16966).
    bool taken = out.contains(NestedKey(parts));
    for (std::size_t n = 1; n < parts.size() && !taken; ++n) {
      const auto above = out.get_value(NestedKey(std::vector<std::string>(parts.begin(), parts.begin() + n)));
      taken = above && !above->is_tensordict();
    }
    NestedKey key(std::move(parts));
    if (taken) {
      throw KeyError(
          fmt::format("unflatten_keys: Unflattening key(s) in tensordict will override an existing for "
                      "unflattened key {} (from '{}')",
                      key.repr(), flat));
    }
    out.set(key, value);
  });
  return out;
}

std::vector<TensorDict> TensorDict::split_keys(const std::vector<std::vector<NestedKey>>& key_lists,
                                               const SelectOptions& options) const {
  TensorDict rest = detail::dense_shallow_copy(*this, "split_keys");  // the structure only: the tensors are shared
  auto out = rest.split_keys_(key_lists, options);
  out.push_back(std::move(rest));
  return out;
}

std::vector<TensorDict> TensorDict::split_keys_(const std::vector<std::vector<NestedKey>>& key_lists,
                                                const SelectOptions& options) {
  std::vector<TensorDict> out;
  std::vector<NestedKey> taken;
  for (const auto& keys : key_lists) {  // a missing key throws before anything moves
    out.push_back(detail::dense_shallow_copy(select(keys, options), "split_keys"));  // a lazy stack's selection stacked
    taken.insert(taken.end(), keys.begin(), keys.end());
  }
  check_unlocked();
  exclude_(taken);
  return out;
}

TensorDict TensorDict::empty(const EmptyOptions& options) const {
  const bool recurse = options.recurse;
  TensorDict out = no_entries_like(*this);
  if (recurse) {
    impl_->for_each_key([&](const std::string& key, EntryKind kind) {
      if (kind == EntryKind::TensorDict) out.impl()->insert(key, Value(impl_->find(key)->tensordict().empty({.recurse = true})));
    });
  }
  return out;
}

TensorDict& TensorDict::clear() {
  check_unlocked();
  std::vector<std::string> keys;
  impl_->for_each_key([&](const std::string& key, EntryKind) { keys.push_back(key); });
  // From the back: no remaining entry moves, each erase costs O(1).
  for (auto it = keys.rbegin(); it != keys.rend(); ++it) impl_->erase(*it);
  return *this;
}

namespace {
// cat_tensors and stack_tensors: `combine` makes the new entry from the
// tensors at `keys`; it is set before any of them is deleted.
TensorDict& combine_entries(TensorDict& td, const std::vector<NestedKey>& keys, const NestedKey& out_key,
                                bool keep_entries, const char* op,
                                const std::function<at::Tensor(const std::vector<at::Tensor>&)>& combine) {
  if (keys.empty()) throw ValueError(fmt::format("{}: no keys given", op));
  std::vector<at::Tensor> entries;
  entries.reserve(keys.size());
  for (const auto& key : keys) entries.push_back(td.get(key));
  at::Tensor combined;
  try {
    combined = combine(entries);
  } catch (...) {
    rethrow_reworded([&](std::string_view what) {
      std::vector<std::string> names;
      for (const auto& key : keys) names.push_back(key.repr());
      return fmt::format("{} of {}: {}", op, fmt::join(names, ", "), what);
    });
  }
  td.set(out_key, std::move(combined));
  if (!keep_entries) {
    for (const auto& key : keys) {
      if (key != out_key && td.contains(key)) td.del_(key);
    }
  }
  return td;
}
}  // namespace

TensorDict& TensorDict::cat_tensors(const std::vector<NestedKey>& keys, const NestedKey& out_key, int64_t dim,
                                    const CombineTensorsOptions& options) {
  return combine_entries(*this, keys, out_key, options.keep_entries, "cat_tensors",
                         [&](const std::vector<at::Tensor>& entries) { return at::cat(entries, dim); });
}

TensorDict& TensorDict::stack_tensors(const std::vector<NestedKey>& keys, const NestedKey& out_key, int64_t dim,
                                      const CombineTensorsOptions& options) {
  return combine_entries(*this, keys, out_key, options.keep_entries, "stack_tensors",
                         [&](const std::vector<at::Tensor>& entries) { return at::stack(entries, dim); });
}

std::vector<std::string> TensorDict::sorted_keys() const {
  std::vector<std::string> keys;
  impl_->for_each_key([&](const std::string& key, EntryKind) { keys.push_back(key); });
  std::sort(keys.begin(), keys.end());
  return keys;
}

std::pair<std::string, Value> TensorDict::popitem() {
  std::optional<std::string> last;
  impl_->for_each_key([&](const std::string& key, EntryKind) { last = key; });
  if (!last) throw KeyError("popitem(): the tensordict is empty");
  return {*last, pop(NestedKey(*last))};
}

// ---- separating and filtering entries --------------------------------------------------

TensorDict TensorDict::separates(const std::vector<NestedKey>& keys, const SeparatesOptions& options) {
  // strict: select's KeyError names the missing key before anything moves.
  std::vector<NestedKey> present;
  for (const auto& key : keys) {
    if (options.strict || contains(key)) present.push_back(key);
  }
  TensorDict out = split_keys_({present})[0];
  if (!options.keep_empty) {
    // tensordict's filter_empty_(): every nested level without a leaf goes,
    // deepest first (so a level holding only empty ones goes too).
    std::vector<NestedKey> levels;
    for (auto& [key, value] : items({.include_nested = true})) {
      if (value.is_tensordict()) levels.push_back(key);
    }
    std::stable_sort(levels.begin(), levels.end(),
                     [](const NestedKey& a, const NestedKey& b) { return a.size() > b.size(); });
    for (const auto& level : levels) {
      if (get_td(level).keys().empty()) del_(level);
    }
  }
  return out;
}

std::vector<std::pair<NestedKey, NonTensorData>> TensorDict::non_tensor_items(
    const NonTensorItemsOptions& options) const {
  std::vector<std::pair<NestedKey, NonTensorData>> out;
  for (auto& [key, value] :
       items({.include_nested = options.include_nested, .leaves_only = true, .is_leaf = IsLeaf::NonTensor})) {
    if (value.is_non_tensor()) out.emplace_back(key, value.non_tensor());
  }
  return out;
}

TensorDict TensorDict::filter_non_tensor_data() const {
  std::vector<NestedKey> non_tensor;
  for (auto& [key, value] : non_tensor_items({.include_nested = true})) non_tensor.push_back(key);
  return exclude(non_tensor);
}

}  // namespace tensordict
