// Non-tensor entries: tensordict's NonTensorData and NonTensorStack.
//
// A value that is not a tensor (a string, a number, a bool, a JSON-like list
// or dict) stored in a tensordict and carried through every batch op. Either
// one value for the whole batch (NonTensorData), or one value per batch
// element (NonTensorStack, what stacking different values gives). A stack
// keeps its values in a pool and an int64 tensor of pool ids shaped like the
// batch, so that indexing, reshaping, unbinding and stacking a stack are the
// very same ops applied to the id tensor.
#pragma once

#include <ATen/core/Tensor.h>

#include <memory>
#include <nlohmann/json_fwd.hpp>
#include <string>
#include <vector>

namespace tensordict {

// JSON-like values, keeping dict insertion order as Python does.
using Json = nlohmann::ordered_json;

class NonTensorData {
 public:
  // One value for every element of the batch.
  explicit NonTensorData(Json value);
  // One value per batch element: values[i] belongs to the i-th element of a
  // batch of shape `batch_size` in row-major order.
  static NonTensorData stack(std::vector<Json> values, at::IntArrayRef batch_size);
  // A stack over `ids` (int64, the batch shape) into `pool`; collapses to a
  // single value when every element holds the same one.
  static NonTensorData from_ids(std::shared_ptr<const std::vector<Json>> pool, at::Tensor ids);

  bool is_stack() const { return ids_.defined(); }
  // The value; for a stack, nested lists over the batch dims (tolist()).
  Json data() const;
  // The stack's element ids (int64, the batch shape); undefined for one value.
  const at::Tensor& ids() const { return ids_; }
  const std::shared_ptr<const std::vector<Json>>& pool() const { return pool_; }

  // Python's str() of the value, as tensordict's repr prints it.
  std::string str() const;

  friend bool operator==(const NonTensorData& a, const NonTensorData& b);

 private:
  NonTensorData(std::shared_ptr<const std::vector<Json>> pool, at::Tensor ids);

  std::shared_ptr<const std::vector<Json>> pool_;
  at::Tensor ids_;
};

// Python's str(value) (top level: strings unquoted) and repr(value).
std::string python_str(const Json& value);
std::string python_repr(const Json& value);

}  // namespace tensordict
