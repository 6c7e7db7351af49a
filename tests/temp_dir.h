// TempDir: a fresh directory per use, shared by the test suites.
#pragma once

#include <unistd.h>

#include <filesystem>
#include <string>

#include "suite_paths.h"
#include "tensordict/remove_tree.h"

namespace td_test {

// Unique per process and per call (ctest runs test cases in parallel
// processes); removed on destruction. Under the suite's build dir.
class TempDir {
 public:
  TempDir() {
    static int counter = 0;
    const std::filesystem::path root(paths::test_tmp);
    path_ = root / ("p" + std::to_string(::getpid()) + "_" + std::to_string(counter++));
    tensordict::remove_tree(path_);
    std::filesystem::create_directories(path_);
  }
  ~TempDir() {
    std::error_code ec;
    tensordict::remove_tree(path_, ec);
  }
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;

  const std::filesystem::path& path() const { return path_; }
  std::filesystem::path operator/(const std::string& sub) const { return path_ / sub; }

 private:
  std::filesystem::path path_;
};

}  // namespace td_test
