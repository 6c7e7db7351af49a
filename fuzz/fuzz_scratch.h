// The scratch directory of a fuzz target that writes files (shared by the
// memmap fuzz targets).
#pragma once

#include <ATen/Parallel.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <string>

#include "tensordict/remove_tree.h"

namespace fuzz {

// "<tag>.<pid>" in /dev/shm (else the temp directory), removed at exit. The
// first call also runs libtorch on one thread (inputs are tiny).
inline const std::filesystem::path& scratch_root(const char* tag) {
  static const std::filesystem::path root = [tag] {
    namespace fs = std::filesystem;
    at::set_num_threads(1);
    const fs::path base = fs::exists("/dev/shm") ? fs::path("/dev/shm") : fs::temp_directory_path();
    std::atexit([] {
      std::error_code ec;
      tensordict::remove_tree(scratch_root(nullptr), ec);
    });
    return base / (std::string(tag) + "." + std::to_string(::getpid()));
  }();
  return root;
}

// scratch_root(tag), emptied: each input starts from nothing.
inline const std::filesystem::path& fresh_scratch_root(const char* tag) {
  const std::filesystem::path& root = scratch_root(tag);
  std::error_code ec;
  tensordict::remove_tree(root, ec);
  std::filesystem::create_directories(root);
  return root;
}

}  // namespace fuzz
