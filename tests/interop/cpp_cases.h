// The cases the C++ side writes for Python tensordict to read: each one built
// deterministically, written as a memmap tree or an h5 file.
#pragma once

#include <tensordict/tensordict.h>
#include <nlohmann/json.hpp>

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

// Distinct, deterministic values of `dtype` in `shape`, with the special
// floating-point values (-0.0, inf, nan) that exact byte comparison must keep.
at::Tensor values(at::IntArrayRef shape, at::ScalarType dtype);

// Writes every case under `dir` (which must exist).
std::vector<WrittenCase> write_cases(const std::filesystem::path& dir);

// ---- consolidated files ----------------------------------------------------------
// Writes the consolidated-file cases under `dir` (which must exist), each a
// file written by consolidate({.filename}) (format "consolidated"), expected
// as the consolidated tensordict reads it.
std::vector<WrittenCase> write_consolidated_cases(const std::filesystem::path& dir);

}  // namespace interop
