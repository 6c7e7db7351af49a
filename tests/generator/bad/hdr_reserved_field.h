#pragma once
#include <tensordict/annotations.h>
#include <tensordict/tensorclass.h>
#include <ATen/core/Tensor.h>

namespace rl {
struct TC_TENSORCLASS() Obs : tensordict::TensorClass<Obs> {
  at::Tensor validate;
  at::Tensor _Hidden;
};
}  // namespace rl
// expect: 9:14: error: field name '_Hidden' in class 'Obs' is reserved: names starting with '_' and an upper-case letter are reserved for the C++ implementation
