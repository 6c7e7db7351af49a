// Shared by the persistence suites: temporary directories and fixtures.
#pragma once

#include <unistd.h>
#include <nlohmann/json.hpp>

#include <filesystem>
#include <fstream>
#include <iterator>
#include <sstream>
#include <string>

#include "../temp_dir.h"
#include "../text_files.h"
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

// The same batch size, keys (nested included) and entries.
inline void require_same_entries(const tensordict::TensorDict& a, const tensordict::TensorDict& b) {
  REQUIRE(a.batch_size() == b.batch_size());
  REQUIRE(a.keys({.include_nested = true}) == b.keys({.include_nested = true}));
  for (const auto& key : a.keys({.include_nested = true})) {
    INFO("key " << key.repr());
    require_same_entry(*a.get_value(key), *b.get_value(key));
  }
}

// Files written by Python tensordict (tests/fixtures in the repository). Fails
// the test, never skips it, when they are missing.
inline fs::path fixtures_dir() {
  const fs::path dir = paths::source("tests/fixtures");
  if (!fs::is_directory(dir / "python-tensordict")) {
    FAIL("the fixtures directory "
         << dir.string() << "/python-tensordict is missing");
  }
  return dir / "python-tensordict";
}


// Every entry under `dir`, relative, sorted: to check that nothing stray is left.
inline std::vector<std::string> tree_of(const fs::path& dir) {
  std::vector<std::string> out;
  for (const auto& e : fs::recursive_directory_iterator(dir)) out.push_back(fs::relative(e.path(), dir).string());
  std::sort(out.begin(), out.end());
  return out;
}

}  // namespace td_test
