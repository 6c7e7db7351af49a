#pragma once
#include <tensordict/annotations.h>
#include <tensordict/tensorclass.h>
#include <torch/types.h>

namespace rl {
struct TC_TENSORCLASS() Obs : tensordict::TensorClass<Obs> {
  torch::Tensor device;
};
}  // namespace rl
// expect: 8:17: error: field name 'device' in class 'Obs' is reserved: it clashes with a tensorclass member (reserved: batch_size, device, names, get, set, reshape, ..., and names starting or ending with '_')
