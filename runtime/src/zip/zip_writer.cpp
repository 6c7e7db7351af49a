#include "zip/zip_writer.h"

#include <fmt/format.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <ctime>
#include <memory>
#include <algorithm>

#include "tensordict/errors.h"
#include "zip/zip_codec.h"

namespace tensordict::detail::zip {
namespace {

constexpr uint16_t kPadExtraId = 0x6474;  // "td", tensordict's padding block
constexpr uint16_t kVersion = 45;         // 4.5: zip64
constexpr uint16_t kMadeByUnix = (3u << 8) | kVersion;
constexpr uint16_t kUtf8Name = 1u << 11;
constexpr uint64_t kZip64LocalExtra = 20;  // its id, length and two sizes
constexpr std::size_t kChunk = std::size_t{16} << 20;

// Little-endian fields appended to a record.
class Record {
 public:
  Record& u16(uint64_t v) { return put(v, 2); }
  Record& u32(uint64_t v) { return put(v, 4); }
  Record& u64(uint64_t v) { return put(v, 8); }
  Record& bytes(std::string_view s) {
    data_.append(s);
    return *this;
  }
  const std::string& str() const { return data_; }

 private:
  Record& put(uint64_t v, int width) {
    for (int i = 0; i < width; ++i) data_.push_back(static_cast<char>((v >> (8 * i)) & 0xff));
    return *this;
  }
  std::string data_;
};

uint32_t dos_now() {
  const std::time_t now = std::time(nullptr);
  std::tm t{};
  ::localtime_r(&now, &t);
  const int year = std::max(t.tm_year + 1900, 1980);
  const uint32_t date = static_cast<uint32_t>(((year - 1980) << 9) | ((t.tm_mon + 1) << 5) | t.tm_mday);
  const uint32_t time = static_cast<uint32_t>((t.tm_hour << 11) | (t.tm_min << 5) | (t.tm_sec / 2));
  return date << 16 | time;
}

bool is_ascii(std::string_view s) {
  for (char c : s) {
    if (static_cast<unsigned char>(c) >= 0x80) return false;
  }
  return true;
}

}  // namespace

ZipWriter::ZipWriter(int fd, std::string path) : fd_(fd), path_(std::move(path)), dos_time_(dos_now()) {}

void ZipWriter::write(const void* data, std::size_t n) {
  write_at(offset_, data, n);
  offset_ += n;
}

void ZipWriter::write_at(uint64_t offset, const void* data, std::size_t n) {
  auto* p = static_cast<const char*>(data);
  while (n > 0) {
    const ssize_t done = ::pwrite(fd_, p, n, static_cast<off_t>(offset));
    if (done < 0 && errno == EINTR) continue;
    if (done <= 0) throw RuntimeError(fmt::format("cannot write the archive {}: {}", path_, std::strerror(errno)));
    p += done;
    offset += static_cast<uint64_t>(done);
    n -= static_cast<std::size_t>(done);
  }
}

void ZipWriter::add(const std::string& name, uint64_t size, const Source& source, uint16_t method, bool align) {
  Entry entry;
  entry.name = name;
  entry.method = method;
  entry.flags = is_ascii(name) ? 0 : kUtf8Name;
  entry.header_offset = offset_;
  entry.size = size;
  align = align && method == kStored;
  // Extra fields: the padding (so that the data starts aligned), then zip64's
  // sizes, filled in once the data is written.
  Record extra;
  if (align) {
    const uint64_t unpadded = offset_ + kLocalSize + name.size() + 4 + kZip64LocalExtra;
    const uint64_t pad = (kAlignment - unpadded % kAlignment) % kAlignment;
    extra.u16(kPadExtraId).u16(pad).bytes(std::string(pad, '\0'));
  }
  const uint64_t zip64_at = offset_ + kLocalSize + name.size() + extra.str().size() + 4;
  extra.u16(kZip64ExtraId).u16(16).u64(0).u64(0);
  Record local;
  local.u32(kLocalSignature).u16(kVersion).u16(entry.flags).u16(method).u32(dos_time_);
  const uint64_t crc_at = offset_ + 14;
  local.u32(0).u32(k32Max).u32(k32Max).u16(name.size()).u16(extra.str().size()).bytes(name).bytes(extra.str());
  write(local.str().data(), local.str().size());

  const uint64_t data_start = offset_;
  std::vector<char> buffer(static_cast<std::size_t>(std::min<uint64_t>(std::max<uint64_t>(size, 1), kChunk)));
  uint32_t crc = 0;
  uint64_t read = 0;
  Deflater* deflater = nullptr;
  std::unique_ptr<Deflater> owned;
  if (method == kDeflated) {
    owned = std::make_unique<Deflater>([this](const void* data, std::size_t n) { write(data, n); });
    deflater = owned.get();
  } else if (method != kStored) {
    throw ValueError(fmt::format("cannot write the archive {}: zip method {} is neither stored (0) nor deflated (8)",
                                 path_, method));
  }
  while (read < size) {
    const std::size_t n = source(buffer.data(), static_cast<std::size_t>(std::min<uint64_t>(buffer.size(), size - read)));
    if (n == 0) {
      throw RuntimeError(fmt::format("cannot write the archive {}: the content of entry '{}' ended after {} of its {} bytes",
                                     path_, name, read, size));
    }
    crc = crc32(buffer.data(), n, crc);
    if (deflater) {
      deflater->add(buffer.data(), n);
    } else {
      write(buffer.data(), n);
    }
    read += n;
  }
  if (deflater) deflater->finish();
  entry.crc32 = crc;
  entry.compressed_size = offset_ - data_start;
  Record patch;
  patch.u32(crc);
  write_at(crc_at, patch.str().data(), 4);
  Record sizes;
  sizes.u64(entry.size).u64(entry.compressed_size);
  write_at(zip64_at, sizes.str().data(), 16);
  entries_.push_back(std::move(entry));
}

void ZipWriter::finish() {
  const uint64_t directory_offset = offset_;
  for (const Entry& entry : entries_) {
    // Zip64 values stand in for each 32-bit field that cannot hold its value.
    Record zip64;
    const bool big_size = entry.size >= k32Max, big_compressed = entry.compressed_size >= k32Max;
    const bool big_offset = entry.header_offset >= k32Max;
    if (big_size) zip64.u64(entry.size);
    if (big_compressed) zip64.u64(entry.compressed_size);
    if (big_offset) zip64.u64(entry.header_offset);
    Record extra;
    if (!zip64.str().empty()) extra.u16(kZip64ExtraId).u16(zip64.str().size()).bytes(zip64.str());
    Record central;
    central.u32(kEntrySignature).u16(kMadeByUnix).u16(kVersion).u16(entry.flags).u16(entry.method).u32(dos_time_);
    central.u32(entry.crc32)
        .u32(big_compressed ? k32Max : entry.compressed_size)
        .u32(big_size ? k32Max : entry.size)
        .u16(entry.name.size())
        .u16(extra.str().size())
        .u16(0)   // comment
        .u16(0)   // disk
        .u16(0)   // internal attributes
        .u32(uint64_t{0100644} << 16)  // a regular file, rw-r--r--
        .u32(big_offset ? k32Max : entry.header_offset)
        .bytes(entry.name)
        .bytes(extra.str());
    write(central.str().data(), central.str().size());
  }
  const uint64_t directory_size = offset_ - directory_offset;
  const uint64_t count = entries_.size();
  const bool zip64 = count >= 0xffff || directory_size >= k32Max || directory_offset >= k32Max;
  if (zip64) {
    const uint64_t zip64_end = offset_;
    Record end64;
    end64.u32(kZip64EndSignature).u64(44).u16(kMadeByUnix).u16(kVersion).u32(0).u32(0);
    end64.u64(count).u64(count).u64(directory_size).u64(directory_offset);
    Record locator;
    locator.u32(kZip64LocatorSignature).u32(0).u64(zip64_end).u32(1);
    write(end64.str().data(), end64.str().size());
    write(locator.str().data(), locator.str().size());
  }
  Record end;
  end.u32(kEndSignature).u16(0).u16(0);
  end.u16(zip64 ? 0xffff : count).u16(zip64 ? 0xffff : count);
  end.u32(zip64 ? k32Max : directory_size).u32(zip64 ? k32Max : directory_offset).u16(0);
  write(end.str().data(), end.str().size());
}

}  // namespace tensordict::detail::zip
