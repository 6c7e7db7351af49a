// tensorclass-gen stand-in for the runtime's CRTP base, and the argument types
// of its init_, which constructors declared in a header take. The generator
// tests also compile the golden headers against it: init_ and methods() are
// what generated code calls, and the two class templates what its extern
// templates name.
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
struct TensorClass {
  TensorClass() = default;
  Derived& init_(BatchSizeArg, DeviceArg = {}, Names = {}) { return static_cast<Derived&>(*this); }
};
// The persistence base, named by the generated headers' extern templates.
template <class Derived>
struct TensorClassPersistence {};
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
