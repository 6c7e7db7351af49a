// A lazy stack's repeat and repeat_interleave, member by member (tensordict's
// rule, so members of different shapes work): KindOps::repeat,
// repeat_interleave.
#include <ATen/ATen.h>

#include <vector>

#include "kinds/lazy/lazy_impl.h"

namespace tensordict::detail {

// Each member repeated along its own dims once and that one copy held at
// each of its places, as tensordict does.
TensorDict lazy_repeat(const TensorDict& td, at::IntArrayRef repeats) {
  const Stacked& lazy = lazy_of(td);
  const int64_t sd = lazy.stack_dim();
  std::vector<int64_t> member_counts = repeats.vec();
  member_counts.erase(member_counts.begin() + sd);
  std::vector<TensorDict> copies;
  for (const auto& m : lazy.members()) copies.push_back(m.repeat(member_counts));
  std::vector<TensorDict> members;
  for (int64_t r = 0; r < repeats[sd]; ++r) members.insert(members.end(), copies.begin(), copies.end());
  return TensorDict(lazy.restacked(std::move(members), sd));
}

// Along the stack dim, each member repeated in place (one copy, held at each
// of its places); along another dim, each member's rows.
TensorDict lazy_repeat_interleave(const TensorDict& td, const at::Tensor& repeats, const at::Tensor& counts, int64_t dim) {
  const Stacked& lazy = lazy_of(td);
  const int64_t sd = lazy.stack_dim();
  std::vector<TensorDict> members;
  for (std::size_t i = 0; i < lazy.members().size(); ++i) {
    const TensorDict& m = lazy.members()[i];
    if (dim != sd) {
      members.push_back(m.repeat_interleave(repeats, dim < sd ? dim : dim - 1));
      continue;
    }
    const int64_t times = counts.numel() == 1 ? counts.reshape({}).item<int64_t>() : counts[static_cast<int64_t>(i)].item<int64_t>();
    const TensorDict copy = m.clone();
    for (int64_t k = 0; k < times; ++k) members.push_back(copy);
  }
  return TensorDict(lazy.restacked(std::move(members), sd));
}

}  // namespace tensordict::detail
