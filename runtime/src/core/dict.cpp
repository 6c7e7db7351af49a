// The dict API of TensorDict: lookup, set, delete, key views.
#include <c10/util/SmallVector.h>
#include <nlohmann/json.hpp>
#include <fmt/ranges.h>

#include <algorithm>
#include <stdexcept>

#include "core/format.h"
#include "core/holding_level.h"
#include "core/kind_ops.h"
#include "core/entry_writes.h"
#include "core/nesting.h"
#include "tensordict/base.h"
#include "tensordict/errors.h"
#include "tensordict/detail/impl.h"
#include "tensordict/non_tensor.h"
#include "core/value_kind.h"

namespace tensordict {


// ---- Value ---------------------------------------------------------------------

Value::Value(const TensorDict& td) : value_(td.impl()) {}

Value::Value(const NonTensorData& data) : value_(std::make_shared<const NonTensorData>(data)) {}

const at::Tensor& Value::tensor() const& {
  if (!is_tensor()) throw TypeError(fmt::format("the value is {}, not a tensor", detail::kind_of(*this)));
  return value_.index() == 0 ? std::get<0>(value_) : std::get<3>(value_).data;
}

at::Tensor Value::tensor() && {
  if (!is_tensor()) throw TypeError(fmt::format("the value is {}, not a tensor", detail::kind_of(*this)));
  return value_.index() == 0 ? std::move(std::get<0>(value_)) : std::move(std::get<3>(value_).data);
}

const NonTensorData& Value::non_tensor() const {
  if (!is_non_tensor()) throw TypeError(fmt::format("the value is {}, not non-tensor data", detail::kind_of(*this)));
  return *std::get<2>(value_);
}

TensorDict Value::tensordict() const { return TensorDict(impl()); }

const std::shared_ptr<TensorDictImpl>& Value::impl() const {
  if (!is_tensordict()) throw TypeError(fmt::format("the value is {}, not a tensordict", detail::kind_of(*this)));
  return std::get<1>(value_);
}

// ---- helpers ---------------------------------------------------------------------

namespace {

std::vector<std::string> level_keys(const TensorDictImpl& impl) {
  std::vector<std::string> keys;
  keys.reserve(impl.num_keys());
  impl.for_each_key([&](const std::string& key, EntryKind) { keys.push_back(key); });
  return keys;
}

[[noreturn]] void throw_missing(const NestedKey& key, const TensorDictImpl& level, std::size_t depth) {
  std::string where;
  if (depth > 0) {
    where = " at " + NestedKey(std::vector<std::string>(key.path().begin(), key.path().begin() + depth)).repr();
  }
  throw KeyError(fmt::format("key {} not found in {}{} with keys [{}]", key.repr(), level.type_name(), where,
                             fmt::join(level_keys(level), ", ")));
}

// A leaf must start with the batch size of the level that holds it.
void check_leaf(const TensorDictImpl& level, const NestedKey& key, const at::Tensor& tensor) {
  if (!tensor.defined()) throw ValueError(fmt::format("cannot set key {}: the tensor is undefined", key.repr()));
  const auto batch = level.batch_size();
  if (!detail::leaf_starts_with(tensor, batch)) {
    throw RuntimeError(fmt::format("batch size mismatch for key {}: the tensor's shape {} does not start with the batch size {}",
                                         key.repr(), shape_string(detail::leaf_shape(tensor)), shape_string(batch)));
  }
}

// The value at `key`, or the KeyError naming the key and what is there.
Value existing(const TensorDict& parent, const NestedKey& key) {
  auto found = parent.impl()->find(key.back());
  if (!found) throw_missing(key, *parent.impl(), key.size() - 1);
  return *found;
}

bool starts_with(at::IntArrayRef sizes, at::IntArrayRef prefix) {
  return sizes.size() >= prefix.size() && sizes.slice(0, prefix.size()) == prefix;
}

// Setting `nested` into `level` must not make a cycle: that happens exactly
// when `level` is `nested` or lies below it (then `nested` is `level` or one of
// its ancestors). Every walk over a tree would then run forever. The subtree
// must also leave room under the nesting bound. One walk over the nested
// tensordicts of `nested` (each visited once) checks both.
void refuse_cycle(const TensorDictImpl& level, const TensorDict& nested, const NestedKey& key) {
  // Nested trees are small: a linear scan of an inline vector allocates
  // nothing on the common path (setting one nested tensordict).
  c10::SmallVector<const TensorDictImpl*, 16> seen;
  auto walk = [&](auto&& self, const TensorDictImpl& td, std::size_t depth) -> void {
    if (&td == &level) {
      throw ValueError(fmt::format(
          "cannot set key {}: a tensordict cannot contain itself (the value is, or holds, the tensordict it would be "
          "set in)",
          key.repr()));
    }
    if (depth >= detail::kMaxNestingDepth) {
      throw ValueError(fmt::format("cannot set key {}: the value nests tensordicts more than {} levels deep",
                                   key.repr(), detail::kMaxNestingDepth));
    }
    // An h5 file's groups hold no in-memory tensordict: nothing to walk.
    if (std::find(seen.begin(), seen.end(), &td) != seen.end() || !detail::kind_ops(td).nests_in_memory) return;
    seen.push_back(&td);
    td.for_each_child([&](const TensorDict& child) { self(self, *child.impl(), depth + 1); });
  };
  walk(walk, *nested.impl(), key.size());
}

}  // namespace

// ---- TensorDict --------------------------------------------------------------

TensorDict::TensorDict(std::shared_ptr<TensorDictImpl> impl) : impl_(std::move(impl)) {
  if (!impl_) throw ValueError("a tensordict handle needs an implementation");
}

void TensorDict::require_kind(Kind expected) const {
  if (kind() != expected) {
    throw TypeError(fmt::format("cannot view a {} as a {}: it is another kind of tensordict", class_name(kind()),
                                class_name(expected)));
  }
}

// The handle's questions to its impl, out of line so that base.h needs no impl.h.
Kind TensorDict::kind() const { return impl_->kind(); }
at::IntArrayRef TensorDict::batch_size() const { return impl_->batch_size(); }
std::optional<at::Device> TensorDict::device() const { return impl_->device(); }
const Names& TensorDict::names() const { return impl_->names(); }
std::size_t TensorDict::num_keys() const { return impl_->num_keys(); }
bool TensorDict::is_locked() const { return impl_->is_locked(); }
void TensorDict::check_unlocked() const {
  if (impl_->is_locked()) throw_locked();
}

bool TensorDict::has_names() const { return detail::any_named(names()); }

int64_t TensorDict::numel() const {
  const auto batch = batch_size();
  if (std::find(batch.begin(), batch.end(), 0) != batch.end()) return 0;
  detail::require_known_sizes(batch, "numel");
  int64_t n = 1;
  for (auto s : batch) {
    if (__builtin_mul_overflow(n, s, &n)) {
      throw ValueError(fmt::format("numel of the batch size {} does not fit in int64", shape_string(batch)));
    }
  }
  return n;
}

int64_t TensorDict::len() const { return batch_dims() ? batch_size()[0] : 0; }

bool TensorDict::is_empty() const {
  detail::NestingGuard guard("is_empty");
  bool empty = true;
  impl_->for_each_key([&](const std::string& key, EntryKind kind) {
    if (empty) empty = kind == EntryKind::TensorDict && impl_->find(key)->tensordict().is_empty();
  });
  return empty;
}

void TensorDict::set_batch_size(at::IntArrayRef batch_size) {
  detail::NestingGuard guard("set_batch_size");
  impl_->for_each_key([&](const std::string& key, EntryKind kind) {
    if (kind == EntryKind::Tensor) {
      const auto shape = impl_->tensor_meta(key).shape;
      // An UnbatchedTensor keeps its shape whatever the batch size.
      if (!starts_with(shape, batch_size) && !impl_->find(key)->is_unbatched()) {
        throw RuntimeError(fmt::format("cannot set batch size {}: key {} has shape {}", shape_string(batch_size),
                                             NestedKey(key).repr(), shape_string(shape)));
      }
      return;
    }
    const Value v = *impl_->find(key);
    if (v.is_non_tensor()) {
      const auto& ids = v.non_tensor().ids();
      if (ids.defined() && !starts_with(ids.sizes(), batch_size)) {
        throw RuntimeError(fmt::format("cannot set batch size {}: non-tensor stack {} spans batch {}", shape_string(batch_size),
                                             NestedKey(key).repr(), shape_string(ids.sizes())));
      }
    } else {
      TensorDict nested = v.tensordict();
      if (!starts_with(nested.batch_size(), batch_size)) {
        try {
          nested.set_batch_size(batch_size);
        } catch (const std::exception& e) {
          throw RuntimeError(fmt::format("cannot set batch size {}: nested tensordict {} has batch size {} ({})",
                                               shape_string(batch_size), NestedKey(key).repr(),
                                               shape_string(nested.batch_size()), e.what()));
        }
      }
    }
  });
  // tensordict's rule (base.py batch_size setter): names extend with unnamed
  // dims or lose their trailing ones.
  Names names;
  if (has_names()) {
    names = impl_->names();
    names.resize(batch_size.size(), std::nullopt);
  }
  impl_->set_meta(batch_size.vec(), device(), std::move(names));
}

TensorDict TensorDict::parent_of(const NestedKey& key, bool create) const {
  TensorDict level = *this;
  for (std::size_t depth = 0; depth + 1 < key.size(); ++depth) {
    const std::string& part = key[depth];
    auto found = level.impl_->find(part);
    if (!found) {
      if (!create) throw_missing(key, *level.impl_, depth);
      level.check_unlocked();
      TensorDict child({}, level.batch_size(), level.device(), level.names());
      level.impl_->insert(part, Value(child));
      // Found again: a view kind stores it elsewhere (a sub-view: in its source).
      level = level.impl_->find(part)->tensordict();
    } else if (found->is_tensordict()) {
      level = found->tensordict();
    } else {
      // tensordict's ValueError (_td.py _get_tuple): the path exists, but not as a tensordict.
      throw ValueError(
          fmt::format("key {} cannot be reached: {} is a tensor, not a tensordict", key.repr(),
                      NestedKey(std::vector<std::string>(key.path().begin(), key.path().begin() + depth + 1)).repr()));
    }
  }
  return level;
}

std::shared_ptr<TensorDictImpl> detail::holding_level(const std::shared_ptr<TensorDictImpl>& top, const NestedKey& key) {
  std::shared_ptr<TensorDictImpl> level = top;
  for (std::size_t depth = 0; depth + 1 < key.size(); ++depth) {
    auto found = level->find(key[depth]);
    if (!found || !found->is_tensordict()) return nullptr;
    level = found->impl();
  }
  return level;
}

bool TensorDict::contains(const NestedKey& key) const {
  const auto level = detail::holding_level(impl_, key);
  return level && level->has_key(key.back());
}

std::optional<Value> TensorDict::get_value(const NestedKey& key) const {
  const auto level = detail::holding_level(impl_, key);
  if (!level) return std::nullopt;
  return level->find(key.back());
}

bool TensorDict::is_unbatched(const NestedKey& key) const { return existing(parent_of(key, false), key).is_unbatched(); }

at::Tensor TensorDict::get(const NestedKey& key) const {
  const Value found = existing(parent_of(key, false), key);
  if (found.is_non_tensor()) {
    throw TypeError(fmt::format("key {} holds non-tensor data, not a tensor; use get_non_tensor()", key.repr()));
  }
  if (!found.is_tensor()) {
    throw TypeError(fmt::format("key {} holds a {}, not a tensor; use get_td() for nested tensordicts", key.repr(),
                                found.tensordict().type_name()));
  }
  return found.tensor();
}

Json TensorDict::get_non_tensor(const NestedKey& key) const {
  const Value found = existing(parent_of(key, false), key);
  if (!found.is_non_tensor()) {
    throw TypeError(fmt::format("key {} holds {}, not non-tensor data", key.repr(),
                                found.is_tensor() ? "a tensor" : "a tensordict"));
  }
  return found.non_tensor().data();
}

Json TensorDict::get_non_tensor(const NestedKey& key, const Json& default_value) const {
  if (!contains(key)) return default_value;
  return get_non_tensor(key);
}

TensorDict& TensorDict::set_non_tensor(const NestedKey& key, const Json& value) {
  return set(key, NonTensorData(value));
}

at::Tensor TensorDict::get(const NestedKey& key, const at::Tensor& default_value) const {
  auto found = get_value(key);
  if (!found) return default_value;
  if (!found->is_tensor()) return get(key);  // the same clear error
  return found->tensor();
}

TensorDict TensorDict::get_td(const NestedKey& key) const {
  const Value found = existing(parent_of(key, false), key);
  if (found.is_non_tensor()) throw TypeError(fmt::format("key {} holds non-tensor data, not a tensordict", key.repr()));
  if (!found.is_tensordict()) {
    throw TypeError(fmt::format("key {} holds a tensor of shape {}, not a tensordict; use get()", key.repr(),
                                shape_string(detail::leaf_shape(found.tensor()))));
  }
  return found.tensordict();
}

TensorDict& TensorDict::set(const NestedKey& key, Value value) {
  // A one-part key is set here: no handle copy on the common path.
  std::optional<TensorDict> nested_parent;
  if (key.is_nested()) nested_parent = parent_of(key, true);
  const TensorDict& parent = nested_parent ? *nested_parent : *this;
  TensorDictImpl& level = *parent.impl_;
  // tensordict's set() never writes in place (_td.py _set_str): a locked
  // tensordict refuses it, existing key or not; set_() writes in place.
  parent.check_unlocked();
  // A kind may refuse what it cannot store (a sub-view cannot change the kind
  // of its source's entry); the message then names the key.
  // The Value is built in insert()'s parameter: no moved-from copy per set.
  auto insert = [&](auto&& v) {
    try {
      level.insert(key.back(), Value(std::forward<decltype(v)>(v)));
    } catch (const std::invalid_argument&) {
      rethrow_reworded([&](std::string_view what) { return fmt::format("cannot set key {}: {}", key.repr(), what); });
    }
  };
  if (value.is_unbatched()) {
    // Any shape: the batch dims do not apply to it (tensordict's
    // UnbatchedTensor); the device rule does.
    at::Tensor tensor = std::move(value).tensor();
    if (!tensor.defined()) throw ValueError(fmt::format("cannot set key {}: the tensor is undefined", key.repr()));
    if (auto device = level.device(); device && tensor.device() != *device) tensor = tensor.to(*device);
    insert(UnbatchedTensor(std::move(tensor)));
    return *this;
  }
  if (value.is_tensor()) {
    at::Tensor tensor = std::move(value).tensor();
    check_leaf(level, key, tensor);
    if (auto device = level.device(); device && tensor.device() != *device) tensor = tensor.to(*device);
    insert(std::move(tensor));
    return *this;
  }
  if (value.is_non_tensor()) {
    const auto& ids = value.non_tensor().ids();
    if (ids.defined() && ids.sizes() != level.batch_size()) {
      throw RuntimeError(fmt::format("batch size mismatch for key {}: the non-tensor stack spans {} but the batch size is {}",
                                           key.repr(), shape_string(ids.sizes()), shape_string(level.batch_size())));
    }
    insert(std::move(value));
    return *this;
  }
  TensorDict nested = value.tensordict();
  refuse_cycle(level, nested, key);
  if (!starts_with(nested.batch_size(), level.batch_size())) {
    // tensordict's rule: a nested tensordict takes the parent's batch size
    // when its entries allow it (a shallow copy, the original is untouched).
    TensorDict adapted = nested.clone({.recurse = false});
    try {
      adapted.set_batch_size(level.batch_size());
    } catch (const std::exception& e) {
      throw RuntimeError(fmt::format("batch size mismatch for key {}: the tensordict's batch size {} does not start with the batch size {} ({})",
                                           key.repr(), shape_string(nested.batch_size()), shape_string(level.batch_size()), e.what()));
    }
    nested = adapted;
  }
  if (auto device = level.device(); device && nested.device() != device) nested = nested.to(*device);
  // A nested tensordict shares the names of the parent's dims (tensordict's
  // _validate_value): a named parent refines a shallow copy of the value (the
  // caller's tensordict keeps its names; conflicting names are an error), and
  // an unnamed parent takes the value's names.
  const Names& names = level.names();
  const Names& own = nested.names();  // not read once `nested` is replaced below
  const auto leading = static_cast<std::ptrdiff_t>(names.size());
  if (parent.has_names()) {
    if (!std::equal(names.begin(), names.end(), own.begin())) {
      Names refined = names;
      refined.insert(refined.end(), own.begin() + leading, own.end());
      TensorDict copy = nested.clone({.recurse = false});
      try {
        copy.refine_names(refined);
      } catch (const std::exception& e) {
        throw RuntimeError(fmt::format("cannot set {}: its dim names do not match the tensordict's ({})", key.repr(), e.what()));
      }
      nested = copy;
    }
  } else if (nested.has_names()) {
    TensorDict(parent).rename_(Names(own.begin(), own.begin() + leading));
  }
  insert(std::move(nested));
  return *this;
}

TensorDict& TensorDict::set_(const NestedKey& key, const at::Tensor& value) {
  get(key);  // the KeyError / kind errors for a missing or non-tensor entry
  TensorDict parent = parent_of(key, false);
  try {
    parent.impl_->assign(key.back(), value);
  } catch (...) {
    detail::rethrow_invalid_for_key("set_", key);
  }
  return *this;
}

Value TensorDict::setdefault(const NestedKey& key, const Value& default_value) {
  if (auto found = get_value(key)) return *found;
  set(key, default_value);
  return *get_value(key);
}

TensorDict& TensorDict::del_(const NestedKey& key) {
  TensorDict parent = parent_of(key, false);
  parent.check_unlocked();
  if (!parent.impl_->erase(key.back())) throw_missing(key, *parent.impl_, key.size() - 1);
  return *this;
}

Value TensorDict::pop(const NestedKey& key) {
  TensorDict parent = parent_of(key, false);
  const Value found = existing(parent, key);
  parent.check_unlocked();
  parent.impl_->erase(key.back());
  return found;
}

Value TensorDict::pop(const NestedKey& key, const Value& default_value) {
  if (!contains(key)) return default_value;
  return pop(key);
}

TensorDict& TensorDict::create_nested(const NestedKey& key) {
  TensorDict parent = parent_of(key, true);
  parent.check_unlocked();
  parent.impl_->insert(key.back(),
                       Value(TensorDict({}, parent.batch_size(), parent.device(), parent.names())));
  return *this;
}

namespace {

// Walks keys in tensordict's order (a nested tensordict's keys before its own
// key) without building values; fn(path, level, key) for each key kept.
void walk_keys(const TensorDictImpl& top, const KeysOptions& options,
               c10::function_ref<void(const std::vector<std::string>&, const TensorDictImpl&, const std::string&)> fn) {
  std::vector<std::string> path;
  auto walk = [&](auto&& self, const TensorDictImpl& level) -> void {
    detail::NestingGuard guard("keys");
    level.for_each_key([&](const std::string& key, EntryKind kind) {
      path.push_back(key);
      if (options.include_nested && kind == EntryKind::TensorDict) {
        const auto nested = level.find(key)->impl();  // held while walking: a lazy stack builds it
        self(self, *nested);
      }
      const bool leaf = kind == EntryKind::Tensor || (kind == EntryKind::NonTensor && options.is_leaf == IsLeaf::NonTensor);
      if (!options.leaves_only || leaf) fn(path, level, key);
      path.pop_back();
    });
  };
  walk(walk, top);
}

}  // namespace

std::vector<std::pair<NestedKey, Value>> TensorDict::items(const KeysOptions& options) const {
  std::vector<std::pair<NestedKey, Value>> out;
  walk_keys(*impl_, options, [&](const std::vector<std::string>& path, const TensorDictImpl& level,
                                                     const std::string& key) { out.emplace_back(NestedKey(std::span<const std::string>(path)), *level.find(key)); });
  return out;
}

std::vector<NestedKey> TensorDict::keys(const KeysOptions& options) const {
  std::vector<NestedKey> out;
  walk_keys(*impl_, options,
            [&](const std::vector<std::string>& path, const TensorDictImpl&, const std::string&) { out.emplace_back(std::span<const std::string>(path)); });
  return out;
}

std::vector<Value> TensorDict::values(const KeysOptions& options) const {
  std::vector<Value> out;
  for (auto& [key, value] : items(options)) out.push_back(std::move(value));
  return out;
}

TensorDict& TensorDict::set(const NestedKey& key, Value value, const SetOptions& options) {
  const bool inplace = options.inplace;
  if (inplace) {
    const auto existing = get_value(key);
    // Non-tensor data into a non-tensor entry: written over the whole batch
    // where it is, so a memory-mapped level's files follow (tensordict's
    // update(inplace=True) of a memmapped NonTensorStack).
    if (existing && existing->is_non_tensor() && value.is_non_tensor()) {
      put_non_tensor_at(key, BatchIndex({}, batch_size()), value, "set");
      return *this;
    }
    if (existing && existing->is_tensor() && value.is_tensor()) return set_(key, value.tensor());
    if (existing && existing->is_tensordict() && value.is_tensordict()) {
      existing->tensordict().update(value.tensordict(), UpdateOptions{false, true, std::nullopt, false});
      return *this;
    }
  }
  return set(key, std::move(value));
}

TensorDict& TensorDict::update_(const TensorDict& other) {
  // Level by level, so that a lazy stack on this side takes the other's parts
  // along its stack dim member by member (its members may not be stackable).
  std::vector<std::string> path;
  auto walk = [&](auto&& self, const TensorDict& mine, const TensorDict& theirs) -> void {
    detail::NestingGuard guard("update_");
    if (const auto own = detail::kind_ops(*mine.impl_).pointwise_) {
      const Operand source(theirs);
      own(mine, &source, "update_", [&](TensorDict& part, const Operand* share) { self(self, part, *share->tensordict()); });
      return;
    }
    theirs.impl_->for_each_key([&](const std::string& key, EntryKind kind) {
      path.push_back(key);
      const NestedKey full{std::span<const std::string>(path)};
      const auto target = mine.impl_->find(key);
      if (!target) throw_missing(full, *mine.impl_, path.size() - 1);
      if (kind == EntryKind::NonTensor) {
        // Written over the whole batch where it is; a memory-mapped level's
        // files follow (tensordict's update_ of a memmapped NonTensorStack).
        if (!target->is_non_tensor()) {
          throw ValueError(fmt::format("update_ failed for key {}: the tensordict holds {} there and the value non-tensor data",
                                       full.repr(), target->is_tensor() ? "a tensor" : "a tensordict"));
        }
        detail::put_non_tensor_entry(*mine.impl_, full, target->non_tensor(), mine.batch_size(),
                                     BatchIndex({}, mine.batch_size()), theirs.impl_->find(key)->non_tensor());
      } else if (kind == EntryKind::TensorDict && target->is_tensordict()) {
        self(self, target->tensordict(), theirs.impl_->find(key)->tensordict());
      } else {
        try {
          if (kind == EntryKind::TensorDict) throw ValueError("the entry is not a tensordict");
          mine.impl_->assign(key, theirs.impl_->find(key)->tensor());
        } catch (...) {
          detail::rethrow_invalid_for_key("update_", full);
        }
      }
      path.pop_back();
    });
  };
  walk(walk, *this, other);
  return *this;
}

}  // namespace tensordict
