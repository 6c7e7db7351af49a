#pragma once
#include <tensordict/annotations.h>
#include <tensordict/tensorclass.h>
#include <torch/types.h>

namespace rl {
struct TC_TENSORCLASS() Obs : tensordict::TensorClass<Obs> {
  TC_FIELD(dtype = "float", shape = "..., 3") torch::Tensor pixels;
};
}  // namespace rl
// expect: 8:61: error: unknown dtype 'float' for field 'pixels'; expected one of float32, float64, float16, bfloat16, int8, int16, int32, int64, uint8, bool, complex64, complex128
