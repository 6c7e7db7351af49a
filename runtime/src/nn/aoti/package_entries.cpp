// A zip archive's central directory, read for its names only (APPNOTE.TXT
// 4.3.12-4.3.16, and the zip64 end records of archives over 4 GiB). No
// library the project links exports a zip reader (libtorch's miniz is
// internal to it), and only the names are needed: this is the smallest
// reader that answers "what would be extracted where". Fuzzed
// (fuzz/fuzz_package_entries.cpp).
#include "nn/aoti/package_entries.h"

#include <fmt/format.h>

#include <fstream>
#include <string_view>

#include "tensordict/errors.h"

namespace tensordict::nn::aoti {
namespace {

[[noreturn]] void fail(const std::string& path, std::string_view what) {
  throw RuntimeError(fmt::format("AOTIModule: package '{}' cannot be read as a zip archive: {}", path, what));
}

// A little-endian integer of `width` bytes at `at` in `record`.
uint64_t field(const std::string& record, std::size_t at, int width) {
  uint64_t value = 0;
  for (int i = width - 1; i >= 0; --i) value = (value << 8) | static_cast<unsigned char>(record[at + i]);
  return value;
}

constexpr uint32_t kEndSignature = 0x06054b50;
constexpr uint32_t kZip64LocatorSignature = 0x07064b50;
constexpr uint32_t kZip64EndSignature = 0x06064b50;
constexpr uint32_t kEntrySignature = 0x02014b50;
constexpr uint64_t kEndSize = 22, kLocatorSize = 20, kZip64EndSize = 56, kEntrySize = 46;
// The end record's comment is at most 65535 bytes.
constexpr uint64_t kLongestComment = 0xffff;

}  // namespace

std::vector<PackageEntry> package_entries(const std::string& path, uint64_t size, const ReadAt& read_at) {
  // Exactly `n` bytes at `at`, or the archive is cut short.
  auto record = [&](uint64_t at, uint64_t n, std::string_view what) {
    std::string bytes = at <= size && size - at >= n ? read_at(at, n) : std::string();
    if (bytes.size() != n) fail(path, fmt::format("its {} runs past its end", what));
    return bytes;
  };
  if (size < kEndSize) fail(path, "it is shorter than a zip's end record");
  // The end record, searched backwards over the longest comment.
  const uint64_t tail_size = std::min(size, kEndSize + kLongestComment);
  const std::string tail = record(size - tail_size, tail_size, "end");
  std::size_t end = tail_size - kEndSize;
  while (field(tail, end, 4) != kEndSignature) {
    if (end == 0) fail(path, "it has no end record");
    --end;
  }
  uint64_t count = field(tail, end + 10, 2);
  uint64_t offset = field(tail, end + 16, 4);
  if ((count == 0xffff || offset == 0xffffffff) && end >= kLocatorSize &&
      field(tail, end - kLocatorSize, 4) == kZip64LocatorSignature) {
    const std::string zip64 = record(field(tail, end - kLocatorSize + 8, 8), kZip64EndSize, "zip64 end record");
    if (field(zip64, 0, 4) != kZip64EndSignature) fail(path, "its zip64 locator points to no zip64 end record");
    count = field(zip64, 32, 8);
    offset = field(zip64, 48, 8);
  }
  // Each entry takes at least 46 bytes: a larger count is a lie.
  if (count > size / kEntrySize) fail(path, fmt::format("it announces {} entries in {} bytes", count, size));
  std::vector<PackageEntry> entries;
  entries.reserve(count);
  uint64_t at = offset;
  for (uint64_t i = 0; i < count; ++i) {
    const std::string header = record(at, kEntrySize, fmt::format("directory entry {}", i));
    if (field(header, 0, 4) != kEntrySignature) fail(path, fmt::format("its directory entry {} is malformed", i));
    const uint64_t name_length = field(header, 28, 2);
    const uint64_t skip = field(header, 30, 2) + field(header, 32, 2);  // extra field, comment
    PackageEntry entry{record(at + kEntrySize, name_length, fmt::format("directory entry {}", i)), false};
    // Made by Unix (3): the mode is in the high 16 bits; S_IFLNK is a link.
    constexpr uint64_t kUnix = 3, kTypeMask = 0170000, kLink = 0120000;
    entry.is_symlink = field(header, 5, 1) == kUnix && ((field(header, 38, 4) >> 16) & kTypeMask) == kLink;
    entries.push_back(std::move(entry));
    at += kEntrySize + name_length + skip;
  }
  return entries;
}

void check_package_entries(const std::string& path) {
  std::ifstream in(path, std::ios::binary | std::ios::ate);
  if (!in) fail(path, "it cannot be opened");
  const auto size = static_cast<uint64_t>(in.tellg());
  const ReadAt read_at = [&](uint64_t offset, uint64_t n) {
    std::string bytes(n, '\0');
    in.seekg(static_cast<std::streamoff>(offset));
    in.read(bytes.data(), static_cast<std::streamsize>(n));
    bytes.resize(in ? n : static_cast<std::size_t>(std::max<std::streamsize>(in.gcount(), 0)));
    in.clear();
    return bytes;
  };
  for (const PackageEntry& entry : package_entries(path, size, read_at)) {
    auto refuse = [&](std::string_view why) {
      throw RuntimeError(fmt::format(
          "AOTIModule: package '{}' has an entry '{}' that {}; the loader extracts entries by name under a temporary "
          "directory, so the package is refused before anything is extracted",
          path, entry.name, why));
    };
    if (entry.is_symlink) refuse("is a symbolic link");
    if (entry.name.empty()) refuse("has an empty name");
    if (entry.name.front() == '/') refuse("is an absolute path");
    if (entry.name.find('\\') != std::string::npos) refuse("holds a backslash");
    if (entry.name.find('\0') != std::string::npos) refuse("holds a NUL byte");
    for (std::string_view rest = entry.name;;) {
      const auto slash = rest.find('/');
      if (rest.substr(0, slash) == "..") refuse("climbs out of the package's directory (a '..' part)");
      if (slash == std::string_view::npos) break;
      rest.remove_prefix(slash + 1);
    }
  }
}

}  // namespace tensordict::nn::aoti
