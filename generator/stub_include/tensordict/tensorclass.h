// tensorclass-gen stand-in for the runtime's CRTP base, and the argument types
// of its init_, which constructors declared in a header take.
#pragma once
#include <ATen/core/Tensor.h>
#include <tensordict/annotations.h>

#include <cstdint>
#include <optional>
#include <string>
#include <vector>
namespace torch {
using at::Tensor;
}  // namespace torch
namespace tensordict {
using BatchSizeArg = std::vector<std::int64_t>;
using DeviceArg = std::optional<at::Device>;
using Names = std::vector<std::optional<std::string>>;
template <class Derived>
struct TensorClass {};
// One value per batch element (the runtime's non_tensor_stack.h).
template <class T>
struct NonTensorStack {
  using value_type = T;
  NonTensorStack() = default;
  template <class U>
  NonTensorStack(U&&) {}
};
}  // namespace tensordict
