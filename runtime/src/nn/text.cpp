// How tensordict.nn prints keys and modules.
#include "nn/text.h"

#include <fmt/format.h>

#include <algorithm>
#include <sstream>

namespace tensordict::nn::text {

namespace {
std::string joined_reprs(const Keys& keys) {
  std::string out;
  for (std::size_t i = 0; i < keys.size(); ++i) out += (i ? ", " : "") + keys[i].repr();
  return out;
}
}  // namespace

std::string keys_repr(const Keys& keys) { return "[" + joined_reprs(keys) + "]"; }

std::string key_set_repr(const Keys& keys) { return "{" + joined_reprs(keys) + "}"; }

std::string key_str(const NestedKey& key) { return key.is_nested() ? key.repr() : key.front(); }

std::string add_indent(const std::string& text, std::size_t n) {
  std::string out;
  const std::string pad(n, ' ');
  for (char c : text) {
    out += c;
    if (c == '\n') out += pad;
  }
  return out;
}

std::string fields_repr(std::string_view type, const std::vector<std::string>& fields) {
  std::string body;
  for (std::size_t i = 0; i < fields.size(); ++i) {
    if (i) body += ",\n";
    body += fields[i];
  }
  return fmt::format("{}(\n    {})", type, add_indent(body, 4));
}

std::string torch_module_repr(const torch::nn::Module& module) {
  std::ostringstream os;
  os << module;
  std::string text = os.str();
  const std::string prefix = "torch::nn::";
  for (std::size_t pos = text.find(prefix); pos != std::string::npos; pos = text.find(prefix, pos)) {
    text.erase(pos, prefix.size());
  }
  return text;
}

bool contains_key(const Keys& keys, const NestedKey& key) {
  return std::find(keys.begin(), keys.end(), key) != keys.end();
}

NestedKey add_suffix(const NestedKey& key, std::string_view suffix) {
  std::vector<std::string> path(key.path().begin(), key.path().end());
  path.back() += suffix;
  return NestedKey(std::move(path));
}

}  // namespace tensordict::nn::text
