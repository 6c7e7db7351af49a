// The fuzzer's input read as a stream of choices (shared by the fuzz targets
// that build structured input from bytes).
#pragma once

#include <cstddef>
#include <cstdint>

namespace fuzz {

struct Bytes {
  const std::uint8_t* p;
  std::size_t n;
  // The next byte, 0 once the input is used up (every input is a valid program).
  std::uint8_t next() {
    if (n == 0) return 0;
    --n;
    return *p++;
  }
  // A value in [lo, hi].
  int64_t small(int64_t lo, int64_t hi) { return lo + next() % (hi - lo + 1); }
};

}  // namespace fuzz
