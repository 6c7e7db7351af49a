#pragma once
#include <tensordict/annotations.h>
#include <torch/types.h>

namespace rl {
struct TC_TENSORCLASS() Obs {
  TC_FIELD(shape = "3, ...") torch::Tensor pixels;
};
}  // namespace rl
// expect: 7:44: error: '...' (the batch dims) must come first in the shape of field 'pixels'
