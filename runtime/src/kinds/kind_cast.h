// The one way the runtime tells kinds apart: the kind tag on the impl.
#pragma once

#include <type_traits>

#include "tensordict/detail/impl.h"

namespace tensordict::detail {

// `impl` as the storage class `KindImpl` (DenseImpl, LazyStackedImpl, ...),
// or null for another kind. Each storage class names its tag (kKind); the
// test is one virtual call, with no walk of the class hierarchy (GCC before
// 14 compiles dynamic_cast to a final class as one, which the per-level
// paths of every op paid).
template <class KindImpl>
const KindImpl* kind_cast(const TensorDictImpl* impl) {
  static_assert(std::is_final_v<KindImpl>, "a kind's storage class is final");
  return impl && impl->kind() == KindImpl::kKind ? static_cast<const KindImpl*>(impl) : nullptr;
}
template <class KindImpl>
KindImpl* kind_cast(TensorDictImpl* impl) {
  return const_cast<KindImpl*>(kind_cast<KindImpl>(static_cast<const TensorDictImpl*>(impl)));
}

}  // namespace tensordict::detail
