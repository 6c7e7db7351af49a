// KindOps: what a kind does differently in the ops written once outside its
// folder (private). One table per kind, defined in the kind's folder
// (kinds/<kind>/<kind>_ops.cpp), found by the kind's tag (kinds/kind_ops.cpp).
// An entry left null (or false) means the kind does what the generic op does.
// The table is private, unlike TensorDictImpl's virtual hooks (impl.h), so a
// new entry recompiles the runtime only; kinds/README.md lists the entries.
#pragma once

#include <ATen/core/Tensor.h>

#include <optional>
#include <string>
#include <vector>

#include "tensordict/base.h"

namespace tensordict::detail {

// A tensordict stacked from parts along one of its batch dims (a lazy stack's
// members): tensordict defines many ops on the parts, which may differ in
// keys and shapes, so that the stacked value need not exist.
struct StackedParts {
  const std::vector<TensorDict>& members;
  int64_t dim;
};

struct KindOps {
  // The parts the tensordict is stacked from; null: it stores its entries.
  std::optional<StackedParts> (*stacked_parts)(const TensorDictImpl& impl) = nullptr;

  // Its nested tensordicts are objects in memory that could hold their parent
  // (false: an h5 file's groups are read anew on each access; the cycle check
  // of a nested set() has nothing to walk).
  bool nests_in_memory = true;
  // The compact repr describes its entries from metadata alone: a tensor
  // entry from tensor_meta() (an h5 dataset's shape and dtype), a non-tensor
  // one as NonTensorData, its value unread (tensordict's _compact_leaf).
  bool compact_from_metadata = false;
  // The compact repr names its class on a nested level (tensordict prints it
  // for every class but TensorDict).
  bool compact_names_class = true;
};

// The table of `impl`'s kind.
const KindOps& kind_ops(const TensorDictImpl& impl);

// The parts `impl` is stacked from (KindOps::stacked_parts); nullopt when it
// stores its entries.
inline std::optional<StackedParts> stacked_parts(const TensorDictImpl& impl) {
  const auto fn = kind_ops(impl).stacked_parts;
  return fn ? fn(impl) : std::nullopt;
}

// `other` cut along the stack dim of `parts`, one piece per part, for ops
// that go part by part: another stack's own parts when it stacks along the
// same dim (no copy, whatever their shapes), otherwise other.unbind().
// ValueError naming `op` when the counts differ.
std::vector<TensorDict> parts_for_members(const StackedParts& parts, const TensorDict& other, const char* op);

}  // namespace tensordict::detail
