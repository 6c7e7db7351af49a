#include "kinds/dense/dense_impl.h"

#include <algorithm>
#include <atomic>
#include <stdexcept>

#include "core/format.h"
#include "tensordict/errors.h"
#include "tensordict/detail/impl.h"
#include "tensordict/detail/shape_plan.h"

namespace tensordict::detail {

Names checked_names(Names names, std::size_t batch_dims) {
  if (names.empty()) return Names(batch_dims);
  if (names.size() != batch_dims) {
    throw ValueError(
        fmt::format("got {} names for {} batch dims; give one name (or none) per batch dim", names.size(), batch_dims));
  }
  shape::check_unique_names(names);
  return names;
}

void check_batch_size(at::IntArrayRef batch_size) {
  for (auto s : batch_size) {
    if (s < -1) {
      throw ValueError(fmt::format("invalid batch size {}: sizes must be non-negative (or -1 for a ragged dim)",
                                   shape_string(batch_size)));
    }
  }
}

DenseImpl::DenseImpl(std::vector<int64_t> batch_size, std::optional<at::Device> device, Names names)
    : keys_(std::make_shared<KeyTable>()),
      batch_size_((check_batch_size(batch_size), std::move(batch_size))),
      device_(device),
      names_(checked_names(std::move(names), batch_size_.size())) {}

DenseImpl::DenseImpl(std::shared_ptr<const KeyTable> keys, std::vector<Value> values, std::vector<int64_t> batch_size,
                     std::optional<at::Device> device, Names names)
    : keys_(std::move(keys)),
      values_(std::move(values)),
      batch_size_(std::move(batch_size)),
      device_(device),
      names_(names.empty() ? Names(batch_size_.size()) : std::move(names)) {}

void DenseImpl::set_meta(std::vector<int64_t> batch_size, std::optional<at::Device> device, Names names) {
  check_batch_size(batch_size);
  names_ = checked_names(std::move(names), batch_size.size());
  batch_size_ = std::move(batch_size);
  device_ = device;
}

std::size_t KeyTable::find(const std::string& key) const {
  if (!index_.empty()) {
    auto it = index_.find(key);
    return it == index_.end() ? npos : it->second;
  }
  for (std::size_t i = 0; i < keys_.size(); ++i) {
    if (keys_[i] == key && live(i)) return i;
  }
  return npos;
}

void KeyTable::push_back(const std::string& key) {
  keys_.push_back(key);
  if (holes_ != 0) live_.push_back(true);
  if (!index_.empty()) {
    index_.emplace(key, keys_.size() - 1);
  } else if (keys_.size() >= kIndexedFrom) {
    rebuild_index();
  }
}

void KeyTable::erase(std::size_t slot) {
  if (!index_.empty()) index_.erase(keys_[slot]);
  if (slot + 1 == keys_.size()) {
    keys_.pop_back();
    if (holes_ != 0) live_.pop_back();
  } else {
    if (holes_ == 0) live_.assign(keys_.size(), true);
    live_[slot] = false;
    keys_[slot].clear();
    ++holes_;
  }
  if (keys_.size() < kIndexedFrom) index_.clear();
}

void KeyTable::rebuild_index() {
  index_.clear();
  if (keys_.size() < kIndexedFrom) return;
  index_.reserve(keys_.size());
  for (std::size_t i = 0; i < keys_.size(); ++i) {
    if (live(i)) index_.emplace(keys_[i], i);
  }
}

DenseImpl::~DenseImpl() { destroy_nested(); }

void DenseImpl::release_children(c10::function_ref<void(std::shared_ptr<TensorDictImpl>)> take) {
  for (Value& value : values_) {
    if (!value.is_tensordict()) continue;
    std::shared_ptr<TensorDictImpl> child = value.impl();
    value = Value(at::Tensor());
    take(std::move(child));
  }
}

void DenseImpl::for_each(c10::function_ref<void(const std::string&, const Value&)> fn) const {
  const KeyTable& keys = *keys_;
  for (std::size_t i = 0; i < values_.size(); ++i) {
    if (keys.live(i)) fn(keys.key(i), values_[i]);
  }
}

void DenseImpl::for_each_child(c10::function_ref<void(const TensorDict&)> fn) const {
  for (const Value& value : values_) {
    if (value.is_tensordict()) fn(value.tensordict());
  }
}

std::optional<Value> DenseImpl::find(const std::string& key) const {
  const std::size_t slot = keys_->find(key);
  if (slot == KeyTable::npos) return std::nullopt;
  return values_[slot];
}

KeyTable& DenseImpl::own_keys() {
  // Copy-on-write: tables are shared between a tensordict and the results of
  // its reads (index, clone, to, ...), which other threads may own. A count
  // of 1 means the last other owner is gone; use_count() is a relaxed load,
  // so an acquire fence orders that owner's reads of the table before our
  // writes (it released its reference with acq_rel).
  if (keys_.use_count() > 1) {
    keys_ = std::make_shared<KeyTable>(*keys_);
  } else {
    std::atomic_thread_fence(std::memory_order_acquire);
  }
  // The table is only shared const; once owned alone it may change.
  return const_cast<KeyTable&>(*keys_);
}

void DenseImpl::reserve(std::size_t n) {
  values_.reserve(values_.size() + n);
  own_keys().reserve(keys_->size() + n);
}

void DenseImpl::insert(const std::string& key, Value value) {
  const std::size_t slot = keys_->find(key);
  if (slot != KeyTable::npos) {
    values_[slot] = std::move(value);
    return;
  }
  own_keys().push_back(key);
  values_.push_back(std::move(value));
}

bool DenseImpl::erase(const std::string& key) {
  const std::size_t slot = keys_->find(key);
  if (slot == KeyTable::npos) return false;
  erase_slot(slot);
  return true;
}

void DenseImpl::erase_slot(std::size_t slot) {
  KeyTable& keys = own_keys();
  keys.erase(slot);
  if (slot + 1 == values_.size()) {
    values_.pop_back();
  } else {
    values_[slot] = Value(at::Tensor());
  }
  if (!keys.wants_compaction()) return;
  std::size_t kept = 0;
  keys.compact([&](std::size_t from) { values_[kept++] = std::move(values_[from]); });
  values_.erase(values_.begin() + static_cast<std::ptrdiff_t>(kept), values_.end());
}

void DenseImpl::rename(const std::string& from, const std::string& to) {
  const std::size_t slot = keys_->find(from);
  if (slot == KeyTable::npos) throw KeyError("rename of a missing key");
  Value value = std::move(values_[slot]);
  erase_slot(slot);
  insert(to, std::move(value));
}

}  // namespace tensordict::detail
