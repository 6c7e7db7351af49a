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
// (src/typed/non_tensor_stack.cpp, instantiated there for the element types
// a schema may declare), so that this header needs no JSON.
template <class T>
struct NonTensorValues {
  static NonTensorData one(const T& value);
  static NonTensorData stack(const std::vector<T>& values, at::IntArrayRef batch_size);
  // The element at `index` of `data` over `batch` (non_tensor_element), and
  // every element, as T; TypeError when a value is not a T.
  static T at(const NonTensorData& data, at::IntArrayRef batch, at::IntArrayRef index);
  static std::vector<T> all(const NonTensorData& data, at::IntArrayRef batch);
};
extern template struct NonTensorValues<bool>;
extern template struct NonTensorValues<std::int64_t>;
extern template struct NonTensorValues<double>;
extern template struct NonTensorValues<std::string>;
}  // namespace detail

template <class T>
class NonTensorStack {
  static_assert(std::is_same_v<T, bool> || std::is_same_v<T, std::int64_t> || std::is_same_v<T, double> ||
                    std::is_same_v<T, std::string>,
                "NonTensorStack<T>: T is bool, std::int64_t, double or std::string (a schema's bool, int, float, string)");

 public:
  using value_type = T;

  // One value for every element (T{} by default, as a schema default is).
  NonTensorStack() : data_(detail::NonTensorValues<T>::one(T{})) {}
  // One value for every element: `obj.task = "walk"`.
  template <class U>
    requires std::is_convertible_v<U&&, T>
  NonTensorStack(U&& value) : data_(detail::NonTensorValues<T>::one(T(std::forward<U>(value)))) {}
  // The runtime's container as it is (its values are checked against T
  // where the field is read: construction, from_tensordict, loads).
  explicit NonTensorStack(NonTensorData data) : data_(std::move(data)) {}
  // One value per element of a batch of shape `batch_size`, row-major.
  static NonTensorStack stack(const std::vector<T>& values, at::IntArrayRef batch_size) {
    return NonTensorStack(detail::NonTensorValues<T>::stack(values, batch_size));
  }

  // Whether the elements hold different values (tensordict's NonTensorStack)
  // rather than one value (NonTensorData).
  bool is_stack() const { return data_.is_stack(); }
  // The runtime's container.
  const NonTensorData& data() const { return data_; }
  // The value of the element at `index` (one index per dim of `batch_size`,
  // the owning object's batch size): obj.task.at(obj.batch_size(), {1, 0}).
  T at(at::IntArrayRef batch_size, at::IntArrayRef index) const {
    return detail::NonTensorValues<T>::at(data_, batch_size, index);
  }
  // Every element's value over `batch_size`, row-major (tensordict's tolist(), flattened).
  std::vector<T> tolist(at::IntArrayRef batch_size) const {
    return detail::NonTensorValues<T>::all(data_, batch_size);
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
