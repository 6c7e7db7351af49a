#pragma once
#include <tensordict/annotations.h>
#include <tensordict/tensorclass.h>
#include <torch/types.h>

namespace rl {
struct TC_TENSORCLASS(python_form = "both") Agent : tensordict::TensorClass<Agent> {
  torch::Tensor pos;
};
struct TC_TENSORCLASS(python_form = "typed_tensordict") Obs : tensordict::TensorClass<Obs> {
  torch::Tensor reward;
};
}  // namespace rl
// expect: 10:57: error: conflicting python_form 'typed_tensordict' (an earlier class says 'both')
