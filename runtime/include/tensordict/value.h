// What an entry holds (Value), batch-dim names and the kinds of entries:
// shared by the user API (base.h) and the interface a kind implements
// (detail/impl.h).
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

// tensordict's UnbatchedTensor: a tensor entry without the batch dims, which
// the tensordict's batch ops (indexing, reshape, stack, ...) carry unchanged
// and its value ops (clone, to, arithmetic, apply) apply to as to any
// tensor. Set one with td.set(key, UnbatchedTensor(t)); td.get(key) gives the
// payload back, and Value::is_unbatched() (td.is_unbatched(key)) tells it
// apart. Use it for what the whole batch shares: a lookup table, a mask,
// parameters. (tensordict's is a torch.Tensor subclass that records the
// batch size for vmap; C++ keeps the payload a plain at::Tensor.)
struct UnbatchedTensor {
  explicit UnbatchedTensor(at::Tensor data) : data(std::move(data)) {}
  at::Tensor data;
};

// An entry's value: a tensor (batched, or an UnbatchedTensor), a nested
// tensordict, or non-tensor data (<tensordict/non_tensor.h>).
class Value {
 public:
  Value(at::Tensor tensor) : value_(std::move(tensor)) {}
  Value(UnbatchedTensor tensor) : value_(std::move(tensor)) {}
  Value(const TensorDict& td);
  Value(const NonTensorData& data);

  // An UnbatchedTensor is a tensor too (tensordict: isinstance(v, Tensor)).
  bool is_tensor() const { return value_.index() == 0 || value_.index() == 3; }
  bool is_unbatched() const { return value_.index() == 3; }
  bool is_tensordict() const { return value_.index() == 1; }
  bool is_non_tensor() const { return value_.index() == 2; }
  // Throw TypeError when the value is of another kind. An
  // UnbatchedTensor gives its payload.
  const at::Tensor& tensor() const&;
  // From a temporary: the tensor moves out (no reference count traffic).
  at::Tensor tensor() &&;
  // A tensor of the same kind as this one (batched or not) holding `t`: what
  // a value op (clone, to, arithmetic) makes of the entry.
  Value with_tensor(at::Tensor t) const {
    return is_unbatched() ? Value(UnbatchedTensor(std::move(t))) : Value(std::move(t));
  }
  TensorDict tensordict() const;
  const NonTensorData& non_tensor() const;

  const std::shared_ptr<TensorDictImpl>& impl() const;

 private:
  std::variant<at::Tensor, std::shared_ptr<TensorDictImpl>, std::shared_ptr<const NonTensorData>, UnbatchedTensor>
      value_;
};

enum class EntryKind : uint8_t { Tensor, TensorDict, NonTensor };

}  // namespace tensordict
