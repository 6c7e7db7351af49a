#pragma once
#include <map>
#include <tensordict/annotations.h>
#include <tensordict/tensorclass.h>
#include <torch/types.h>

namespace rl {
struct TC_TENSORCLASS() Obs : tensordict::TensorClass<Obs> {
  torch::Tensor reward;
  std::map<int, int> table;
};
}  // namespace rl
// expect: 10:22: error: unsupported member type 'std::map<int, int>' for field 'table'; expected at::Tensor, a TC_TENSORCLASS struct (or std::optional of one), std::string, int64_t, double, bool, std::vector of those or tensordict::NonTensorStack of a scalar
