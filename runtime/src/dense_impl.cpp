#include "dense_impl.h"

#include <algorithm>
#include <atomic>
#include <stdexcept>

#include "format.h"

namespace tensordict::detail {

Names checked_names(Names names, std::size_t batch_dims) {
  if (names.empty()) return Names(batch_dims);
  if (names.size() != batch_dims) {
    throw std::invalid_argument(fmt::format("got {} names for {} batch dims; give one name (or none) per batch dim",
                                            names.size(), batch_dims));
  }
  for (std::size_t i = 0; i < names.size(); ++i) {
    for (std::size_t j = i + 1; names[i] && j < names.size(); ++j) {
      if (names[i] == names[j]) throw std::invalid_argument(fmt::format("duplicate dim name '{}' in names", *names[i]));
    }
  }
  return names;
}

DenseImpl::DenseImpl(std::vector<int64_t> batch_size, std::optional<at::Device> device, Names names)
    : keys_(std::make_shared<KeyTable>()),
      batch_size_(std::move(batch_size)),
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
  names_ = checked_names(std::move(names), batch_size.size());
  batch_size_ = std::move(batch_size);
  device_ = device;
}

void DenseImpl::for_each(c10::function_ref<void(const std::string&, const Value&)> fn) const {
  for (std::size_t i = 0; i < values_.size(); ++i) fn(keys_->keys[i], values_[i]);
}

std::optional<Value> DenseImpl::find(const std::string& key) const {
  auto it = keys_->slots.find(key);
  if (it == keys_->slots.end()) return std::nullopt;
  return values_[it->second];
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
  KeyTable& table = own_keys();
  table.keys.reserve(table.keys.size() + n);
  table.slots.reserve(table.slots.size() + n);
}

void DenseImpl::insert(const std::string& key, Value value) {
  auto it = keys_->slots.find(key);
  if (it != keys_->slots.end()) {
    values_[it->second] = std::move(value);
    return;
  }
  own_keys().push_back(key);
  values_.push_back(std::move(value));
}

bool DenseImpl::erase(const std::string& key) {
  auto it = keys_->slots.find(key);
  if (it == keys_->slots.end()) return false;
  const std::size_t slot = it->second;
  KeyTable& table = own_keys();
  table.slots.erase(key);
  table.keys.erase(table.keys.begin() + static_cast<std::ptrdiff_t>(slot));
  values_.erase(values_.begin() + static_cast<std::ptrdiff_t>(slot));
  for (auto& [name, index] : table.slots) {
    if (index > slot) --index;
  }
  return true;
}

void DenseImpl::rename(const std::string& from, const std::string& to) {
  KeyTable& table = own_keys();
  auto node = table.slots.extract(from);
  if (node.empty()) throw std::logic_error("rename of a missing key");
  table.keys[node.mapped()] = to;
  node.key() = to;
  table.slots.insert(std::move(node));
}

}  // namespace tensordict::detail
