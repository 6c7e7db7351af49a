// A .tdz archive read as a memmap tree (tensordict's _archive.py): a zip file
// whose entries are the tree's files by their paths (meta.json per level, one
// <key>.memmap per leaf). Stored leaves aligned for their dtype are views of
// one mapping of the file (nothing is read until used); compressed or
// unaligned ones are read into memory. Every entry is checked when the
// archive is opened, before anything is read: its name (no "..", no absolute
// path, no link), that no two entries overlap and that each lies before the
// central directory, its method, and that a deflated entry does not claim
// more than deflate can encode from its bytes (a zip bomb).
#pragma once

#include <ATen/core/Tensor.h>
#include <nlohmann/json.hpp>

#include <cstdint>
#include <filesystem>
#include <functional>
#include <map>
#include <set>
#include <string>
#include <string_view>

#include "memmap/memmap_detail.h"
#include "zip/zip_directory.h"

namespace tensordict::detail::memmap {

class ArchiveTree {
 public:
  // Opens and checks the archive `path`. `writable`: stored leaves map the
  // file shared, so that writes reach it (memmap_like's archive); otherwise
  // copy-on-write, as tensordict loads archives.
  ArchiveTree(const fs::path& path, bool writable);
  // Whether `rel` (a path inside the archive, "." for its top) is a directory
  // of the tree, or any entry.
  bool is_dir(const fs::path& rel) const;
  bool exists(const fs::path& rel) const;
  // The content of the entry `rel`, at most `max_bytes` (CRC-32 checked);
  // `shown` names it in messages.
  std::string text(const fs::path& rel, const fs::path& shown, std::size_t max_bytes) const;
  // The leaf stored at `rel`, of `dtype` and `shape`; `copy`: read into memory
  // rather than a view of the mapping (LoadOptions::copy).
  at::Tensor leaf(const fs::path& rel, const fs::path& shown, at::ScalarType dtype, at::IntArrayRef shape,
                  std::string_view key, bool copy) const;
  // Calls `file(name, bytes)` for each entry that is a file, in the
  // archive's order, `bytes` its whole content as uint8 (inflated, CRC-32
  // checked: what `unzip` would write), and `dir(name)` for each directory.
  void for_each_entry(const std::function<void(const std::string& name, const at::Tensor& bytes)>& file,
                      const std::function<void(const std::string& name)>& dir) const;

 private:
  struct Item {
    zip::Entry entry;
    uint64_t payload = 0;
  };
  const Item& item(const fs::path& rel, const fs::path& shown) const;
  // Up to `n` bytes from `offset` into `out` (fewer at the file's end); how many.
  std::size_t read_into(uint64_t offset, uint64_t n, char* out) const;
  std::string read_at(uint64_t offset, uint64_t n) const;
  // The entry's whole content, inflated when deflated, into a new tensor.
  at::Tensor content(const Item& item, const fs::path& shown) const;
  fs::path path_;
  bool writable_;
  UniqueFd fd_;
  uint64_t size_ = 0;
  std::map<std::string, Item, std::less<>> items_;
  std::set<std::string, std::less<>> dirs_;
  mutable at::Tensor mapping_;  // the whole file, mapped when a stored leaf is first read
};

}  // namespace tensordict::detail::memmap
