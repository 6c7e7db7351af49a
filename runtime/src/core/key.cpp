#include "tensordict/key.h"

#include <stdexcept>

#include "tensordict/errors.h"

namespace tensordict {

namespace {
void require_parts(std::size_t n) {
  if (n == 0) throw ValueError("a NestedKey needs at least one part; got an empty path");
}
}  // namespace

NestedKey::NestedKey(std::initializer_list<std::string> path) : path_(path.begin(), path.end()) { require_parts(path_.size()); }

NestedKey::NestedKey(std::span<const std::string> path) : path_(path.begin(), path.end()) { require_parts(path_.size()); }

NestedKey::NestedKey(std::vector<std::string> path)
    : path_(std::make_move_iterator(path.begin()), std::make_move_iterator(path.end())) {
  require_parts(path_.size());
}

NestedKey NestedKey::parent() const {
  if (!is_nested()) {
    throw ValueError("key " + repr() + " has no parent: it has a single part");
  }
  return NestedKey(path().first(path_.size() - 1));
}

NestedKey NestedKey::operator+(const NestedKey& other) const {
  std::vector<std::string> joined(path_.begin(), path_.end());
  joined.insert(joined.end(), other.path_.begin(), other.path_.end());
  return NestedKey(std::move(joined));
}

std::string NestedKey::join(std::string_view sep) const {
  std::string out = path_.front();
  for (std::size_t i = 1; i < path_.size(); ++i) {
    out += sep;
    out += path_[i];
  }
  return out;
}

std::string NestedKey::repr() const {
  if (!is_nested()) return "'" + path_.front() + "'";
  std::string out = "(";
  for (std::size_t i = 0; i < path_.size(); ++i) {
    if (i) out += ", ";
    out += "'" + path_[i] + "'";
  }
  return out + ")";
}

}  // namespace tensordict
