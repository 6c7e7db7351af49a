// Casts to the final storage classes (private).
#pragma once

#include <type_traits>
#include <typeinfo>

#include "tensordict/base.h"

namespace tensordict::detail {

// `impl` as the final class `Final`, or null for another kind: an exact type
// test. GCC before 14 compiles dynamic_cast to a final class as a call that
// walks the class hierarchy (and may compare type names), which the per-level
// paths (map_leaves, making a handle of a result) paid on every nested level
// of every op.
template <class Final>
const Final* exact_cast(const TensorDictImpl* impl) {
  static_assert(std::is_final_v<Final>, "an exact type test finds no subclass");
  return impl && typeid(*impl) == typeid(Final) ? static_cast<const Final*>(impl) : nullptr;
}

}  // namespace tensordict::detail
