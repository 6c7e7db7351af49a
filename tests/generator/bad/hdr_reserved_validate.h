#pragma once
#include <tensordict/annotations.h>
#include <tensordict/tensorclass.h>
#include <ATen/core/Tensor.h>

namespace rl {
struct TC_TENSORCLASS() Obs : tensordict::TensorClass<Obs> {
  at::Tensor obs;
  bool validate = false;
};
}  // namespace rl
// expect: 9:8: error: field name 'validate' in class 'Obs' is reserved: it would hide the TensorClass member 'validate'
