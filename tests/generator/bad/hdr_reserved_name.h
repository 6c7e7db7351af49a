#pragma once
#include <tensordict/annotations.h>
#include <tensordict/tensorclass.h>
#include <torch/types.h>

namespace rl {
struct TC_TENSORCLASS() Obs : tensordict::TensorClass<Obs> {
  torch::Tensor device;
};
}  // namespace rl
// expect: 8:17: error: field name 'device' in class 'Obs' is reserved: it would hide the TensorClass member 'device'
