// Shared by the persistence suites: temporary directories and fixtures.
#pragma once

#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <iterator>
#include <sstream>
#include <string>

#include "../temp_dir.h"
#include "helpers.h"

namespace td_test {

namespace fs = std::filesystem;


// Two entries at the same key hold the same thing: tensors of one dtype,
// shape and values; equal non-tensor data; nested tensordicts of one batch
// size (their entries are compared by the caller's walk).
inline void require_same_entry(const tensordict::Value& a, const tensordict::Value& b) {
  REQUIRE(a.is_tensor() == b.is_tensor());
  REQUIRE(a.is_non_tensor() == b.is_non_tensor());
  if (a.is_tensor()) {
    REQUIRE(a.tensor().scalar_type() == b.tensor().scalar_type());
    REQUIRE(a.tensor().sizes() == b.tensor().sizes());
    REQUIRE(at::equal(a.tensor().cpu(), b.tensor().cpu()));
  } else if (a.is_non_tensor()) {
    REQUIRE(a.non_tensor() == b.non_tensor());
  } else {
    REQUIRE(a.tensordict().batch_size() == b.tensordict().batch_size());
  }
}

// Files written by Python tensordict (tests/fixtures in the repository). Fails
// the test, never skips it, when they are missing.
inline fs::path fixtures_dir() {
  const fs::path dir(TENSORCLASS_FIXTURES_DIR);
  if (!fs::is_directory(dir / "python-tensordict")) {
    FAIL("the fixtures directory "
         << dir.string() << "/python-tensordict is missing");
  }
  return dir / "python-tensordict";
}

inline std::string read_text(const fs::path& file) {
  std::ifstream in(file, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), {});
}

inline void write_text(const fs::path& file, const std::string& text) {
  std::ofstream out(file, std::ios::binary | std::ios::trunc);
  out << text;
}

// Every entry under `dir`, relative, sorted: to check that nothing stray is left.
inline std::vector<std::string> tree_of(const fs::path& dir) {
  std::vector<std::string> out;
  for (const auto& e : fs::recursive_directory_iterator(dir)) out.push_back(fs::relative(e.path(), dir).string());
  std::sort(out.begin(), out.end());
  return out;
}

}  // namespace td_test
