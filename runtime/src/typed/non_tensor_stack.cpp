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

namespace {

template <class T>
NonTensorData stack_of(const std::vector<T>& values, at::IntArrayRef batch_size) {
  std::vector<Json> items(values.begin(), values.end());
  return NonTensorData::stack(std::move(items), batch_size);
}

template <class T>
T element_as(const Json& value) {
  try {
    return value.get<T>();
  } catch (const Json::exception&) {
    throw TypeError("NonTensorStack: the element " + tensordict::python_repr(value) + " does not have the stack's element type");
  }
}

template <class T>
void elements_as(const NonTensorData& data, at::IntArrayRef batch, std::vector<T>& out) {
  for (const Json& value : non_tensor_elements(data, batch)) out.push_back(element_as<T>(value));
}

}  // namespace

NonTensorData non_tensor_of(bool value) { return NonTensorData(Json(value)); }
NonTensorData non_tensor_of(std::int64_t value) { return NonTensorData(Json(value)); }
NonTensorData non_tensor_of(double value) { return NonTensorData(Json(value)); }
NonTensorData non_tensor_of(const std::string& value) { return NonTensorData(Json(value)); }

NonTensorData non_tensor_stack_of(const std::vector<bool>& values, at::IntArrayRef batch_size) {
  return stack_of(values, batch_size);
}
NonTensorData non_tensor_stack_of(const std::vector<std::int64_t>& values, at::IntArrayRef batch_size) {
  return stack_of(values, batch_size);
}
NonTensorData non_tensor_stack_of(const std::vector<double>& values, at::IntArrayRef batch_size) {
  return stack_of(values, batch_size);
}
NonTensorData non_tensor_stack_of(const std::vector<std::string>& values, at::IntArrayRef batch_size) {
  return stack_of(values, batch_size);
}

void non_tensor_element_as(const NonTensorData& data, at::IntArrayRef batch, at::IntArrayRef index, bool& out) {
  out = element_as<bool>(non_tensor_element(data, batch, index, "NonTensorStack.at"));
}
void non_tensor_element_as(const NonTensorData& data, at::IntArrayRef batch, at::IntArrayRef index, std::int64_t& out) {
  out = element_as<std::int64_t>(non_tensor_element(data, batch, index, "NonTensorStack.at"));
}
void non_tensor_element_as(const NonTensorData& data, at::IntArrayRef batch, at::IntArrayRef index, double& out) {
  out = element_as<double>(non_tensor_element(data, batch, index, "NonTensorStack.at"));
}
void non_tensor_element_as(const NonTensorData& data, at::IntArrayRef batch, at::IntArrayRef index, std::string& out) {
  out = element_as<std::string>(non_tensor_element(data, batch, index, "NonTensorStack.at"));
}

void non_tensor_elements_as(const NonTensorData& data, at::IntArrayRef batch, std::vector<bool>& out) {
  elements_as(data, batch, out);
}
void non_tensor_elements_as(const NonTensorData& data, at::IntArrayRef batch, std::vector<std::int64_t>& out) {
  elements_as(data, batch, out);
}
void non_tensor_elements_as(const NonTensorData& data, at::IntArrayRef batch, std::vector<double>& out) {
  elements_as(data, batch, out);
}
void non_tensor_elements_as(const NonTensorData& data, at::IntArrayRef batch, std::vector<std::string>& out) {
  elements_as(data, batch, out);
}

}  // namespace tensordict::detail
