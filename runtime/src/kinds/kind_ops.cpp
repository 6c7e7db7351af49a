// The table of each kind (core/kind_ops.h), by its tag: the one place the
// kinds' tables meet.
#include "core/kind_ops.h"

#include "kinds/kind_tables.h"

namespace tensordict::detail {

const KindOps& kind_ops(const TensorDictImpl& impl) {
  switch (impl.kind()) {
    case Kind::Dense: return kDenseOps;
    case Kind::LazyStack: return kLazyStackOps;
    case Kind::SubView: return kSubViewOps;
    case Kind::Persistent: return kPersistentOps;
  }
  return kDenseOps;  // not reached: every Kind is listed
}

}  // namespace tensordict::detail
