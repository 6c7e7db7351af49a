// An h5 file's KindOps (core/kind_ops.h).
#include "kinds/kind_tables.h"

namespace tensordict::detail {

const KindOps kPersistentOps{
    .nests_in_memory = false,
    .compact_from_metadata = true,
};

}  // namespace tensordict::detail
