// NestedKey: the path of an entry in a tree of tensordicts.
#pragma once

#include <c10/util/SmallVector.h>

#include <algorithm>
#include <compare>
#include <initializer_list>
#include <ostream>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace tensordict {

// A key is a path of one or more string parts: "a" or {"a", "b"} (tensordict's
// ("a", "b") tuple). Built implicitly from strings so that td.get("a") and
// td.get({"a", "b"}) both read naturally.
class NestedKey {
 public:
  NestedKey(const char* key) : NestedKey(std::string(key)) {}
  NestedKey(std::string_view key) : NestedKey(std::string(key)) {}
  NestedKey(std::string key) { path_.push_back(std::move(key)); }
  NestedKey(std::initializer_list<std::string> path);
  explicit NestedKey(std::vector<std::string> path);
  explicit NestedKey(std::span<const std::string> path);
  // Moves never throw (containers of keys move rather than copy them).
  NestedKey(const NestedKey&) = default;
  NestedKey(NestedKey&&) noexcept = default;
  NestedKey& operator=(const NestedKey&) = default;
  NestedKey& operator=(NestedKey&&) noexcept = default;

  std::span<const std::string> path() const { return {path_.data(), path_.size()}; }
  std::size_t size() const { return path_.size(); }
  bool is_nested() const { return path_.size() > 1; }
  const std::string& front() const { return path_.front(); }
  const std::string& back() const { return path_.back(); }
  const std::string& operator[](std::size_t i) const { return path_[i]; }

  // The key without its last part (`{"a","b","c"}` -> `{"a","b"}`); requires is_nested().
  NestedKey parent() const;
  // This key followed by `other`'s parts.
  NestedKey operator+(const NestedKey& other) const;

  // The parts joined by `sep` ("a.b" for flatten_keys).
  std::string join(std::string_view sep) const;
  // How tensordict prints a key in messages: 'a' or ('a', 'b').
  std::string repr() const;

  friend bool operator==(const NestedKey& a, const NestedKey& b) { return std::ranges::equal(a.path(), b.path()); }
  friend std::strong_ordering operator<=>(const NestedKey& a, const NestedKey& b) {
    return std::lexicographical_compare_three_way(a.path_.begin(), a.path_.end(), b.path_.begin(), b.path_.end());
  }

 private:
  // Most keys have one part: it is held inline, so building a key from a
  // string (every td.get("a")) allocates nothing beyond the string itself.
  c10::SmallVector<std::string, 1> path_;
};

// Prints the repr: 'a' or ('a', 'b').
inline std::ostream& operator<<(std::ostream& os, const NestedKey& key) { return os << key.repr(); }

}  // namespace tensordict
