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
