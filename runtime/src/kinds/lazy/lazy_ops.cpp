// A lazy stack's KindOps (core/kind_ops.h): the ops tensordict defines on a
// lazy stack's members.
#include "kinds/kind_tables.h"
#include "kinds/lazy/lazy_impl.h"

namespace tensordict::detail {

namespace {

const Stacked* lazy_stacked(const TensorDictImpl& impl) { return &static_cast<const LazyStackedImpl&>(impl); }

}  // namespace

const KindOps kLazyStackOps{
    .stacked = lazy_stacked,
    .cat = lazy_cat,
    .stack = lazy_stack_of_stacks,
    .to_keeps_lock = true,
};

}  // namespace tensordict::detail
