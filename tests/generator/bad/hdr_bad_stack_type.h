#pragma once
#include <vector>
#include <tensordict/annotations.h>
#include <tensordict/tensorclass.h>
#include <torch/types.h>

namespace rl {
struct TC_TENSORCLASS() Obs : tensordict::TensorClass<Obs> {
  torch::Tensor reward;
  tensordict::NonTensorStack<std::vector<int>> tags;
};
}  // namespace rl
// expect: 10:48: error: field 'tags': NonTensorStack holds std::string, int64_t, double or bool values, not 'tensordict::NonTensorStack<std::vector<int>>'
