// A lazy stack's KindOps (core/kind_ops.h): the ops tensordict defines on a
// lazy stack's members.
#include "kinds/kind_tables.h"
#include "kinds/lazy/lazy_impl.h"

namespace tensordict::detail {

namespace {

std::optional<StackedParts> lazy_parts(const TensorDictImpl& impl) {
  const auto& lazy = static_cast<const LazyStackedImpl&>(impl);
  return StackedParts{lazy.members(), lazy.stack_dim()};
}

}  // namespace

const KindOps kLazyStackOps{
    .stacked_parts = lazy_parts,
};

}  // namespace tensordict::detail
