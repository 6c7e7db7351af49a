// Shared by the persistence suites: temporary directories and fixtures.
#pragma once

#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <iterator>
#include <sstream>
#include <string>

#include "helpers.h"

namespace td_test {

namespace fs = std::filesystem;

// A fresh directory under the build tree, unique per process and per call
// (ctest runs test cases in parallel processes); removed on destruction.
class TempDir {
 public:
  TempDir() {
    static int counter = 0;
    path_ = fs::path(TENSORCLASS_TEST_TMP) / ("p" + std::to_string(::getpid()) + "_" + std::to_string(counter++));
    fs::remove_all(path_);
    fs::create_directories(path_);
  }
  ~TempDir() {
    std::error_code ec;
    fs::remove_all(path_, ec);
  }
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;

  const fs::path& path() const { return path_; }
  std::string operator/(const std::string& sub) const { return (path_ / sub).string(); }

 private:
  fs::path path_;
};

// The shared fixtures (../shared/fixtures beside the repository). Fails the
// test, never skips it, when they are missing.
inline fs::path fixtures_dir() {
  const fs::path dir(TENSORCLASS_FIXTURES_DIR);
  if (!fs::is_directory(dir / "python-tensordict")) {
    FAIL("the fixtures directory "
         << dir.string() << "/python-tensordict is missing: clone the shared/ directory beside the repository");
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
