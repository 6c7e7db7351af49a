// A lazy stack's KindOps (core/kind_ops.h): the ops tensordict defines on a
// lazy stack's members, one file per op family (lazy_<family>.cpp).
#include "kinds/kind_tables.h"
#include "kinds/lazy/lazy_impl.h"

namespace tensordict::detail {

namespace {

const Stacked* lazy_stacked(const TensorDictImpl& impl) { return &static_cast<const LazyStackedImpl&>(impl); }

// memmap_refresh_: each member from its own directory.
void lazy_memmap_refresh(const TensorDict& td) {
  for (TensorDict member : lazy_of(td).members()) member.memmap_refresh_();
}

// index_put_ of a tensordict: into the members the index selects.
bool lazy_index_put(const TensorDict& td, at::ArrayRef<TensorIndex> index, const TensorDict& value) {
  return lazy_of(td).put_members(index, value);
}

}  // namespace

const KindOps kLazyStackOps{
    .stacked = lazy_stacked,
    .cat = lazy_cat,
    .stack = lazy_stack_of_stacks,
    .to_keeps_lock = true,
    .densify = lazy_densify,                        // lazy_densify.cpp
    .maybe_dense_stack = lazy_maybe_dense_stack,
    .dense_stack_tds = lazy_dense_stack_tds,
    .pointwise = lazy_pointwise,                    // lazy_math.cpp
    .pointwise_ = lazy_pointwise_,
    .softmax = lazy_softmax,
    .where = lazy_where,
    .masked_fill = lazy_masked_fill,
    .masked_fill_ = lazy_masked_fill_,
    .update = lazy_update,                          // lazy_update.cpp
    .update_batch_size = lazy_update_batch_size,
    .update_into = lazy_update_into,
    .index_put = lazy_index_put,
    .check_to_dict = lazy_check_to_dict,            // lazy_to_dict.cpp
    .memmap_refresh = lazy_memmap_refresh,
    .repeat = lazy_repeat,                          // lazy_repeat.cpp
    .repeat_interleave = lazy_repeat_interleave,
};

}  // namespace tensordict::detail
