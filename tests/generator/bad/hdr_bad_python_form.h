#pragma once
#include <tensordict/annotations.h>
#include <tensordict/tensorclass.h>
#include <torch/types.h>

namespace rl {
struct TC_TENSORCLASS(python_form = "typed") Obs : tensordict::TensorClass<Obs> {
  torch::Tensor reward;
};
}  // namespace rl
// expect: 7:46: error: unknown python_form 'typed'; expected tensorclass, typed_tensordict or both
