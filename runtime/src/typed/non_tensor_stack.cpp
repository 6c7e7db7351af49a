// NonTensorStack<T>'s conversions between its values and the JSON the
// runtime's NonTensorData holds, for the element types a schema declares
// (non_tensor_stack.h), so that the generated headers need no JSON.
#include "tensordict/non_tensor_stack.h"

#include <nlohmann/json.hpp>

#include <string>
#include <vector>

#include "tensordict/errors.h"
#include "tensordict/non_tensor_ops.h"

namespace tensordict::detail {

template <class T>
NonTensorData NonTensorValues<T>::one(const T& value) {
  return NonTensorData(Json(value));
}

template <class T>
NonTensorData NonTensorValues<T>::stack(const std::vector<T>& values, at::IntArrayRef batch_size) {
  std::vector<Json> items(values.begin(), values.end());
  return NonTensorData::stack(std::move(items), batch_size);
}

namespace {
template <class T>
T element_as(const Json& value) {
  try {
    return value.get<T>();
  } catch (const Json::exception&) {
    throw TypeError("NonTensorStack: the element " + tensordict::python_repr(value) + " does not have the stack's element type");
  }
}
}  // namespace

template <class T>
T NonTensorValues<T>::at(const NonTensorData& data, at::IntArrayRef batch, at::IntArrayRef index) {
  return element_as<T>(non_tensor_element(data, batch, index, "NonTensorStack.at"));
}

template <class T>
std::vector<T> NonTensorValues<T>::all(const NonTensorData& data, at::IntArrayRef batch) {
  std::vector<T> out;
  for (const Json& value : non_tensor_elements(data, batch)) out.push_back(element_as<T>(value));
  return out;
}

// The element types non_tensor_stack.h's static_assert admits.
template struct NonTensorValues<bool>;
template struct NonTensorValues<std::int64_t>;
template struct NonTensorValues<double>;
template struct NonTensorValues<std::string>;

}  // namespace tensordict::detail
