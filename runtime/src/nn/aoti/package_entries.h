// The entry names of a package (a zip archive), checked before torch's
// loader extracts it: torch writes each entry under a temporary directory by
// its name, so a name that climbs out of it ("../x"), an absolute name or a
// symbolic link would write elsewhere, before any check of the metadata.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

namespace tensordict::nn::aoti {

struct PackageEntry {
  std::string name;
  bool is_symlink = false;
};

// `n` bytes of the archive from `offset` (fewer at its end).
using ReadAt = std::function<std::string(uint64_t offset, uint64_t n)>;

// The entries of a zip archive of `size` bytes, from its central directory
// (the names torch's zip reader extracts by). Reads only the end records and
// the directory, each record bounds-checked; RuntimeError naming `path` for
// an archive it cannot read.
std::vector<PackageEntry> package_entries(const std::string& path, uint64_t size, const ReadAt& read_at);

// Reads the package at `path` and refuses (RuntimeError naming the entry) a
// name that is empty or absolute, holds a ".." part, a backslash or a NUL,
// or an entry that is a symbolic link.
void check_package_entries(const std::string& path);

}  // namespace tensordict::nn::aoti
