// Fuzzes the bounded zip directory reader (runtime/src/zip/zip_directory.h)
// that AOTInductor packages and .tdz archives are read through: the input is
// the archive file. Reading must either list the entries and their payloads,
// each inside the input, or throw a std::exception with a message.
#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <exception>
#include <string>
#include <string_view>

#include "zip/zip_directory.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  namespace zip = tensordict::detail::zip;
  const std::string bytes(reinterpret_cast<const char*>(data), size);
  const zip::ReadAt read_at = [&](std::uint64_t offset, std::uint64_t n) {
    if (offset > bytes.size()) std::abort();  // the reader asks only inside the archive
    return bytes.substr(offset, std::min<std::uint64_t>(n, bytes.size() - offset));
  };
  try {
    const zip::Directory directory = zip::read_directory("fuzz.zip", bytes.size(), read_at);
    std::size_t names = 0;
    for (const auto& entry : directory.entries) {
      names += entry.name.size();
      (void)zip::unsafe_name(entry);
      const std::uint64_t payload = zip::payload_offset("fuzz.zip", entry, directory.offset, read_at);
      // The payload lies before the directory, which lies inside the input.
      if (payload + entry.compressed_size > directory.offset || directory.offset > bytes.size()) std::abort();
    }
    if (names > bytes.size()) std::abort();  // every name is bytes of the input
  } catch (const std::exception& e) {
    if (std::string_view(e.what()).empty()) std::abort();
  }
  return 0;
}
