// The module and input of tensordict's TestSelectOutKeys (shared by the
// select_out_keys and wrapper tests).
#pragma once

#include <algorithm>
#include <vector>

#include "nn_test.h"

namespace td_test {

// tensordict's `lambda x, y: (x + 2, y + 2, x)` on a, b -> c, d, e.
inline tnn::TensorDictModule three_outputs() {
  return tnn::TensorDictModule(
      [](const at::Tensor& x, const at::Tensor& y) { return std::make_tuple(x + 2, y + 2, x); }, {"a", "b"},
      {"c", "d", "e"});
}

inline TensorDict a0_b1() { return TensorDict({{"a", torch::zeros({})}, {"b", torch::ones({})}}, {}); }

inline std::vector<NestedKey> sorted_keys(const TensorDict& td) {
  auto keys = td.keys({.include_nested = true, .leaves_only = true});
  std::sort(keys.begin(), keys.end());
  return keys;
}

}  // namespace td_test
