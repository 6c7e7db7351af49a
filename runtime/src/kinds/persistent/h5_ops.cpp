// An h5 file's KindOps (core/kind_ops.h).
#include "kinds/kind_tables.h"

namespace tensordict::detail {

const KindOps kPersistentOps{
    .memmap_in_place_refusal = "memmap_: Cannot build a memmap TensorDict in-place from a PersistentTensorDict.",
    .nests_in_memory = false,
    .compact_from_metadata = true,
};

}  // namespace tensordict::detail
