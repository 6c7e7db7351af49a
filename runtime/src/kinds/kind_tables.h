// Each kind's KindOps table (core/kind_ops.h), defined in the kind's folder.
#pragma once

#include "core/kind_ops.h"

namespace tensordict::detail {

extern const KindOps kDenseOps;       // kinds/dense/dense_ops.cpp
extern const KindOps kLazyStackOps;   // kinds/lazy/lazy_ops.cpp
extern const KindOps kSubViewOps;     // kinds/sub/sub_ops.cpp
extern const KindOps kPersistentOps;  // kinds/persistent/h5_ops.cpp

}  // namespace tensordict::detail
