// Fuzzes the reader of the pickle subset that carries tensordict's metadata
// between ranks (runtime/src/distributed/pickle.h): the input is the pickle a
// peer sent. Reading must either give a value or throw a std::exception with
// a message; a value read writes back (both layouts) as a pickle that reads
// back to the same value.
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <string>
#include <string_view>

#include "distributed/pickle.h"

namespace pickle = tensordict::dist::pickle;

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string_view bytes(reinterpret_cast<const char*>(data), size);
  pickle::Json value;
  try {
    value = pickle::loads(bytes, "fuzz");
  } catch (const std::exception& e) {
    if (std::string_view(e.what()).empty()) std::abort();
    return 0;
  }
  for (const auto layout : {pickle::Layout::Plain, pickle::Layout::ConsolidatedMetadata}) {
    std::string again;
    try {
      again = pickle::dumps(value, layout, "fuzz");
    } catch (const std::exception& e) {
      // Only a "cls" naming no module is refused on the way back.
      if (layout == pickle::Layout::Plain || std::string_view(e.what()).find("names no module") == std::string_view::npos) {
        std::fprintf(stderr, "fuzz_pickle: a value read cannot be written back: %s\n", e.what());
        std::abort();
      }
      continue;
    }
    if (pickle::loads(again, "fuzz again").dump() != value.dump()) {
      std::fprintf(stderr, "fuzz_pickle: the round trip changed the value\n");
      std::abort();
    }
  }
  return 0;
}
