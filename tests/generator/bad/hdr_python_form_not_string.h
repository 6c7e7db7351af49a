#pragma once
#include <tensordict/annotations.h>
#include <tensordict/tensorclass.h>
#include <torch/types.h>

namespace rl {
struct TC_TENSORCLASS(python_form = 2) Obs : tensordict::TensorClass<Obs> {
  torch::Tensor reward;
};
}  // namespace rl
// expect: 7:40: error: TC_TENSORCLASS argument 'python_form' expects a string, e.g. python_form = "..."
