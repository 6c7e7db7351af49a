// The level of a tree that holds a key's last part (private).
#pragma once

#include <memory>

#include "tensordict/base.h"
#include "tensordict/detail/impl.h"

namespace tensordict::detail {

// The level holding the last part of `key`, or null when a part on the way
// is missing or not a tensordict. Nothing is looked up at the last level.
std::shared_ptr<TensorDictImpl> holding_level(const std::shared_ptr<TensorDictImpl>& top, const NestedKey& key);

}  // namespace tensordict::detail
