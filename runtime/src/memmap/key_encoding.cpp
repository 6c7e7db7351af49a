#include "memmap/memmap_detail.h"

namespace tensordict::detail::memmap {

namespace {
bool unsafe(unsigned char c) {
  if (c < 32 || c == 127) return true;
  switch (c) {
    case '/':
    case '<':
    case '>':
    case ':':
    case '"':
    case '|':
    case '?':
    case '*':
    case '\\':
    case ' ':
    case '%':
      return true;
    default:
      return false;
  }
}
}  // namespace

std::string encode_key(std::string_view key) {
  if (key.empty()) return "%";
  if (key == ".") return "%2E";
  if (key == "..") return "%2E%2E";
  static constexpr char kHex[] = "0123456789ABCDEF";
  std::string out;
  out.reserve(key.size());
  for (char ch : key) {
    const auto c = static_cast<unsigned char>(ch);
    if (unsafe(c)) {
      out += '%';
      out += kHex[c >> 4];
      out += kHex[c & 15];
    } else {
      out += ch;
    }
  }
  return out;
}

bool safe_legacy_key(std::string_view key, bool is_collection) {
  if (key.find('/') != std::string_view::npos || key.find('\\') != std::string_view::npos) return false;
  if (key.find('\0') != std::string_view::npos) return false;
  if (is_collection && (key.empty() || key == "." || key == "..")) return false;
  // A leaf's file is "<key>.memmap": "" and "." name files inside the directory.
  return true;
}

}  // namespace tensordict::detail::memmap
