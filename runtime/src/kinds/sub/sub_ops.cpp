// A sub-view's KindOps (core/kind_ops.h).
#include "kinds/kind_tables.h"

namespace tensordict::detail {

const KindOps kSubViewOps{
    .memmap_in_place_refusal = "memmap_: Converting a sub-tensordict values to memmap cannot be done.",
};

}  // namespace tensordict::detail
