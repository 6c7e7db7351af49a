// Tensordicts the distributed tests move, with values every rank can compute
// on its own (the expectation is never what came over the wire).
#pragma once

#include <ATen/ATen.h>
#include <nlohmann/json.hpp>

#include <string>

#include "multiprocess.h"
#include "tensordict/lazy.h"
#include "tensordict/tensordict.h"

namespace td_test {

using tensordict::TensorDict;

// Keys inserted out of sorted order, nested, three dtypes, batch [3].
inline TensorDict sample(double seed) {
  return TensorDict({{"b", at::arange(12, at::kFloat).reshape({3, 4}) * seed},
                     {"a", TensorDict({{"y", at::arange(3, at::kLong) + static_cast<int64_t>(seed)},
                                       {"x", at::ones({3, 2}, at::kDouble) * seed}},
                                      {3})},
                     {"c", at::arange(3, at::kLong).remainder(2).eq(static_cast<int64_t>(seed) % 2)}},
                    {3});
}

// The same structure with every leaf zero, its keys inserted in another order.
inline TensorDict sample_template() {
  return TensorDict({{"c", at::zeros({3}, at::kBool)},
                     {"a", TensorDict({{"x", at::zeros({3, 2}, at::kDouble)}, {"y", at::zeros({3}, at::kLong)}}, {3})},
                     {"b", at::zeros({3, 4}, at::kFloat)}},
                    {3});
}

// Every leaf of `got` equals `expected`'s at the same key (the sorted walk of both).
inline void check_equal(const tensordict::TensorDict& got, const tensordict::TensorDict& expected,
                        const std::string& what) {
  constexpr tensordict::KeysOptions leaves{.include_nested = true, .leaves_only = true, .is_leaf = tensordict::IsLeaf::NonTensor};
  const auto keys = expected.keys(leaves);
  check(got.keys(leaves).size() == keys.size(), what + ": number of leaves");
  for (const auto& key : keys) {
    if (expected.get_value(key)->is_non_tensor()) {
      check(got.contains(key) && got.get_non_tensor(key) == expected.get_non_tensor(key), what + ": key " + key.repr());
      continue;
    }
    const at::Tensor a = got.get(key), b = expected.get(key);
    check(a.scalar_type() == b.scalar_type() && a.sizes() == b.sizes() && at::equal(a, b),
          what + ": key " + key.repr());
  }
}

// A lazy stack whose members differ in a feature shape.
inline tensordict::LazyStackedTensorDict lazy_sample(double seed) {
  TensorDict m0({{"obs", at::full({2, 3}, seed)}, {"id", at::full({2}, 0, at::kLong)}}, {2});
  TensorDict m1({{"obs", at::full({2, 5}, seed + 1)}, {"id", at::full({2}, 1, at::kLong)}}, {2});
  return tensordict::lazy_stack({m0, m1}, 0);
}

}  // namespace td_test
