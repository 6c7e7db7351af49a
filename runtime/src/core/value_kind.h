// An entry's kind, and how error messages name it (private).
#pragma once

#include "tensordict/base.h"

namespace tensordict::detail {

inline EntryKind entry_kind_of(const Value& v) {
  return v.is_tensor() ? EntryKind::Tensor : v.is_tensordict() ? EntryKind::TensorDict : EntryKind::NonTensor;
}

// "a tensor", "an UnbatchedTensor", "a tensordict" or "non-tensor data".
inline const char* kind_of(const Value& v) {
  return v.is_unbatched() ? "an UnbatchedTensor"
         : v.is_tensor()  ? "a tensor"
         : v.is_tensordict() ? "a tensordict"
                             : "non-tensor data";
}

}  // namespace tensordict::detail
