// The table of each kind (core/kind_ops.h), by its tag: the one place the
// kinds' tables meet.
#include "core/kind_ops.h"

#include "kinds/kind_tables.h"

namespace tensordict::detail {

// In the order of Kind's values.
const KindOps* const kKindOps[] = {&kDenseOps, &kLazyStackOps, &kSubViewOps, &kPersistentOps};
static_assert(static_cast<int>(Kind::Dense) == 0 && static_cast<int>(Kind::LazyStack) == 1 &&
              static_cast<int>(Kind::SubView) == 2 && static_cast<int>(Kind::Persistent) == 3);

}  // namespace tensordict::detail
