// tensorclass-gen stand-in: only the type names matter to the generator.
#pragma once
#include <ATen/core/Tensor.h>
namespace torch {
using at::Tensor;
}  // namespace torch
