// The module and input of tensordict's TestSelectOutKeys (shared by the
// select_out_keys and wrapper tests).
#pragma once

#include <algorithm>
#include <map>
#include <string>
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

// tensordict's test_tdmodule_dispatch on a fresh three_outputs() module (or
// a module wrapping one): the tensor-call form gives c, d, e, then only
// `selection`, then all three again after reset_out_keys().
template <class Module>
void check_dispatch_selection(Module mod, const tnn::Keys& selection) {
  const std::map<std::string, float> expected{{"c", 2.0f}, {"d", 3.0f}, {"e", 0.0f}};
  auto res = mod(torch::zeros({}), torch::ones({}));
  REQUIRE(res.size() == 3);
  CHECK(res[0].template item<float>() == expected.at("c"));
  CHECK(res[1].template item<float>() == expected.at("d"));
  CHECK(res[2].template item<float>() == expected.at("e"));
  mod->select_out_keys(selection);
  res = mod(torch::zeros({}), torch::ones({}));
  REQUIRE(res.size() == selection.size());
  for (std::size_t i = 0; i < selection.size(); ++i) {
    CHECK(res[i].template item<float>() == expected.at(selection[i].front()));
  }
  mod->reset_out_keys();
  CHECK(mod(torch::zeros({}), torch::ones({})).size() == 3);
}

}  // namespace td_test
