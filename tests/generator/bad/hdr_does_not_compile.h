#pragma once
#include <tensordict/annotations.h>
#include <tensordict/tensorclass.h>
#include <torch/types.h>

namespace rl {
struct TC_TENSORCLASS() Obs : tensordict::TensorClass<Obs> {
  torch::Tensor reward;
  UnknownType mystery;
};
}  // namespace rl
// expect: 9:3: error: unknown type name 'UnknownType'
// expect: error: the header does not compile (1 error above); tensorclass-gen needs a header that compiles
