// UTF-8 validation, for writers of formats that hold text only (JSON, HDF5
// UTF-8 strings): a std::string may hold any bytes, which such a file must
// not receive (its readers, h5py and tensordict among them, then fail).
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string_view>

namespace tensordict::detail {

// The index of the first byte of `s` that is not part of valid UTF-8 (a stray
// continuation byte, a truncated sequence, an overlong form, a surrogate, a
// code point past U+10FFFF); nullopt when `s` is valid.
inline std::optional<std::size_t> invalid_utf8_at(std::string_view s) {
  for (std::size_t i = 0; i < s.size();) {
    const auto c = static_cast<unsigned char>(s[i]);
    if (c < 0x80) {
      ++i;
      continue;
    }
    std::size_t extra = 0;
    uint32_t cp = 0;
    if (c >= 0xc2 && c <= 0xdf) {
      extra = 1;
      cp = c & 0x1f;
    } else if (c >= 0xe0 && c <= 0xef) {
      extra = 2;
      cp = c & 0x0f;
    } else if (c >= 0xf0 && c <= 0xf4) {
      extra = 3;
      cp = c & 0x07;
    } else {
      return i;
    }
    if (extra >= s.size() - i) return i;
    for (std::size_t k = 1; k <= extra; ++k) {
      const auto next = static_cast<unsigned char>(s[i + k]);
      if ((next & 0xc0) != 0x80) return i;
      cp = (cp << 6) | (next & 0x3f);
    }
    constexpr uint32_t least[] = {0, 0x80, 0x800, 0x10000};
    if (cp < least[extra] || cp > 0x10ffff || (cp >= 0xd800 && cp <= 0xdfff)) return i;
    i += extra + 1;
  }
  return std::nullopt;
}

}  // namespace tensordict::detail
