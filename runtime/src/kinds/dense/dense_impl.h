// The storage of a dense TensorDict (private).
#pragma once

#include <memory>
#include <string>
#include <unordered_map>
#include <vector>

#include "tensordict/base.h"

namespace tensordict::detail {

// Keys in insertion order plus a lookup table. Tensordicts derived from one
// another by leaf-wise ops (index, to, reshape, clone...) have the same keys,
// so they share one table until a key is added, removed or renamed
// (copy-on-write): deriving a tensordict copies no string.
//
// Small tables (the common case) are searched linearly: comparing a few short
// strings beats hashing, and adding a key allocates no hash node. Past
// kIndexedFrom keys a hash index is built and kept up to date.
class KeyTable {
 public:
  static constexpr std::size_t kIndexedFrom = 16;

  const std::vector<std::string>& keys() const { return keys_; }
  std::size_t size() const { return keys_.size(); }
  // The slot of `key`, or npos.
  std::size_t find(const std::string& key) const;
  void push_back(const std::string& key);
  void erase(std::size_t slot);
  void rename(std::size_t slot, const std::string& to);
  void reserve(std::size_t n) { keys_.reserve(n); }

  static constexpr std::size_t npos = static_cast<std::size_t>(-1);

 private:
  void rebuild_index();

  std::vector<std::string> keys_;
  std::unordered_map<std::string, std::size_t> index_;  // empty below kIndexedFrom keys
};

class DenseImpl final : public TensorDictImpl {
 public:
  DenseImpl(std::vector<int64_t> batch_size, std::optional<at::Device> device, Names names);
  // Values given in the order of `keys`.
  DenseImpl(std::shared_ptr<const KeyTable> keys, std::vector<Value> values, std::vector<int64_t> batch_size,
            std::optional<at::Device> device, Names names);

  static constexpr Kind kKind = Kind::Dense;
  Kind kind() const override { return kKind; }
  at::IntArrayRef batch_size() const override { return batch_size_; }
  std::optional<at::Device> device() const override { return device_; }
  // Its own lock (no lock source to ask): every set() checks it.
  bool is_locked() const override { return own_lock(); }
  const Names& names() const override { return names_; }
  void set_meta(std::vector<int64_t> batch_size, std::optional<at::Device> device, Names names) override;

  std::size_t num_keys() const override { return values_.size(); }
  void for_each(c10::function_ref<void(const std::string&, const Value&)> fn) const override;
  // Straight over the values (the default looks every child up by key): the
  // cycle check of every nested set() and the lock walks run it.
  void for_each_child(c10::function_ref<void(const TensorDict&)> fn) const override;
  std::optional<Value> find(const std::string& key) const override;
  void insert(const std::string& key, Value value) override;
  bool erase(const std::string& key) override;
  void rename(const std::string& from, const std::string& to) override;

  // Room for `n` more entries (construction knows how many it adds).
  void reserve(std::size_t n);

  const std::shared_ptr<const KeyTable>& key_table() const { return keys_; }
  const std::vector<Value>& values() const { return values_; }

 private:
  KeyTable& own_keys();

  std::shared_ptr<const KeyTable> keys_;
  std::vector<Value> values_;
  std::vector<int64_t> batch_size_;
  std::optional<at::Device> device_;
  Names names_;
};

// Throws std::invalid_argument for a size below -1 (-1 marks a ragged dim).
void check_batch_size(at::IntArrayRef batch_size);

// Normalises names to one entry per batch dim (nullopt where unnamed) and
// checks them: right count, no duplicates.
Names checked_names(Names names, std::size_t batch_dims);

}  // namespace tensordict::detail
