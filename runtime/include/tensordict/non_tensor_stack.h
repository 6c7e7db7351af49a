// tensordict::NonTensorStack<T>: the member type of a schema field declared
// `NonTensorStack<string>` (int, float, bool): one value of type T per batch
// element, as tensordict's NonTensorStack holds them.
//
// A typed view over the runtime's NonTensorData (one value for the whole
// batch, or a pool of values plus an int64 id tensor shaped like the batch):
// the generated class's batch ops move it with the same functions the
// dynamic core applies to a non-tensor stack entry (non_tensor_ops.h), and
// its tensordict form holds the NonTensorData itself.
#pragma once

#include <ATen/core/Tensor.h>

#include <cstdint>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include "tensordict/non_tensor.h"
#include "tensordict/non_tensor_ops.h"

namespace tensordict {

namespace detail {
// A NonTensorStack's values to and from JSON, compiled in the runtime
// (src/core/non_tensor.cpp) for the element types a schema may declare, so
// that this header needs no JSON.
NonTensorData non_tensor_of(bool value);
NonTensorData non_tensor_of(std::int64_t value);
NonTensorData non_tensor_of(double value);
NonTensorData non_tensor_of(const std::string& value);
NonTensorData non_tensor_stack_of(const std::vector<bool>& values, at::IntArrayRef batch_size);
NonTensorData non_tensor_stack_of(const std::vector<std::int64_t>& values, at::IntArrayRef batch_size);
NonTensorData non_tensor_stack_of(const std::vector<double>& values, at::IntArrayRef batch_size);
NonTensorData non_tensor_stack_of(const std::vector<std::string>& values, at::IntArrayRef batch_size);
// The element at `index` of `data` over `batch` (non_tensor_element), and
// every element, as T; TypeError when a value is not a T.
void non_tensor_element_as(const NonTensorData& data, at::IntArrayRef batch, at::IntArrayRef index, bool& out);
void non_tensor_element_as(const NonTensorData& data, at::IntArrayRef batch, at::IntArrayRef index, std::int64_t& out);
void non_tensor_element_as(const NonTensorData& data, at::IntArrayRef batch, at::IntArrayRef index, double& out);
void non_tensor_element_as(const NonTensorData& data, at::IntArrayRef batch, at::IntArrayRef index, std::string& out);
void non_tensor_elements_as(const NonTensorData& data, at::IntArrayRef batch, std::vector<bool>& out);
void non_tensor_elements_as(const NonTensorData& data, at::IntArrayRef batch, std::vector<std::int64_t>& out);
void non_tensor_elements_as(const NonTensorData& data, at::IntArrayRef batch, std::vector<double>& out);
void non_tensor_elements_as(const NonTensorData& data, at::IntArrayRef batch, std::vector<std::string>& out);
}  // namespace detail

template <class T>
class NonTensorStack {
  static_assert(std::is_same_v<T, bool> || std::is_same_v<T, std::int64_t> || std::is_same_v<T, double> ||
                    std::is_same_v<T, std::string>,
                "NonTensorStack<T>: T is bool, std::int64_t, double or std::string (a schema's bool, int, float, string)");

 public:
  using value_type = T;

  // One value for every element (T{} by default, as a schema default is).
  NonTensorStack() : data_(detail::non_tensor_of(T{})) {}
  // One value for every element: `obj.task = "walk"`.
  template <class U>
    requires std::is_convertible_v<U&&, T>
  NonTensorStack(U&& value) : data_(detail::non_tensor_of(T(std::forward<U>(value)))) {}
  // The runtime's container as it is (its values are checked against T
  // where the field is read: construction, from_tensordict, loads).
  explicit NonTensorStack(NonTensorData data) : data_(std::move(data)) {}
  // One value per element of a batch of shape `batch_size`, row-major.
  static NonTensorStack stack(const std::vector<T>& values, at::IntArrayRef batch_size) {
    return NonTensorStack(detail::non_tensor_stack_of(values, batch_size));
  }

  // Whether the elements hold different values (tensordict's NonTensorStack)
  // rather than one value (NonTensorData).
  bool is_stack() const { return data_.is_stack(); }
  // The runtime's container.
  const NonTensorData& data() const { return data_; }
  // The value of the element at `index` (one index per dim of `batch_size`,
  // the owning object's batch size): obj.task.at(obj.batch_size(), {1, 0}).
  T at(at::IntArrayRef batch_size, at::IntArrayRef index) const {
    T out{};
    detail::non_tensor_element_as(data_, batch_size, index, out);
    return out;
  }
  // Every element's value over `batch_size`, row-major (tensordict's tolist(), flattened).
  std::vector<T> tolist(at::IntArrayRef batch_size) const {
    std::vector<T> out;
    detail::non_tensor_elements_as(data_, batch_size, out);
    return out;
  }

  // Equal values element by element (a stack and one value differ).
  friend bool operator==(const NonTensorStack& a, const NonTensorStack& b) { return a.data_ == b.data_; }

 private:
  NonTensorData data_;
};

template <class T>
inline constexpr bool is_non_tensor_stack_v = false;
template <class T>
inline constexpr bool is_non_tensor_stack_v<NonTensorStack<T>> = true;

}  // namespace tensordict
