// Helpers shared by the generator tests.
#pragma once

#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

namespace tcgen_test {

inline std::string test_dir() { return TCGEN_TEST_DIR; }

inline std::string read_file(const std::filesystem::path& p) {
  std::ifstream in(p, std::ios::binary);
  std::ostringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

inline void write_file(const std::filesystem::path& p, const std::string& text) {
  std::filesystem::create_directories(p.parent_path());
  std::ofstream out(p, std::ios::binary);
  out << text;
}

// A fresh, empty directory under the test binary dir.
inline std::filesystem::path scratch_dir(const std::string& name) {
  auto p = std::filesystem::path(TCGEN_TEST_BINARY_DIR) / "scratch" / name;
  std::filesystem::remove_all(p);
  std::filesystem::create_directories(p);
  return p;
}

}  // namespace tcgen_test
