// What tensordict does with an UnbatchedTensor met in several tensordicts at
// once (stack, cat, a lazy stack's entry) and where it cannot be stored
// (private).
#pragma once

#include <c10/util/Exception.h>

#include <fmt/format.h>

#include <vector>

#include "tensordict/errors.h"
#include "tensordict/key.h"
#include "tensordict/value.h"

namespace tensordict::detail {

// The first member's UnbatchedTensor stands for all of them, as the whole
// batch shares it; tensordict warns (UserWarning, here c10's warning
// handler) when another member's holds other data, which is then dropped.
inline const Value& first_unbatched(const std::vector<Value>& members) {
  const void* first = members.front().tensor().data_ptr();
  for (std::size_t i = 1; i < members.size(); ++i) {
    if (members[i].tensor().data_ptr() != first) {
      TORCH_WARN(
          "Stacking UnbatchedTensors with different data storage. Only the first element's data will be kept. "
          "UnbatchedTensor is shape-invariant; if you need different data per batch element, consider using a "
          "regular tensor.");
      break;
    }
  }
  return members.front();
}

// tensordict 0.15.3 refuses to memory-map or consolidate an UnbatchedTensor
// (NotImplementedError; its files would read back a plain tensor): the same
// message, naming the key.
[[noreturn]] inline void refuse_memmap_unbatched(const NestedKey& key) {
  throw NotImplementedError(fmt::format(
      "UnbatchedTensor entries cannot be memory-mapped yet, but {0} is one. Exclude it first, e.g. with td.exclude({0}).",
      key.repr()));
}
[[noreturn]] inline void refuse_consolidate_unbatched(const NestedKey& key) {
  throw NotImplementedError(
      fmt::format("UnbatchedTensor entries cannot be consolidated yet, but {} is one.", key.repr()));
}

}  // namespace tensordict::detail
