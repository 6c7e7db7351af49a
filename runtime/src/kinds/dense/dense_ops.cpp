// A dense tensordict's KindOps (core/kind_ops.h): the generic ops' own case.
#include "kinds/kind_tables.h"

namespace tensordict::detail {

const KindOps kDenseOps{
    .to_keeps_lock = true,
    .owns_entries = true,
    .compact_names_class = false,
};

}  // namespace tensordict::detail
