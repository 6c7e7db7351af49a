// What an entry holds (Value), batch-dim names and the kinds of entries:
// shared by the user API (base.h) and the interface a kind implements
// (impl.h).
#pragma once

#include <ATen/core/Tensor.h>

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <variant>
#include <vector>

#include <nlohmann/json_fwd.hpp>

namespace tensordict {

class NonTensorData;
using Json = nlohmann::ordered_json;
class TensorDictImpl;
class TensorDict;
class SubTensorDict;
class LazyStackedTensorDict;
class PersistentTensorDict;

// Dimension names: one per batch dim, nullopt for an unnamed dim (tensordict's
// None). An all-nullopt list means the tensordict has no names.
using Names = std::vector<std::optional<std::string>>;

// An entry's value: a tensor, a nested tensordict, or non-tensor data
// (<tensordict/non_tensor.h>).
class Value {
 public:
  Value(at::Tensor tensor) : value_(std::move(tensor)) {}
  Value(const TensorDict& td);
  Value(const NonTensorData& data);

  bool is_tensor() const { return value_.index() == 0; }
  bool is_tensordict() const { return value_.index() == 1; }
  bool is_non_tensor() const { return value_.index() == 2; }
  // Throw std::invalid_argument when the value is of another kind.
  const at::Tensor& tensor() const&;
  // From a temporary: the tensor moves out (no reference count traffic).
  at::Tensor tensor() &&;
  TensorDict tensordict() const;
  const NonTensorData& non_tensor() const;

  const std::shared_ptr<TensorDictImpl>& impl() const;

 private:
  std::variant<at::Tensor, std::shared_ptr<TensorDictImpl>, std::shared_ptr<const NonTensorData>> value_;
};

enum class EntryKind : uint8_t { Tensor, TensorDict, NonTensor };

}  // namespace tensordict
