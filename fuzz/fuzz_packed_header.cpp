// Fuzzes the reader of the packed protocol's structure header, the JSON a
// peer sends first in init_remote (runtime/src/distributed/packed_calls.h):
// reading must give a tensordict whose leaves fit the limit, or throw a
// std::exception with a message. The limit is 64 MiB here, so that a header
// announcing more is refused, never allocated.
#include <cstdint>
#include <cstdlib>
#include <exception>
#include <string>
#include <string_view>

#include "distributed/packed_calls.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string_view json(reinterpret_cast<const char*>(data), size);
  try {
    const auto td = tensordict::dist::structure_from_header(json, std::nullopt, int64_t{64} << 20, "fuzz", "rank 1");
    (void)td.numel();
  } catch (const std::exception& e) {
    if (std::string_view(e.what()).empty()) std::abort();
  }
  return 0;
}
