// Test stand-in for the runtime's tensordict/tensorclass.h: just enough for
// generated headers to compile without libtorch.
#pragma once
#include <ATen/core/Tensor.h>

#include <cstdint>
#include <optional>
#include <string>
#include <vector>
namespace torch {
using at::Tensor;
}  // namespace torch
namespace tensordict {
using BatchSizeArg = std::vector<std::int64_t>;
using DeviceArg = std::optional<int>;
using Names = std::vector<std::optional<std::string>>;
template <class Derived>
struct TensorClass {
  TensorClass() = default;
  Derived& init_(BatchSizeArg, DeviceArg = {}, Names = {}) { return static_cast<Derived&>(*this); }
};
// One value per batch element (the runtime's non_tensor_stack.h).
template <class T>
struct NonTensorStack {
  using value_type = T;
  NonTensorStack() = default;
  template <class U>
  NonTensorStack(U&&) {}
};
// The runtime's way to TensorClass's members whatever the fields are named.
template <class T>
TensorClass<T>& methods(T& obj) noexcept {
  return obj;
}
}  // namespace tensordict
