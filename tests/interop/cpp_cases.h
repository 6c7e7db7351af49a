// The cases the C++ side writes for Python tensordict to read: each one built
// deterministically, written as a memmap tree or an h5 file.
#pragma once

#include <tensordict/tensordict.h>

#include <filesystem>
#include <string>
#include <vector>

namespace interop {

struct WrittenCase {
  std::string name;
  std::string format;  // "memmap" or "h5"
  std::filesystem::path path;
  // canonical() of what Python must read back: the written tensordict for
  // memmap; for h5 (which keeps no batch sizes) what the runtime reads back.
  tensordict::Json expected;
};

// Writes every case under `dir` (which must exist).
std::vector<WrittenCase> write_cases(const std::filesystem::path& dir);

}  // namespace interop
