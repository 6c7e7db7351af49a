// Shared by the hostile suites: crafted files, timing.
#pragma once

#include <ATen/ATen.h>
#include <nlohmann/json.hpp>
#include <sys/resource.h>

#include <catch2/catch.hpp>
#include <algorithm>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <string>

#include "../temp_dir.h"
#include "../text_files.h"
#include "child.h"
#include "tensordict/tensordict.h"

namespace hostile {

namespace fs = std::filesystem;
using Catch::Matchers::Contains;
using Catch::Matchers::EndsWith;

using td_test::read_text;
using td_test::write_text;

inline constexpr const char* kTdType = "<class 'tensordict._td.TensorDict'>";

// A level's meta.json: `entries` (the JSON members for the keys, may be
// empty) and the batch `shape`.
inline std::string level_meta(const std::string& entries, const std::string& shape) {
  return "{" + entries + (entries.empty() ? "" : ", ") + "\"shape\": " + shape + ", \"device\": \"cpu\", \"_type\": \"" +
         kTdType + "\"}";
}

// Seconds `fn` takes.
template <class Fn>
double seconds_of(Fn&& fn) {
  const auto start = std::chrono::steady_clock::now();
  fn();
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

// The peak resident memory of this process so far, in MiB.
inline long peak_rss_mb() {
  rusage usage{};
  ::getrusage(RUSAGE_SELF, &usage);
  return usage.ru_maxrss / 1024;
}

}  // namespace hostile
