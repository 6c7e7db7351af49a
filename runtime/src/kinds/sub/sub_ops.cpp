// A sub-view's KindOps (core/kind_ops.h).
#include "kinds/kind_tables.h"

namespace tensordict::detail {

const KindOps kSubViewOps{};

}  // namespace tensordict::detail
