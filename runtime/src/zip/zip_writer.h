// Writes a zip archive to an open file, as tensordict's archives are: every
// local header carries a zip64 extra field, and stored entries can be padded
// (an extra field of id 0x6474, "td") so that their data starts at a multiple
// of kAlignment, which lets a reader map them in place as tensors. Zip64 end
// records are written when the archive needs them.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <string>
#include <string_view>
#include <vector>

#include "zip/zip_directory.h"

namespace tensordict::detail::zip {

// torch.save's storage alignment, which tensordict's archives use: a multiple
// of every dtype's size.
inline constexpr uint64_t kAlignment = 64;

class ZipWriter {
 public:
  // Writes from the start of the open file `fd` (`path` names it in messages).
  ZipWriter(int fd, std::string path);

  // Reads the next at most `n` bytes of an entry's content into `buffer`;
  // returns how many (0 at its end).
  using Source = std::function<std::size_t(char* buffer, std::size_t n)>;
  // Adds the entry `name` of `size` bytes read from `source`, stored or
  // deflated (`method`); `align`: a stored entry's data starts at a multiple
  // of kAlignment.
  void add(const std::string& name, uint64_t size, const Source& source, uint16_t method, bool align);
  // Writes the central directory and the end records.
  void finish();

 private:
  void write(const void* data, std::size_t n);
  void write_at(uint64_t offset, const void* data, std::size_t n);
  int fd_;
  std::string path_;
  uint64_t offset_ = 0;
  std::vector<Entry> entries_;
  uint32_t dos_time_ = 0;  // DOS date << 16 | DOS time, of the archive's creation
};

}  // namespace tensordict::detail::zip
