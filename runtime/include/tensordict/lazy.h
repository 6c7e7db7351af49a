// LazyStackedTensorDict: a stack of tensordicts that is never copied.
//
// The members keep their own storage; keys present in every member are the
// stack's keys (the others are reported as exclusive), get() stacks on
// demand, set() splits along the stack dim into the members, and indexing
// along the stack dim selects members (an int gives the member itself).
// Members need as many batch dims; their keys, feature shapes and batch
// sizes may differ (the batch size reads -1 where members differ, as in
// tensordict 0.15).
//
// Laziness is kept whatever handle holds the stack: index, unbind, clone,
// to, apply, detach and memmap of a lazy stack give lazy stacks (or members);
// pointwise math, comparisons, where, masked_fill and in-place ops run member
// by member (tensordict's _fast_apply); contiguous() and to_tensordict()
// stack them densely.
#pragma once

#include <optional>
#include <vector>

#include "tensordict/base.h"

namespace tensordict {

class LazyStackedTensorDict : public TensorDict {
 public:
  // With no tensordicts, an empty stack (batch size `batch_size` with 0
  // inserted at `stack_dim`, on `device`) that append() fills; with some,
  // `batch_size`, if given, must be theirs.
  LazyStackedTensorDict(std::vector<TensorDict> tensordicts = {}, int64_t stack_dim = 0,
                        std::optional<std::vector<int64_t>> batch_size = std::nullopt,
                        std::optional<at::Device> device = std::nullopt);
  // Views `td` as a lazy stack (as td.as<LazyStackedTensorDict>()); TypeError
  // naming both kinds if it is another kind.
  explicit LazyStackedTensorDict(const TensorDict& td);

  int64_t stack_dim() const;
  const std::vector<TensorDict>& tensordicts() const;
  // Per member, its keys (at the first level) that not every member has.
  std::vector<std::vector<std::string>> exclusive_keys() const;

  using TensorDict::contains;
  // Whether `td` is one of the members (the same object, as tensordict's `in`).
  bool contains(const TensorDict& td) const;

  // The members' tensors at `key`, unstacked (their shapes may differ).
  std::vector<at::Tensor> get_list(const NestedKey& key) const;
  // The members' tensors padded with `value` to the largest shape, stacked.
  at::Tensor get_padded(const NestedKey& key, const at::Scalar& value = 0) const;

  void append(const TensorDict& td);
  void insert(int64_t position, const TensorDict& td);

  // ---- persistence (FORMATS.md: meta.json with _type and stack_dim, members
  // in sub-directories 0/, 1/, ...): memmap(), memmap_like() and memmap_()
  // on TensorDict write this layout.
  // Loads a lazy-stack directory: its members memory-mapped, whatever their keys and shapes.
  static LazyStackedTensorDict load_memmap(const std::string& prefix, std::optional<at::Device> device = std::nullopt);
};

// tensordict's lazy_stack; RuntimeError for no tensordict.
LazyStackedTensorDict lazy_stack(const std::vector<TensorDict>& tds, int64_t dim = 0);
// tensordict's maybe_dense_stack, level by level: a level whose members have
// the same keys and tensor shapes is stacked densely (its nested tensordicts
// stacked the same way, lazy stacks of as many members member by member),
// any other level lazily.
TensorDict maybe_dense_stack(const std::vector<TensorDict>& tds, int64_t dim = 0);
// tensordict's dense_stack_tds: maybe_dense_stack of a lazy stack's members
// (along its stack dim) or of `tds`; another kind is returned as it is.
TensorDict dense_stack_tds(const TensorDict& td);
TensorDict dense_stack_tds(const std::vector<TensorDict>& tds, int64_t dim);

namespace detail {
// tensordict's is_shared() of a lazy stack whose `shared` of `members`
// members say they are shared: all of them (and at least one), or none;
// RuntimeError with tensordict's message when only some are. Shared by the
// lazy stacks of both layers.
bool members_all_shared(std::size_t shared, std::size_t members);
}  // namespace detail

}  // namespace tensordict
