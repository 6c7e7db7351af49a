// Helpers shared by the generator tests.
#pragma once

#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

namespace tcgen_test {

// Defined in the one generated file tcgen_test_paths.cpp
// (tests/generator/CMakeLists.txt), not as compile definitions, so that the
// compiler cache shares every other file between checkouts.
extern const char* const kTestDir;       // tests/generator in the sources
extern const char* const kBinaryDir;     // the suite's build dir
extern const char* const kGeneratorExe;  // the tensorclass-gen under test

inline std::string test_dir() { return kTestDir; }

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
  auto p = std::filesystem::path(kBinaryDir) / "scratch" / name;
  std::filesystem::remove_all(p);
  std::filesystem::create_directories(p);
  return p;
}

}  // namespace tcgen_test
