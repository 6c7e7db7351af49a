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

#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include "tensordict/non_tensor.h"
#include "tensordict/non_tensor_ops.h"

namespace tensordict {

template <class T>
class NonTensorStack {
 public:
  using value_type = T;

  // One value for every element (T{} by default, as a schema default is).
  NonTensorStack() : data_(Json(T{})) {}
  // One value for every element: `obj.task = "walk"`.
  template <class U>
    requires std::is_convertible_v<U&&, T>
  NonTensorStack(U&& value) : data_(Json(T(std::forward<U>(value)))) {}
  // The runtime's container as it is (its values are checked against T
  // where the field is read: construction, from_tensordict, loads).
  explicit NonTensorStack(NonTensorData data) : data_(std::move(data)) {}
  // One value per element of a batch of shape `batch_size`, row-major.
  static NonTensorStack stack(const std::vector<T>& values, at::IntArrayRef batch_size) {
    std::vector<Json> items(values.begin(), values.end());
    return NonTensorStack(NonTensorData::stack(std::move(items), batch_size));
  }

  // Whether the elements hold different values (tensordict's NonTensorStack)
  // rather than one value (NonTensorData).
  bool is_stack() const { return data_.is_stack(); }
  // The runtime's container.
  const NonTensorData& data() const { return data_; }
  // The value of the element at `index` (one index per dim of `batch_size`,
  // the owning object's batch size): obj.task.at(obj.batch_size(), {1, 0}).
  T at(at::IntArrayRef batch_size, at::IntArrayRef index) const {
    return detail::non_tensor_element(data_, batch_size, index, "NonTensorStack.at").template get<T>();
  }
  // Every element's value over `batch_size`, row-major (tensordict's tolist(), flattened).
  std::vector<T> tolist(at::IntArrayRef batch_size) const {
    std::vector<T> out;
    for (const Json& v : detail::non_tensor_elements(data_, batch_size)) out.push_back(v.template get<T>());
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
