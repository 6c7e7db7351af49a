#pragma once
#include <tensordict/annotations.h>
#include <tensordict/tensorclass.h>
#include <torch/types.h>

namespace rl {
struct TC_TENSORCLASS() Obs : tensordict::TensorClass<Obs> {
  TC_FIELD(optional = 1) torch::Tensor depth;
};
}  // namespace rl
// expect: 8:40: error: TC_FIELD argument 'optional' is a flag and takes no value
