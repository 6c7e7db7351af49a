#include "arrow_io/non_tensor_rows.h"

#include <nlohmann/json.hpp>

#include "tensordict/non_tensor_ops.h"

namespace tensordict::detail::arrow_io {

namespace {

// The nested lists over `dims` of `elements` (row-major), from `at`.
Json nest(const std::vector<Json>& elements, at::IntArrayRef dims, std::size_t& at) {
  if (dims.empty()) return elements[at++];
  Json out = Json::array();
  for (int64_t i = 0; i < dims[0]; ++i) out.push_back(nest(elements, dims.slice(1), at));
  return out;
}

}  // namespace

std::vector<Json> non_tensor_rows(const NonTensorData& data, at::IntArrayRef batch) {
  const std::vector<Json> elements = detail::non_tensor_elements(data, batch);
  std::vector<Json> rows;
  rows.reserve(static_cast<std::size_t>(batch[0]));
  std::size_t at = 0;
  for (int64_t i = 0; i < batch[0]; ++i) rows.push_back(nest(elements, batch.slice(1), at));
  return rows;
}

}  // namespace tensordict::detail::arrow_io
