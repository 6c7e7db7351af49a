// tensorclass-gen stand-in for the runtime's CRTP base.
#pragma once
#include <ATen/core/Tensor.h>
#include <tensordict/annotations.h>
namespace torch {
using at::Tensor;
}  // namespace torch
namespace tensordict {
template <class Derived>
struct TensorClass {};
}  // namespace tensordict
