// map_leaves: the one mechanism behind every leaf-wise op (private): it builds
// dense tensordicts (kinds/dense), which every kind's ops return where the
// result is dense.
//
// Indexing, shape ops, device and dtype moves, clone, unbind and split all
// build tensordicts whose leaves are computed from the matching leaves of a
// source and whose batch size changes in a known way. This walks the source
// once, calls `fn` once per leaf (it may produce several outputs: unbind,
// split), and assembles `pieces` dense tensordicts. Nested levels keep the
// batch dims they have beyond the source's. When the source is dense, the
// results share its key table (no key is copied).
#pragma once

#include <c10/util/FunctionRef.h>

#include <memory>
#include <vector>

#include "core/entry_writes.h"
#include "kinds/dense/dense_impl.h"
#include "tensordict/detail/impl.h"
#include "tensordict/non_tensor_ops.h"

namespace tensordict::detail {

struct PieceMeta {
  std::vector<int64_t> batch_size;
  Names names;  // empty: none
  // Nested levels keep their batch dims beyond the source's; false when the
  // op removes every dim of every leaf (full reductions).
  bool keep_nested_dims = true;
  // ... as dims of size 1: the op keeps every dim of every leaf as size 1
  // (full reductions with keepdim).
  bool nested_dims_as_ones = false;
};

// fn(leaf, out) writes out[0 .. metas.size()).
using LeafFn = c10::function_ref<void(const at::Tensor& leaf, at::Tensor* out)>;

// What an op does to non-tensor data: a batch op (indexing, shape ops,
// unbind, split) moves a stack's elements like a tensor of the batch shape,
// so `fn` runs on the stack's id tensor; a value op (dtype, device, clone)
// leaves non-tensor data as it is.
// A fold (reductions, padding) mixes or invents batch elements: it keeps
// single non-tensor values and refuses stacks, whose elements it cannot carry.
// A leafwise op is a value op whose fn treats every element alone (casts,
// copies, pointwise math, a user's apply, which tensordict runs per member):
// a nested lazy stack then runs it member by member even when its stack dim
// lies inside the source's batch dims, so members of different shapes stay
// lazy.
enum class OpKind { Batch, Value, Leafwise, Fold };

// Whether every result is checked to start with its piece's batch size
// (Results: code after map_leaves slices leaf sizes by the batch dims, and a
// function such as a user's apply can return anything), or the op's exact
// plan guarantees it (Planned: an index, a reshape/permute/squeeze/unbind
// plan applied to leaves that start with the source's batch size, checked
// where they entered; a function that keeps every leaf's shape: a cast, a
// copy, a device move), which saves the check on the hottest ops.
enum class ShapeCheck { Results, Planned };

// The op itself run on a nested lazy stack whose stack dim lies inside the
// source's batch dims, one result per piece: for the ops whose leaf function
// depends on where the batch dims are (indexing, shape ops, batch-shaped
// masks and operands). The nested stack then runs it member by member, as
// tensordict does, so its members may differ in shape. Without one, such a
// stack is stacked (its members must then agree in shape).
using NestedOp = c10::function_ref<std::vector<TensorDict>(const TensorDict& nested)>;

std::vector<std::shared_ptr<DenseImpl>> map_leaves(const TensorDictImpl& source, const std::vector<PieceMeta>& metas,
                                                   std::optional<at::Device> device, OpKind kind, LeafFn fn, const char* op,
                                                   ShapeCheck check = ShapeCheck::Results, const NestedOp* nested = nullptr);

// The single-output case.
std::shared_ptr<DenseImpl> map_leaves(const TensorDictImpl& source, PieceMeta meta, std::optional<at::Device> device,
                                      OpKind kind, c10::function_ref<at::Tensor(const at::Tensor&)> fn, const char* op,
                                      ShapeCheck check = ShapeCheck::Results, const NestedOp* nested = nullptr);

// The single-output case for a function that needs the number of batch dims
// of the level holding each leaf (reductions over each leaf's feature dims).
std::shared_ptr<DenseImpl> map_leaves_by_level(const TensorDictImpl& source, PieceMeta meta, std::optional<at::Device> device,
                                               OpKind kind, c10::function_ref<at::Tensor(const at::Tensor&, int64_t)> fn,
                                               const char* op);



// `out`, a conversion of `source` (to a dtype or device), locked when
// `source` is a locked dense tensordict or lazy stack: tensordict keeps their
// lock through to(); a sub-view's or an h5 file's dense copy comes unlocked,
// as in tensordict.
TensorDict with_lock_kept(const TensorDict& source, TensorDict out);

// Calls fn on every tensor leaf at any depth; errors name the key.
void for_each_tensor(const TensorDictImpl& source, c10::function_ref<void(const at::Tensor&)> fn, const char* op);
// The same, with every lazy stack at any depth walked member by member: its
// members' own tensors, never stacked (they may differ in shape), for reads
// that need no stacked value (all, any: tensordict's _reduction_parts).
void for_each_member_tensor(const TensorDictImpl& source, c10::function_ref<void(const at::Tensor&)> fn, const char* op);



}  // namespace tensordict::detail
