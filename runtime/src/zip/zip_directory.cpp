#include "zip/zip_directory.h"

#include <fmt/format.h>

#include "tensordict/errors.h"

namespace tensordict::detail::zip {
namespace {

[[noreturn]] void fail(std::string_view what, std::string_view why) {
  throw RuntimeError(fmt::format("{} cannot be read as a zip archive: {}", what, why));
}

// A little-endian integer of `width` bytes at `at` in `record`.
uint64_t field(std::string_view record, std::size_t at, int width) {
  uint64_t value = 0;
  for (int i = width - 1; i >= 0; --i) value = (value << 8) | static_cast<unsigned char>(record[at + i]);
  return value;
}

// The end record's comment is at most 65535 bytes.
constexpr uint64_t kLongestComment = 0xffff;
// Orders of magnitude above a tree's (about 100 bytes per file), far below
// what would exhaust memory.
constexpr uint64_t kLargestDirectory = uint64_t{256} << 20;

// Exactly `n` bytes at `at`, or the archive is cut short.
std::string record(std::string_view what, uint64_t size, const ReadAt& read_at, uint64_t at, uint64_t n,
                   std::string_view part) {
  std::string bytes = at <= size && size - at >= n ? read_at(at, n) : std::string();
  if (bytes.size() != n) fail(what, fmt::format("its {} runs past its end", part));
  return bytes;
}

// The zip64 extra field of a directory entry replaces, in this order, each of
// its size, compressed size and header offset that reads 0xffffffff.
void read_zip64_extra(std::string_view what, std::string_view extra, Entry& entry, uint64_t index) {
  for (std::size_t at = 0; at + 4 <= extra.size();) {
    const uint64_t id = field(extra, at, 2), length = field(extra, at + 2, 2);
    if (length > extra.size() - at - 4) fail(what, fmt::format("directory entry {} has an extra field past its end", index));
    if (id == kZip64ExtraId) {
      std::size_t next = at + 4;
      const std::size_t end = next + length;
      for (uint64_t* value : {&entry.size, &entry.compressed_size, &entry.header_offset}) {
        if (*value != k32Max) continue;
        if (end - next < 8) fail(what, fmt::format("directory entry {} has a zip64 extra field too short", index));
        *value = field(extra, next, 8);
        next += 8;
      }
      return;
    }
    at += 4 + length;
  }
}

}  // namespace

Directory read_directory(std::string_view what, uint64_t size, const ReadAt& read_at) {
  if (size < kEndSize) fail(what, "it is shorter than a zip's end record");
  // The end record: at the very end without a comment (one small read),
  // else searched backwards over the longest comment.
  uint64_t tail_size = kEndSize;
  std::string tail = record(what, size, read_at, size - tail_size, tail_size, "end");
  if (field(tail, 0, 4) != kEndSignature) {
    tail_size = std::min(size, kEndSize + kLongestComment);
    tail = record(what, size, read_at, size - tail_size, tail_size, "end");
  }
  std::size_t end = tail_size - kEndSize;
  while (field(tail, end, 4) != kEndSignature) {
    if (end == 0) fail(what, "it has no end record");
    --end;
  }
  uint64_t count = field(tail, end + 10, 2);
  uint64_t directory_size = field(tail, end + 12, 4);
  uint64_t offset = field(tail, end + 16, 4);
  if ((count == 0xffff || offset == k32Max || directory_size == k32Max) && end >= kLocatorSize &&
      field(tail, end - kLocatorSize, 4) == kZip64LocatorSignature) {
    const std::string zip64 =
        record(what, size, read_at, field(tail, end - kLocatorSize + 8, 8), kZip64EndSize, "zip64 end record");
    if (field(zip64, 0, 4) != kZip64EndSignature) fail(what, "its zip64 locator points to no zip64 end record");
    count = field(zip64, 32, 8);
    directory_size = field(zip64, 40, 8);
    offset = field(zip64, 48, 8);
  }
  // Each entry takes at least 46 bytes: a larger count is a lie.
  if (count > size / kEntrySize) fail(what, fmt::format("it announces {} entries in {} bytes", count, size));
  if (offset > size || directory_size > size - offset) {
    fail(what, fmt::format("its directory ({} bytes at {}) runs past its end ({} bytes)", directory_size, offset, size));
  }
  if (directory_size > kLargestDirectory) {
    fail(what, fmt::format("its directory has {} bytes, more than the {} this reader reads", directory_size,
                           kLargestDirectory));
  }
  // The whole directory in one read, then its entries from memory.
  const std::string all = record(what, size, read_at, offset, directory_size, "directory");
  const std::string_view records(all);
  Directory directory{{}, offset};
  directory.entries.reserve(count);
  uint64_t at = 0;
  for (uint64_t i = 0; i < count; ++i) {
    if (at > records.size() || records.size() - at < kEntrySize) {
      fail(what, fmt::format("its directory entry {} runs past the directory", i));
    }
    const std::string_view header = records.substr(at, kEntrySize);
    if (field(header, 0, 4) != kEntrySignature) fail(what, fmt::format("its directory entry {} is malformed", i));
    const uint64_t name_length = field(header, 28, 2), extra_length = field(header, 30, 2);
    const uint64_t comment_length = field(header, 32, 2);
    Entry entry;
    entry.flags = static_cast<uint16_t>(field(header, 8, 2));
    entry.method = static_cast<uint16_t>(field(header, 10, 2));
    entry.crc32 = static_cast<uint32_t>(field(header, 16, 4));
    entry.compressed_size = field(header, 20, 4);
    entry.size = field(header, 24, 4);
    entry.header_offset = field(header, 42, 4);
    if (records.size() - at - kEntrySize < name_length + extra_length) {
      fail(what, fmt::format("its directory entry {} runs past the directory", i));
    }
    const std::string_view rest = records.substr(at + kEntrySize, name_length + extra_length);
    entry.name = std::string(rest.substr(0, name_length));
    read_zip64_extra(what, rest.substr(name_length), entry, i);
    // Made by Unix (3): the mode is in the high 16 bits; S_IFLNK is a link.
    constexpr uint64_t kUnix = 3, kTypeMask = 0170000, kLink = 0120000;
    entry.is_symlink = field(header, 5, 1) == kUnix && ((field(header, 38, 4) >> 16) & kTypeMask) == kLink;
    directory.entries.push_back(std::move(entry));
    at += kEntrySize + name_length + extra_length + comment_length;
  }
  return directory;
}

uint64_t payload_offset(std::string_view what, const Entry& entry, uint64_t directory_offset, const ReadAt& read_at) {
  const std::string part = fmt::format("entry '{}'", entry.name);
  const uint64_t at = entry.header_offset;
  // The header and the name the directory gives, in one read.
  const std::string header = record(what, directory_offset, read_at, at, kLocalSize + entry.name.size(), part);
  if (field(header, 0, 4) != kLocalSignature) fail(what, fmt::format("{} has no local header at {}", part, at));
  const uint64_t name_length = field(header, 26, 2), extra_length = field(header, 28, 2);
  if (name_length != entry.name.size() || std::string_view(header).substr(kLocalSize) != entry.name) {
    fail(what, fmt::format("{} has another name in its local header", part));
  }
  const uint64_t payload = at + kLocalSize + name_length + extra_length;
  if (payload > directory_offset || entry.compressed_size > directory_offset - payload) {
    fail(what, fmt::format("{} ({} bytes at {}) runs into the central directory at {}", part, entry.compressed_size,
                           payload, directory_offset));
  }
  return payload;
}

std::optional<std::string_view> unsafe_name(const Entry& entry) {
  const std::string& name = entry.name;
  if (entry.is_symlink) return "is a symbolic link";
  if (name.empty()) return "has an empty name";
  if (name.front() == '/') return "is an absolute path";
  if (name.find('\\') != std::string::npos) return "holds a backslash";
  if (name.find('\0') != std::string::npos) return "holds a NUL byte";
  for (std::string_view rest = name;;) {
    const auto slash = rest.find('/');
    if (rest.substr(0, slash) == "..") return "climbs out of the directory it is extracted to (a '..' part)";
    if (slash == std::string_view::npos) break;
    rest.remove_prefix(slash + 1);
  }
  return std::nullopt;
}

}  // namespace tensordict::detail::zip
