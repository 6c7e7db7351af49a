// A lazy stack's update, member by member with the other's parts along its
// stack dim, which needs no stacking of either side (tensordict's _lazy.py
// _update_entries): KindOps::update, update_batch_size, update_into.
#include <vector>

#include "kinds/lazy/lazy_impl.h"
#include "tensordict/errors.h"
#include "tensordict/lazy.h"

namespace tensordict::detail {

namespace {

// The members of `other` when it is a lazy stack along `lazy`'s stack dim
// (tensordict pairs the members then, whatever their count); nullopt else.
std::optional<std::vector<TensorDict>> same_stack_sources(const Stacked& lazy, const TensorDict& other) {
  auto theirs = as_stacked(*other.impl());
  if (!theirs || theirs->stack_dim() != lazy.stack_dim()) return std::nullopt;
  return theirs->members();
}

}  // namespace

void lazy_update(const TensorDict& td, const TensorDict& other) {
  const Stacked& lazy = lazy_of(td);
  const auto parts = same_stack_sources(lazy, other);
  if (!parts) {
    const auto cut = parts_for_members(lazy, other, "update");
    for (std::size_t i = 0; i < cut.size(); ++i) TensorDict(lazy.members()[i]).update(cut[i]);
    return;
  }
  // tensordict leaves out the extra members of a longer source (_lazy.py
  // _update_entries).
  if (parts->size() < lazy.members().size()) {
    throw ValueError("update: cannot update stacked tensordicts with different shapes when update_batch_size=False");
  }
  for (std::size_t i = 0; i < lazy.members().size(); ++i) TensorDict(lazy.members()[i]).update((*parts)[i]);
}

// A stack cannot be given a batch size, its members can. The other's parts
// along the stack dim are its members when it is a lazy stack along the
// same dim, else its slices (tensordict's to_lazystack(stack_dim)), whatever
// its kind: as many parts update the members pairwise, each member taking
// its part's batch size; fewer replace the members; more update them
// pairwise, and copies of the extra ones are appended, so members of any
// shape come in.
void lazy_update_batch_size(const TensorDict& td, const TensorDict& other, const UpdateOptions& options,
                            c10::function_ref<void()> check_unlocked, c10::function_ref<void(bool refuse_options)> check_rebatch) {
  LazyStackedImpl& lazy = mutable_lazy_of(td);
  auto sources = same_stack_sources(lazy, other);
  if (!sources) sources = other.unbind(lazy.stack_dim());
  check_unlocked();  // tensordict's lock error comes first
  const std::size_t n = lazy.members().size();
  if (sources->size() == n) {
    // Each member checks its own update (keys, inplace, keys_to_update) as
    // a tensordict of that batch size does; the stack then reads its batch
    // size from the members again.
    for (std::size_t i = 0; i < n; ++i) TensorDict(lazy.members()[i]).update((*sources)[i], options);
    lazy.reset_members(lazy.members());
    return;
  }
  check_rebatch(sources->size() > n);
  if (sources->size() < n) {
    lazy.reset_members(*sources);
    return;
  }
  for (std::size_t i = 0; i < n; ++i) TensorDict(lazy.members()[i]).update((*sources)[i], options);
  std::vector<TensorDict> all = lazy.members();
  for (std::size_t i = n; i < sources->size(); ++i) all.push_back((*sources)[i].clone({.recurse = false}));
  lazy.reset_members(std::move(all));
}

// A level of another kind updated by a lazy stack becomes a lazy stack of its
// slices along the stack dim, updated member by member (tensordict's
// _update_entries): the source's members may differ in shape.
TensorDict lazy_update_into(const TensorDict& dest, const TensorDict& source) {
  const int64_t dim = lazy_of(source).stack_dim();
  std::vector<TensorDict> slices;
  for (auto& slice : dest.unbind(dim)) slices.emplace_back(std::move(slice));
  TensorDict restacked = lazy_stack(slices, dim);
  restacked.update(source);
  return restacked;
}

}  // namespace tensordict::detail
