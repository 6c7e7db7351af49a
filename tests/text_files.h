// Whole files as text, shared by the suites that write and read trees.
#pragma once

#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>

namespace td_test {

inline std::string read_text(const std::filesystem::path& file) {
  std::ifstream in(file, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), {});
}

// Creates the parent directories it needs.
inline void write_text(const std::filesystem::path& file, const std::string& text) {
  if (file.has_parent_path()) std::filesystem::create_directories(file.parent_path());
  std::ofstream(file, std::ios::binary | std::ios::trunc) << text;
}

}  // namespace td_test
