// Shape helpers the nn sources share (private).
#pragma once

#include <c10/util/ArrayRef.h>

#include <cstdint>
#include <vector>

namespace tensordict::nn {

// The sizes `b` with the sizes `a` in front (sample shapes before a batch).
inline std::vector<int64_t> concat(at::IntArrayRef a, at::IntArrayRef b) {
  std::vector<int64_t> out(a.begin(), a.end());
  out.insert(out.end(), b.begin(), b.end());
  return out;
}

}  // namespace tensordict::nn
