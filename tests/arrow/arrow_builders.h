// Arrow arrays and tables for the arrow suite, from JSON text as pyarrow
// builds them from Python lists.
#pragma once

#include <ATen/ATen.h>
#include <nlohmann/json.hpp>
#include <arrow/api.h>
#include <arrow/extension/fixed_shape_tensor.h>
#include <arrow/json/from_string.h>

#include <memory>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

namespace td_test {

inline at::Tensor longs(std::vector<int64_t> values) { return at::tensor(values, at::kLong); }
inline at::Tensor doubles(std::vector<double> values) { return at::tensor(values, at::kDouble); }

template <class T>
T ok(arrow::Result<T> result) {
  if (!result.ok()) throw std::runtime_error(result.status().ToString());
  return std::move(result).ValueUnsafe();
}

// pa.array(json, type).
inline std::shared_ptr<arrow::Array> array(const std::shared_ptr<arrow::DataType>& type, const std::string& json) {
  return ok(arrow::json::ArrayFromJSONString(type, json));
}

// An arrow.fixed_shape_tensor array over the fixed-size-list rows `json`.
inline std::shared_ptr<arrow::Array> tensor_array(const std::shared_ptr<arrow::DataType>& value_type,
                                                  std::vector<int64_t> shape, std::vector<int64_t> permutation,
                                                  const std::string& json) {
  int32_t size = 1;
  for (int64_t s : shape) size *= static_cast<int32_t>(s);
  auto type = arrow::extension::fixed_shape_tensor(value_type, shape, permutation);
  return arrow::ExtensionType::WrapArray(type, array(arrow::fixed_size_list(value_type, size), json));
}

// pa.table({name: array, ...}).
inline std::shared_ptr<arrow::Table> table(
    const std::vector<std::pair<std::string, std::shared_ptr<arrow::Array>>>& columns) {
  arrow::FieldVector fields;
  arrow::ArrayVector arrays;
  for (const auto& [name, column] : columns) {
    fields.push_back(arrow::field(name, column->type()));
    arrays.push_back(column);
  }
  return arrow::Table::Make(arrow::schema(fields), arrays);
}

}  // namespace td_test
