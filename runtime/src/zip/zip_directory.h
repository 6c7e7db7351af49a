// A zip archive's directory (APPNOTE.TXT 4.3.7, 4.3.12-4.3.16, and the zip64
// records of archives and entries over 4 GiB), read bounded: every record is
// checked against the archive's size before it is used, and nothing is
// allocated for what a record claims without the bytes to back it. No library
// the project links exports a zip reader that gives an entry's payload offset
// (libtorch's miniz is internal to it; libzip keeps it private), and mapping
// stored payloads in place needs it. Fuzzed (fuzz/fuzz_zip_directory.cpp).
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace tensordict::detail::zip {

// `n` bytes of the archive from `offset` (fewer at its end).
using ReadAt = std::function<std::string(uint64_t offset, uint64_t n)>;

inline constexpr uint16_t kStored = 0;
inline constexpr uint16_t kDeflated = 8;

// The records' signatures and fixed sizes, and the zip64 markers.
inline constexpr uint32_t kLocalSignature = 0x04034b50;
inline constexpr uint32_t kEntrySignature = 0x02014b50;
inline constexpr uint32_t kEndSignature = 0x06054b50;
inline constexpr uint32_t kZip64EndSignature = 0x06064b50;
inline constexpr uint32_t kZip64LocatorSignature = 0x07064b50;
inline constexpr uint64_t kLocalSize = 30, kEntrySize = 46, kEndSize = 22, kZip64EndSize = 56, kLocatorSize = 20;
inline constexpr uint16_t kZip64ExtraId = 0x0001;
// A 32-bit size or offset reading this is in the zip64 extra field.
inline constexpr uint64_t k32Max = 0xffffffff;

struct Entry {
  std::string name;
  uint16_t method = kStored;  // as recorded: kStored, kDeflated, or another (unsupported) method
  uint16_t flags = 0;         // general purpose bits: 0 encrypted, 3 data descriptor, 11 UTF-8 name
  uint32_t crc32 = 0;
  uint64_t compressed_size = 0;
  uint64_t size = 0;
  uint64_t header_offset = 0;  // of its local header
  bool is_symlink = false;     // made by Unix with S_IFLNK in its mode
  bool is_directory() const { return !name.empty() && name.back() == '/'; }
  bool is_encrypted() const { return (flags & 1u) != 0; }
};

struct Directory {
  std::vector<Entry> entries;
  uint64_t offset = 0;  // where the central directory starts: every entry's data lies before it
};

// The central directory of an archive of `size` bytes. RuntimeError "<what>
// cannot be read as a zip archive: <why>" when a record is missing, malformed
// or runs past the end.
Directory read_directory(std::string_view what, uint64_t size, const ReadAt& read_at);

// Where `entry`'s data starts: after its local header, whose name must be the
// directory's, and so that all of its compressed_size bytes end before the
// central directory (`directory_offset`). Errors as read_directory's.
uint64_t payload_offset(std::string_view what, const Entry& entry, uint64_t directory_offset, const ReadAt& read_at);

// Why extracting `entry` by its name could write outside the directory it is
// extracted to: an empty or absolute name, a ".." part, a backslash or a NUL,
// or a symbolic link. nullopt for a safe entry.
std::optional<std::string_view> unsafe_name(const Entry& entry);

}  // namespace tensordict::detail::zip
