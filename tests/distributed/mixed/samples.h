// The tensordicts of the mixed scenarios, built the same way by
// mixed_rank.py's make(): each side computes the expected values itself.
#pragma once

#include <ATen/ATen.h>
#include <nlohmann/json.hpp>

#include <stdexcept>
#include <string>

#include "tensordict/lazy.h"
#include "tensordict/tensordict.h"

namespace mixed {

using tensordict::TensorDict;

// `kind`: dense, nested, nontensor, lazy (members of different shapes) or
// stack (of the same shapes); `v` sets every value.
inline TensorDict make(const std::string& kind, int64_t v) {
  const double d = static_cast<double>(v);
  // Keys inserted out of sorted order: the wire order is the sorted one.
  auto dense = [&] {
    return TensorDict({{"obs", at::arange(6, at::kFloat).reshape({2, 3}) + d},
                       {"action", at::arange(2, at::kLong) * (v + 1)},
                       {"done", at::tensor({int64_t(v % 2 == 0), int64_t(1)}).to(at::kBool)}},
                      {2});
  };
  if (kind == "dense") return dense();
  if (kind == "nontensor") {
    TensorDict td = dense();
    td.set_non_tensor("note", "hello");
    return td;
  }
  if (kind == "nested") {
    return TensorDict({{"b", at::full({2}, d, at::kDouble)},
                       {"a", TensorDict({{"y", (at::arange(4, at::kInt) + v).reshape({2, 2})},
                                         {"x", at::full({2, 1}, d * 0.5, at::kFloat)}},
                                        {2})},
                       {"c", at::zeros({2, 0}, at::kFloat)}},
                      {2});
  }
  if (kind == "stack") {  // a lazy stack whose members have the same shapes (reduce stacks it)
    TensorDict m0({{"x", at::full({3}, d, at::kFloat)}, {"id", at::tensor({v}, at::kLong)}}, {});
    TensorDict m1({{"x", at::full({3}, d + 2, at::kFloat)}, {"id", at::tensor({v + 1}, at::kLong)}}, {});
    return TensorDict({{"z", at::full({2}, d, at::kFloat)}, {"s", tensordict::lazy_stack({m0, m1}, 0)}}, {});
  }
  if (kind == "lazy") {
    TensorDict m0({{"x", at::full({3}, d, at::kFloat)}, {"id", at::tensor({int64_t(0)}, at::kLong)}}, {});
    TensorDict m1({{"x", at::full({2}, d + 1, at::kFloat)}, {"id", at::tensor({int64_t(1)}, at::kLong)}}, {});
    return TensorDict({{"z", at::full({2}, d, at::kFloat)}, {"s", tensordict::lazy_stack({m0, m1}, 0)}}, {});
  }
  throw std::invalid_argument("no sample kind '" + kind + "'");
}

}  // namespace mixed
