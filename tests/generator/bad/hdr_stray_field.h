#pragma once
#include <tensordict/annotations.h>
#include <tensordict/tensorclass.h>
#include <torch/types.h>

namespace rl {
struct Plain {
  TC_FIELD(dtype = "uint8") torch::Tensor pixels;
};
struct TC_TENSORCLASS() Obs : tensordict::TensorClass<Obs> {
  torch::Tensor reward;
};
}  // namespace rl
// expect: 8:43: error: TC_FIELD used in struct 'Plain', which is not marked TC_TENSORCLASS
