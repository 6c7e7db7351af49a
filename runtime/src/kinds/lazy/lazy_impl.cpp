#include "kinds/lazy/lazy_impl.h"

#include <ATen/ATen.h>

#include <algorithm>
#include <stdexcept>

#include "core/format.h"
#include "kinds/dense/map_leaves.h"
#include "tensordict/base.h"
#include "tensordict/errors.h"
#include "tensordict/detail/impl.h"
#include "tensordict/lazy.h"
#include "tensordict/non_tensor.h"
#include "core/unbatched.h"
#include "core/value_kind.h"

namespace tensordict::detail {

LazyStackedImpl::LazyStackedImpl(std::vector<TensorDict> members, int64_t stack_dim,
                                 std::optional<std::string> stack_dim_name, std::optional<std::vector<int64_t>> member_batch,
                                 std::optional<at::Device> device)
    : members_(std::move(members)), stack_dim_(stack_dim), stack_dim_name_(std::move(stack_dim_name)), empty_device_(device) {
  derives_lock_ = true;
  member_batch_ = members_.empty() ? member_batch.value_or(std::vector<int64_t>{}) : members_.front().batch_size().vec();
  if (!members_.empty() && member_batch && *member_batch != member_batch_) {
    throw RuntimeError(fmt::format("LazyStackedTensorDict: batch_size {} differs from the members' batch size {}",
                                         shape_string(*member_batch), shape_string(member_batch_)));
  }
  // Members of different batch sizes are stacked, the dims where they
  // differ read -1 (tensordict 0.15); they need as many batch dims.
  for (std::size_t i = 1; i < members_.size(); ++i) {
    const auto batch = members_[i].batch_size();
    if (batch.size() != member_batch_.size()) {
      throw RuntimeError(fmt::format("lazy_stack: tensordict {} has batch size {} but tensordict 0 has {}; the members of a lazy stack have as many batch dims",
                                     i, shape_string(batch), shape_string(members_.front().batch_size())));
    }
    for (std::size_t d = 0; d < batch.size(); ++d) {
      if (batch[d] != member_batch_[d]) member_batch_[d] = -1;
    }
  }
  stack_dim_ = wrap_batch_dim(stack_dim, static_cast<int64_t>(member_batch_.size()), "lazy_stack", 1);
  refresh_meta();
}

bool LazyStackedImpl::member_batch_known() const {
  return std::all_of(member_batch_.begin(), member_batch_.end(), [](int64_t s) { return s >= 0; });
}

void LazyStackedImpl::refresh_meta() {
  batch_size_ = member_batch_;
  batch_size_.insert(batch_size_.begin() + stack_dim_, static_cast<int64_t>(members_.size()));
  // Members whose names differ leave the stack unnamed (tensordict raises
  // when asked; here every op still runs). No member: no names.
  const Names unnamed(member_batch_.size());
  const Names& first = members_.empty() ? unnamed : members_.front().names();
  const bool agree = std::all_of(members_.begin(), members_.end(), [&](const TensorDict& m) { return m.names() == first; });
  names_ = agree ? first : unnamed;
  const bool taken = stack_dim_name_ && std::find(names_.begin(), names_.end(), stack_dim_name_) != names_.end();
  names_.insert(names_.begin() + stack_dim_, taken ? std::nullopt : stack_dim_name_);
}

void LazyStackedImpl::add_member(int64_t position, const TensorDict& td) {
  if (members_.empty()) {
    // The first member sets the batch size (tensordict's append to an empty stack).
    if (stack_dim_ > td.batch_dims()) {
      throw RuntimeError(fmt::format("cannot add a tensordict of batch size {} to an empty lazy stack along dim {}",
                                           shape_string(td.batch_size()), stack_dim_));
    }
    member_batch_ = td.batch_size().vec();
  } else {
    // tensordict's ValueErrors (_lazy.py:3526-3534).
    if (td.device() != members_.front().device()) {
      auto name = [](const std::optional<at::Device>& d) { return d ? d->str() : std::string("None"); };
      throw ValueError(fmt::format("Devices differ: stack has device={}, new value has device={}",
                                   name(members_.front().device()), name(td.device())));
    }
    // A stack of members of different batch sizes takes any size at its
    // dims of unknown size (-1).
    const auto batch = td.batch_size();
    bool fits = batch.size() == member_batch_.size();
    for (std::size_t d = 0; fits && d < batch.size(); ++d) fits = member_batch_[d] < 0 || member_batch_[d] == batch[d];
    if (!fits) {
      throw ValueError(
          fmt::format("Batch sizes in tensordicts differs: stack has batch_size={}, new_value has batch_size={}",
                      shape_string(member_batch_), shape_string(td.batch_size())));
    }
  }
  const auto n = static_cast<int64_t>(members_.size());
  if (position < -n - 1 || position > n) {
    throw IndexError(
        fmt::format("insert: position {} is out of range for a lazy stack of {} tensordicts", position, n));
  }
  if (position < 0) position += n + 1;
  members_.insert(members_.begin() + position, td);
  refresh_meta();
}

void LazyStackedImpl::reset_members(std::vector<TensorDict> members) {
  // Checked the way the constructor checks them, before anything changes.
  const LazyStackedImpl checked(members, stack_dim_, stack_dim_name_);
  members_ = std::move(members);
  member_batch_ = checked.member_batch_;
  refresh_meta();
}

std::optional<at::Device> LazyStackedImpl::device() const {
  if (members_.empty()) return empty_device_;
  auto device = members_.front().device();
  for (const auto& m : members_) {
    if (m.device() != device) return std::nullopt;
  }
  return device;
}

void LazyStackedImpl::set_meta(std::vector<int64_t> batch_size, std::optional<at::Device> device, Names names) {
  if (batch_size != batch_size_ || device != this->device()) {
    throw RuntimeError(
        "a LazyStackedTensorDict takes its batch size and device from its members; change them on the members or on "
        "contiguous()");
  }
  // tensordict's _set_names: the stack dim's name is the stack's own, the
  // others are the members'.
  names = checked_names(std::move(names), batch_size_.size());
  stack_dim_name_ = names[stack_dim_];
  names.erase(names.begin() + stack_dim_);
  for (auto& m : members_) m.rename_(names);
  refresh_meta();
}

bool LazyStackedImpl::derived_lock() const {
  return own_lock() || (!members_.empty() && std::all_of(members_.begin(), members_.end(), [](const TensorDict& m) { return m.is_locked(); }));
}

bool LazyStackedImpl::marked_shared() const {
  return !members_.empty() &&
         std::all_of(members_.begin(), members_.end(), [](const TensorDict& m) { return m.impl()->marked_shared(); });
}

bool members_all_shared(std::size_t shared, std::size_t members) {
  // tensordict's rule (_lazy.py is_shared): the members answer, and must agree.
  if (shared != 0 && shared != members) {
    throw RuntimeError(fmt::format("tensordicts shared status mismatch, got {} shared tensordicts and {} non shared "
                                   "tensordict",
                                   shared, members - shared));
  }
  return shared != 0;
}

bool LazyStackedImpl::is_shared() const {
  std::size_t shared = 0;
  for (const auto& m : members_) shared += m.is_shared() ? 1 : 0;
  return members_all_shared(shared, members_.size());
}

std::vector<std::string> LazyStackedImpl::common_keys() const {
  std::vector<std::string> keys;
  if (members_.empty()) return keys;
  members_.front().impl()->for_each_key([&](const std::string& key, EntryKind) {
    const bool everywhere = std::all_of(members_.begin() + 1, members_.end(), [&](const TensorDict& m) {
      return m.impl()->find(key).has_value();
    });
    if (everywhere) keys.push_back(key);
  });
  return keys;
}

bool LazyStackedImpl::entries_stack() const {
  for (const auto& key : common_keys()) {
    const auto kind = entry_kind(key);
    if (kind == EntryKind::Tensor) {
      const auto shape = tensor_meta(key).shape;
      if (std::find(shape.begin(), shape.end(), -1) != shape.end()) return false;
    } else if (kind == EntryKind::TensorDict) {
      // The members' levels, stacked lazily (nothing is copied).
      if (!as_lazy(*find(key)->tensordict().impl())->entries_stack()) return false;
    }
  }
  return true;
}

std::size_t LazyStackedImpl::num_keys() const { return common_keys().size(); }

void LazyStackedImpl::for_each_key(c10::function_ref<void(const std::string&, EntryKind)> fn) const {
  for (const auto& key : common_keys()) fn(key, entry_kind_of(*members_.front().impl()->find(key)));
}

// A key of every member; its kind is the first member's (find() reports members that disagree).
std::optional<EntryKind> LazyStackedImpl::entry_kind(const std::string& key) const {
  if (members_.empty()) return std::nullopt;
  std::optional<EntryKind> first;
  for (const auto& m : members_) {
    const auto kind = m.impl()->entry_kind(key);
    if (!kind) return std::nullopt;
    if (!first) first = kind;
  }
  return first;
}

void LazyStackedImpl::for_each(c10::function_ref<void(const std::string&, const Value&)> fn) const {
  for (const auto& key : common_keys()) fn(key, *find(key));
}

std::optional<Value> LazyStackedImpl::find(const std::string& key) const {
  if (members_.empty()) return std::nullopt;
  std::vector<Value> values;
  for (const auto& m : members_) {
    auto v = m.impl()->find(key);
    if (!v) return std::nullopt;
    values.push_back(*v);
  }
  const EntryKind kind = entry_kind_of(values.front());
  for (std::size_t i = 1; i < values.size(); ++i) {
    if (entry_kind_of(values[i]) != kind || values[i].is_unbatched() != values.front().is_unbatched()) {
      throw RuntimeError(fmt::format("LazyStackedTensorDict: key '{}' holds different kinds of entries in tensordicts 0 and {}", key, i));
    }
  }
  if (values.front().is_unbatched()) return first_unbatched(values);
  if (kind == EntryKind::TensorDict) {
    std::vector<TensorDict> nested;
    for (const auto& v : values) nested.push_back(v.tensordict());
    return Value(TensorDict(std::make_shared<LazyStackedImpl>(std::move(nested), stack_dim_, stack_dim_name_)));
  }
  if (kind == EntryKind::NonTensor) {
    std::vector<NonTensorData> items;
    std::vector<std::vector<int64_t>> batches;
    for (std::size_t i = 0; i < values.size(); ++i) {
      items.push_back(values[i].non_tensor());
      batches.push_back(members_[i].batch_size().vec());
    }
    return Value(combine_non_tensor(items, batches, [&](const std::vector<at::Tensor>& ids) { return at::stack(ids, stack_dim_); }));
  }
  std::vector<at::Tensor> tensors;
  for (const auto& v : values) tensors.push_back(v.tensor());
  for (std::size_t i = 1; i < tensors.size(); ++i) {
    if (tensors[i].sizes() != tensors.front().sizes()) {
      throw RuntimeError(fmt::format("LazyStackedTensorDict: cannot stack key '{}': tensordict 0 holds shape {} but tensordict {} holds {}; use get_list() or get_padded() for entries of different shapes",
                                           key, shape_string(tensors.front().sizes()), i, shape_string(tensors[i].sizes())));
    }
  }
  return Value(at::stack(tensors, stack_dim_));
}

TensorMeta LazyStackedImpl::tensor_meta(const std::string& key) const {
  TensorMeta meta = members_.front().impl()->tensor_meta(key);
  // An UnbatchedTensor is the first member's, unstacked (find()).
  if (meta.unbatched) return meta;
  for (std::size_t i = 1; i < members_.size(); ++i) {
    const TensorMeta other = members_[i].impl()->tensor_meta(key);
    if (other.shape.size() != meta.shape.size()) {
      meta.shape = {-1};  // tensordict's get_item_shape: ranks differ, no dim is known
      return meta;
    }
    for (std::size_t d = 0; d < meta.shape.size(); ++d) {
      if (meta.shape[d] != other.shape[d]) meta.shape[d] = -1;
    }
  }
  meta.shape.insert(meta.shape.begin() + stack_dim_, static_cast<int64_t>(members_.size()));
  // The stacked tensor is a new one, in shared memory only on CUDA
  // (tensordict's _get_repr_custom of a lazy stack's entry).
  meta.is_shared = meta.device.is_cuda();
  return meta;
}

void LazyStackedImpl::for_each_child(c10::function_ref<void(const TensorDict&)> fn) const {
  for (const auto& m : members_) fn(m);
}

void LazyStackedImpl::insert(const std::string& key, Value value) {
  const auto n = static_cast<int64_t>(members_.size());
  if (value.is_unbatched()) {  // every member shares it (tensordict's _unbatched_member_values)
    for (int64_t i = 0; i < n; ++i) TensorDict(members_[i]).set(key, value);
  } else if (value.is_tensor()) {
    const auto parts = value.tensor().unbind(stack_dim_);
    for (int64_t i = 0; i < n; ++i) TensorDict(members_[i]).set(key, parts[i]);
  } else if (value.is_tensordict()) {
    const auto parts = value.tensordict().unbind(stack_dim_);
    for (int64_t i = 0; i < n; ++i) TensorDict(members_[i]).set(key, parts[i]);
  } else {
    const NonTensorData& data = value.non_tensor();
    for (int64_t i = 0; i < n; ++i) {
      TensorDict(members_[i]).set(key, data.is_stack() ? NonTensorData::from_ids(data.pool(), data.ids().select(stack_dim_, i)) : data);
    }
  }
}

bool LazyStackedImpl::erase(const std::string& key) {
  bool erased = false;
  for (const auto& m : members_) erased = m.impl()->erase(key) || erased;
  return erased;
}

void LazyStackedImpl::rename(const std::string& from, const std::string& to) {
  for (const auto& m : members_) {
    if (m.impl()->find(from)) m.impl()->rename(from, to);
  }
}

void LazyStackedImpl::assign(const std::string& key, const at::Tensor& value) {
  // An UnbatchedTensor: written whole into each member's (usually one tensor).
  if (members_.front().impl()->find(key)->is_unbatched()) {
    for (const auto& m : members_) m.impl()->assign(key, value);
    return;
  }
  const auto parts = value.expand(tensor_meta(key).shape).unbind(stack_dim_);
  for (std::size_t i = 0; i < members_.size(); ++i) members_[i].impl()->assign(key, parts[i]);
}

void LazyStackedImpl::release_children(c10::function_ref<void(std::shared_ptr<TensorDictImpl>)> take) {
  std::vector<TensorDict> members = std::move(members_);
  members_.clear();
  for (const TensorDict& member : members) take(member.impl());
}

}  // namespace tensordict::detail
