// NestedKey: the path of an entry in a tree of tensordicts.
#pragma once

#include <initializer_list>
#include <ostream>
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
  NestedKey(std::string key) : path_{std::move(key)} {}
  NestedKey(std::initializer_list<std::string> path) : NestedKey(std::vector<std::string>(path)) {}
  explicit NestedKey(std::vector<std::string> path);

  const std::vector<std::string>& path() const { return path_; }
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

  friend bool operator==(const NestedKey&, const NestedKey&) = default;
  friend auto operator<=>(const NestedKey&, const NestedKey&) = default;

 private:
  std::vector<std::string> path_;
};

// Prints the repr: 'a' or ('a', 'b').
inline std::ostream& operator<<(std::ostream& os, const NestedKey& key) { return os << key.repr(); }

}  // namespace tensordict
