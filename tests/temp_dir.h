// TempDir: a fresh directory per use, shared by the test suites.
#pragma once

#include <unistd.h>

#include <filesystem>
#include <string>

#include "tensordict/remove_tree.h"

namespace td_test {

// Unique per process and per call (ctest runs test cases in parallel
// processes); removed on destruction. Under the build tree when the suite
// defines TENSORCLASS_TEST_TMP, else under the system's temp directory.
class TempDir {
 public:
  TempDir() {
    static int counter = 0;
#ifdef TENSORCLASS_TEST_TMP
    const std::filesystem::path root(TENSORCLASS_TEST_TMP);
#else
    const std::filesystem::path root = std::filesystem::temp_directory_path() / "tensorclass_tests";
#endif
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
