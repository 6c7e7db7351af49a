#pragma once
#include <tensordict/annotations.h>
#include <tensordict/tensorclass.h>
#include <torch/types.h>

namespace rl {
struct TC_TENSORCLASS() Obs : tensordict::TensorClass<Obs> {
  TC_FIELD(shape = "3, ...") torch::Tensor pixels;
};
}  // namespace rl
// expect: 8:44: error: '...' (the batch dims) must come first in the shape of field 'pixels'
