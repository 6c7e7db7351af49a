// Test stand-in for the runtime's tensordict/tensorclass.h: just enough for
// generated headers to compile without libtorch.
#pragma once
#include <ATen/core/Tensor.h>
namespace torch {
using at::Tensor;
}  // namespace torch
namespace tensordict {
template <class Derived>
struct TensorClass {
  TensorClass() = default;
};
}  // namespace tensordict
