// Fuzzes the zip central-directory reader that checks an AOTInductor
// package's entry names before torch's loader extracts it
// (runtime/src/nn/aoti/package_entries.h): the input is the package file.
// Reading must either list the entries, each read inside the input, or throw
// a std::exception with a message.
#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <exception>
#include <string>
#include <string_view>

#include "nn/aoti/package_entries.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string bytes(reinterpret_cast<const char*>(data), size);
  const auto read_at = [&](std::uint64_t offset, std::uint64_t n) {
    if (offset > bytes.size()) std::abort();  // the reader asks only inside the archive
    return bytes.substr(offset, std::min<std::uint64_t>(n, bytes.size() - offset));
  };
  try {
    const auto entries = tensordict::nn::aoti::package_entries("fuzz.pt2", bytes.size(), read_at);
    std::size_t names = 0;
    for (const auto& entry : entries) names += entry.name.size();
    if (names > bytes.size()) std::abort();  // every name is bytes of the input
  } catch (const std::exception& e) {
    if (std::string_view(e.what()).empty()) std::abort();
  }
  return 0;
}
