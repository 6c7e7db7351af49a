#pragma once
#include <tensordict/annotations.h>
#include <tensordict/tensorclass.h>
#include <torch/types.h>

namespace rl {
struct TC_TENSORCLASS() Obs : tensordict::TensorClass<Obs> {
  TC_FIELD(dtype = "uint8", shap = "..., 3") torch::Tensor pixels;
};
}  // namespace rl
// expect: 8:60: error: unknown TC_FIELD argument 'shap'; expected one of dtype, shape, optional, unbatched, doc
