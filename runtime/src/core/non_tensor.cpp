#include "tensordict/non_tensor.h"

#include <nlohmann/json.hpp>

#include <ATen/ATen.h>
#include <fmt/format.h>
#include <fmt/ranges.h>

#include "tensordict/errors.h"
#include "tensordict/non_tensor_ops.h"
#include "tensordict/detail/tensorclass_support.h"

#include <stdexcept>

namespace tensordict {

NonTensorData::NonTensorData(Json value)
    : pool_(std::make_shared<const std::vector<Json>>(std::vector<Json>{std::move(value)})) {}

NonTensorData::NonTensorData(std::shared_ptr<const std::vector<Json>> pool, at::Tensor ids)
    : pool_(std::move(pool)), ids_(std::move(ids)) {}

NonTensorData NonTensorData::stack(std::vector<Json> values, at::IntArrayRef batch_size) {
  int64_t n = 1;
  for (auto s : batch_size) n *= s;
  if (static_cast<int64_t>(values.size()) != n) {
    throw ValueError(fmt::format("a non-tensor stack over batch size [{}] needs {} values, got {}",
                                 fmt::join(batch_size, ", "), n, values.size()));
  }
  auto ids = at::arange(n, at::kLong).reshape(batch_size);
  return from_ids(std::make_shared<const std::vector<Json>>(std::move(values)), ids);
}

NonTensorData NonTensorData::from_ids(std::shared_ptr<const std::vector<Json>> pool, at::Tensor ids) {
  if (ids.numel() > 0) {
    // One distinct value left: tensordict gives NonTensorData, not a stack.
    const auto flat = ids.reshape({-1}).contiguous();
    const int64_t* p = flat.data_ptr<int64_t>();
    const Json& first = (*pool)[p[0]];
    bool same = true;
    for (int64_t i = 1; same && i < flat.numel(); ++i) same = (*pool)[p[i]] == first;
    if (same) return NonTensorData(first);
  }
  return NonTensorData(std::move(pool), std::move(ids));
}

Json NonTensorData::data() const {
  if (!is_stack()) return pool_->front();
  const auto flat = ids_.reshape({-1}).contiguous();
  const int64_t* p = flat.data_ptr<int64_t>();
  const auto sizes = ids_.sizes();
  int64_t next = 0;
  // Nested lists, one level per batch dim.
  auto build = [&](auto&& self, std::size_t dim) -> Json {
    if (dim == sizes.size()) return (*pool_)[p[next++]];
    Json list = Json::array();
    for (int64_t i = 0; i < sizes[dim]; ++i) list.push_back(self(self, dim + 1));
    return list;
  };
  return build(build, 0);
}

std::string NonTensorData::str() const { return python_str(data()); }

bool operator==(const NonTensorData& a, const NonTensorData& b) {
  if (a.is_stack() != b.is_stack()) return false;
  if (!a.is_stack()) return a.pool_->front() == b.pool_->front();
  return a.ids_.sizes() == b.ids_.sizes() && a.data() == b.data();
}

std::string python_repr(const Json& value) {
  switch (value.type()) {
    case Json::value_t::null: return "None";
    case Json::value_t::boolean: return detail::python_repr(value.get<bool>());
    case Json::value_t::string: return detail::python_repr(value.get_ref<const std::string&>());
    case Json::value_t::number_float: return detail::python_repr(value.get<double>());
    case Json::value_t::array: {
      std::string out = "[";
      for (std::size_t i = 0; i < value.size(); ++i) out += (i ? ", " : "") + python_repr(value[i]);
      return out + "]";
    }
    case Json::value_t::object: {
      std::string out = "{";
      bool first = true;
      for (const auto& [k, v] : value.items()) {
        out += (first ? "" : ", ") + detail::python_repr(k) + ": " + python_repr(v);
        first = false;
      }
      return out + "}";
    }
    default: return value.dump();  // integers
  }
}

std::string python_str(const Json& value) {
  return value.is_string() ? value.get<std::string>() : python_repr(value);
}

namespace detail {

NonTensorData map_non_tensor(const NonTensorData& data, c10::function_ref<at::Tensor(const at::Tensor&)> fn) {
  if (!data.is_stack()) return data;
  return NonTensorData::from_ids(data.pool(), fn(data.ids()));
}

const Json& non_tensor_element(const NonTensorData& data, at::IntArrayRef batch, at::IntArrayRef index,
                               std::string_view what) {
  if (index.size() != batch.size()) {
    throw IndexError(fmt::format("{}: got {} indices for batch size [{}]", what, index.size(), fmt::join(batch, ", ")));
  }
  int64_t flat = 0;
  for (std::size_t d = 0; d < batch.size(); ++d) {
    if (index[d] < 0 || index[d] >= batch[d]) {
      throw IndexError(fmt::format("{}: index {} is out of range for dim {} of size {}", what, index[d], d, batch[d]));
    }
    flat = flat * batch[d] + index[d];
  }
  if (!data.is_stack()) return data.pool()->front();
  const auto ids = data.ids().reshape({-1}).contiguous();
  return (*data.pool())[ids.data_ptr<int64_t>()[flat]];
}

std::vector<Json> non_tensor_elements(const NonTensorData& data, at::IntArrayRef batch) {
  int64_t n = 1;
  for (auto s : batch) n *= s;
  if (!data.is_stack()) return std::vector<Json>(static_cast<std::size_t>(n), data.pool()->front());
  const auto ids = data.ids().reshape({-1}).contiguous();
  const int64_t* p = ids.data_ptr<int64_t>();
  std::vector<Json> out;
  out.reserve(static_cast<std::size_t>(ids.numel()));
  for (int64_t i = 0; i < ids.numel(); ++i) out.push_back((*data.pool())[p[i]]);
  return out;
}

}  // namespace detail

}  // namespace tensordict
