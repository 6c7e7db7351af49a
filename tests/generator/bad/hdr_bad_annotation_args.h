#pragma once
#include <tensordict/annotations.h>
#include <tensordict/tensorclass.h>
#include <torch/types.h>

namespace rl {
struct TC_TENSORCLASS() Obs : tensordict::TensorClass<Obs> {
  TC_FIELD(dtype "uint8") torch::Tensor pixels;
};
}  // namespace rl
// expect: 8:41: error: invalid TC_FIELD arguments: expected ',' or end of arguments, found '"' (at offset 6 of 'dtype "uint8"')
