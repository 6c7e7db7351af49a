// share_memory_()'s mark carried over to views (private).
//
// tensordict marks the result of some ops on a tensordict in shared memory as
// shared too, and locks it: an index of ints, None, Ellipsis and slices from
// the start (_index_preserve_data_ptr), unbind, split (and chunk), unsqueeze,
// squeeze, view, permute, transpose (and movedim), narrow. Their leaves are
// views of the source's, so they are in shared memory as well.
#pragma once

#include <vector>

#include "tensordict/base.h"

namespace tensordict::detail {

// `result`, marked shared at every level and locked when `source` is marked
// shared (TensorDictImpl::marked_shared); else as it is.
TensorDict keep_shared_mark(const TensorDict& source, TensorDict result);
std::vector<TensorDict> keep_shared_mark(const TensorDict& source, std::vector<TensorDict> results);

}  // namespace tensordict::detail
