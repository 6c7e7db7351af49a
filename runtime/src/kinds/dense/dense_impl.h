// The storage of a dense TensorDict (private).
#pragma once

#include <memory>
#include <string>
#include <unordered_map>
#include <vector>

#include "tensordict/base.h"
#include "tensordict/detail/impl.h"

namespace tensordict::detail {

// Keys in insertion order plus a lookup table. Tensordicts derived from one
// another by leaf-wise ops (index, to, reshape, clone...) have the same keys,
// so they share one table until a key is added, removed or renamed
// (copy-on-write): deriving a tensordict copies no string.
//
// Small tables (the common case) are searched linearly: comparing a few short
// strings beats hashing, and adding a key allocates no hash node. Past
// kIndexedFrom keys a hash index is built and kept up to date.
//
// Removing a key leaves a hole in its slot (the values of the tensordicts
// sharing the table keep their slots) instead of moving every later key: once
// holes fill half the slots, the owner compacts keys and values together.
// Removal and renaming are O(1) amortised, in any order, and the insertion
// order stays.
class KeyTable {
 public:
  static constexpr std::size_t kIndexedFrom = 16;
  static constexpr std::size_t npos = static_cast<std::size_t>(-1);

  // Slots, holes included; values are stored one per slot.
  std::size_t slots() const { return keys_.size(); }
  // Keys (slots that are not holes).
  std::size_t size() const { return keys_.size() - holes_; }
  bool has_holes() const { return holes_ != 0; }
  bool live(std::size_t slot) const { return holes_ == 0 || live_[slot]; }
  const std::string& key(std::size_t slot) const { return keys_[slot]; }
  // The same keys in the same slots.
  bool same_layout(const KeyTable& other) const { return keys_ == other.keys_ && live_ == other.live_; }

  // The slot of `key`, or npos.
  std::size_t find(const std::string& key) const;
  void push_back(const std::string& key);
  // Makes `slot` a hole (the last slot is dropped).
  void erase(std::size_t slot);
  // Whether holes fill half the slots: time to compact().
  bool wants_compaction() const { return holes_ > 0 && 2 * holes_ >= keys_.size(); }
  // Drops the holes; `keep(slot)` is told, in order, each slot that stays.
  template <class Keep>
  void compact(Keep&& keep) {
    std::size_t to = 0;
    for (std::size_t from = 0; from < keys_.size(); ++from) {
      if (!live_[from]) continue;
      keep(from);
      if (to != from) keys_[to] = std::move(keys_[from]);
      ++to;
    }
    keys_.resize(to);
    live_.clear();
    holes_ = 0;
    rebuild_index();
  }
  void reserve(std::size_t n) { keys_.reserve(n); }

 private:
  void rebuild_index();

  std::vector<std::string> keys_;
  std::vector<bool> live_;  // one per slot while there are holes, else empty
  std::size_t holes_ = 0;
  std::unordered_map<std::string, std::size_t> index_;  // empty below kIndexedFrom slots
};

class DenseImpl final : public TensorDictImpl {
 public:
  DenseImpl(std::vector<int64_t> batch_size, std::optional<at::Device> device, Names names);
  // Values given in the order of `keys`.
  DenseImpl(std::shared_ptr<const KeyTable> keys, std::vector<Value> values, std::vector<int64_t> batch_size,
            std::optional<at::Device> device, Names names);
  // Nested levels are destroyed one after the other, not recursively: a
  // tensordict nested 200,000 deep must not exhaust the stack.
  ~DenseImpl() override;

  static constexpr Kind kKind = Kind::Dense;
  Kind kind() const override { return kKind; }
  at::IntArrayRef batch_size() const override { return batch_size_; }
  std::optional<at::Device> device() const override { return device_; }
  const Names& names() const override { return names_; }
  void set_meta(std::vector<int64_t> batch_size, std::optional<at::Device> device, Names names) override;

  std::size_t num_keys() const override { return keys_->size(); }
  void for_each(c10::function_ref<void(const std::string&, const Value&)> fn) const override;
  // Straight over the values (the default looks every child up by key): the
  // cycle check of every nested set() and the lock walks run it.
  void for_each_child(c10::function_ref<void(const TensorDict&)> fn) const override;
  std::optional<Value> find(const std::string& key) const override;
  void insert(const std::string& key, Value value) override;
  bool erase(const std::string& key) override;
  // tensordict's order: the renamed entry moves to the end.
  void rename(const std::string& from, const std::string& to) override;

  // Room for `n` more entries (construction knows how many it adds).
  void reserve(std::size_t n);

  const std::shared_ptr<const KeyTable>& key_table() const { return keys_; }
  // One per slot of key_table() (a hole's is an undefined tensor).
  const std::vector<Value>& values() const { return values_; }

 private:
  KeyTable& own_keys();
  // Removes the entry in `slot` (its key and its value).
  void erase_slot(std::size_t slot);
  void release_children(c10::function_ref<void(std::shared_ptr<TensorDictImpl>)> take) override;

  std::shared_ptr<const KeyTable> keys_;
  std::vector<Value> values_;
  std::vector<int64_t> batch_size_;
  std::optional<at::Device> device_;
  Names names_;
};

// Throws ValueError for a size below -1 (-1 marks a ragged dim).
void check_batch_size(at::IntArrayRef batch_size);

// Normalises names to one entry per batch dim (nullopt where unnamed) and
// checks them: right count, no duplicates.
Names checked_names(Names names, std::size_t batch_dims);

}  // namespace tensordict::detail
