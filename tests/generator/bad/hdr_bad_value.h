#pragma once
#include <tensordict/annotations.h>
#include <tensordict/tensorclass.h>

namespace rl {
struct TC_TENSORCLASS(batch = env) Obs : tensordict::TensorClass<Obs> {
  torch::Tensor pixels;
};
}  // namespace rl
// expect: 6:36: error: invalid TC_TENSORCLASS arguments: expected a string or an integer for 'batch', found 'e' (at offset 8 of 'batch = env')
