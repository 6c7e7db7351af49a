// KindOps: what a kind does differently in the ops written once outside its
// folder (private). One table per kind, defined in the kind's folder
// (kinds/<kind>/<kind>_ops.cpp), found by the kind's tag (kinds/kind_ops.cpp).
// An entry left null (or false) means the kind does what the generic op does.
// The table is private, unlike TensorDictImpl's virtual hooks (impl.h), so a
// new entry recompiles the runtime only; kinds/README.md lists the entries.
#pragma once

#include <ATen/core/Tensor.h>
#include <c10/util/FunctionRef.h>

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "tensordict/base.h"
#include "tensordict/detail/impl.h"

namespace tensordict::detail {

// A tensordict stacked from parts along one of its batch dims (a lazy stack
// of its members): tensordict defines many ops on the parts, which may differ
// in keys and shapes, so that the stacked value need not exist. The generic
// ops run part by part through this; the kind implements it (kinds/lazy/).
class Stacked {
 public:
  virtual const std::vector<TensorDict>& members() const = 0;
  virtual int64_t stack_dim() const = 0;
  // A stack of the same kind of `members` along `stack_dim`, keeping this
  // one's stack dim name and device.
  virtual std::shared_ptr<TensorDictImpl> restacked(std::vector<TensorDict> members, int64_t stack_dim) const = 0;
  // A new stack of `members` along `stack_dim` with this one's stack dim
  // name (nothing else carried over: no device, no batch for no members).
  virtual std::shared_ptr<TensorDictImpl> named_like(std::vector<TensorDict> members, int64_t stack_dim) const = 0;
  // Replaces the members (update with update_batch_size); they must share a
  // batch size, which becomes the stack's.
  virtual void reset_members(std::vector<TensorDict> members) = 0;
  // fn(member i, i) for every member, restacked along this stack's dim.
  std::shared_ptr<TensorDictImpl> map_stacked(c10::function_ref<TensorDict(const TensorDict&, std::size_t)> fn) const;
  // Whether the entries every member has stack: their tensors agree in shape
  // at every depth (tensordict's _entry_shapes finds no None).
  virtual bool entries_stack() const = 0;
  // tensordict's _setitem_index with a tensordict: `value` written into the
  // members `index` selects (a key it brings goes into those only); false
  // when the index cannot be split per member.
  virtual bool put_members(at::ArrayRef<TensorIndex> index, const TensorDict& value) const = 0;

 protected:
  ~Stacked() = default;
};

struct KindOps;
// Each kind's table, by its tag (kinds/kind_ops.cpp).
extern const KindOps* const kKindOps[];

struct KindOps {
  // The tensordict as the parts it is stacked from; null: it stores its
  // entries.
  const Stacked* (*stacked)(const TensorDictImpl& impl) = nullptr;

  // cat() of `tds` when one of them is of this kind (a lazy stack: a lazy
  // stack of every member, or of the members concatenated pairwise;
  // tensordict's _lazy_cat); null: the generic cat.
  TensorDict (*cat)(const std::vector<TensorDict>& tds, int64_t dim) = nullptr;
  // stack() of levels the first of which is of this kind (a lazy stack: lazy
  // stacks of as many members along the same dim give a lazy stack of the
  // members stacked pairwise); nullopt, or null: the generic stack.
  std::optional<TensorDict> (*stack)(const std::vector<TensorDict>& tds, int64_t dim) = nullptr;
  // to() keeps its lock (tensordict keeps a TensorDict's and a lazy stack's;
  // a sub-view's or an h5 file's dense copy comes unlocked).
  bool to_keeps_lock = false;
  // Its entries, batch size and dim names are its own (a dense tensordict),
  // not derived from members, a source or a file: memmap_ works on it in
  // place, a memory-mapped level keeps its dim names and a tensorclass's
  // fields in it, TensorDictParams wraps it.
  bool owns_entries = false;
  // memmap_()'s refusal, with tensordict's message, when the kind's leaves
  // live elsewhere (a sub-view's in its source, an h5 file's in the file);
  // null: memmap_ proceeds.
  const char* memmap_in_place_refusal = nullptr;
  // Its nested tensordicts are objects in memory that could hold their parent
  // (false: an h5 file's groups are read anew on each access; the cycle check
  // of a nested set() has nothing to walk).
  bool nests_in_memory = true;
  // The compact repr describes its entries from metadata alone: a tensor
  // entry from tensor_meta() (an h5 dataset's shape and dtype), a non-tensor
  // one as NonTensorData, its value unread (tensordict's _compact_leaf).
  bool compact_from_metadata = false;
  // The compact repr names its class on a nested level (tensordict prints it
  // for every class but TensorDict).
  bool compact_names_class = true;

  // ---- op families run part by part (a lazy stack: member by member) ----
  // tensordict defines these ops on a lazy stack's members, which may differ
  // in keys and shapes, so that the stacked value need not exist; null: the
  // generic op, over the tensordict's own entries.

  // densify() (tensordict's _lazy.py densify: the members' tensors at a key
  // stacked, or as a nested tensor when their shapes differ).
  TensorDict (*densify)(const TensorDict& td) = nullptr;
  // maybe_dense_stack() of levels the first of which is of this kind (lazy
  // stacks of as many members along the same dim: stacked member by member,
  // the result lazy); nullopt, or null: the generic one.
  std::optional<TensorDict> (*maybe_dense_stack)(const std::vector<TensorDict>& tds, int64_t dim) = nullptr;
  // dense_stack_tds() of one tensordict (a lazy stack: maybe_dense_stack of
  // its members); null: the tensordict itself.
  TensorDict (*dense_stack_tds)(const TensorDict& td) = nullptr;

  // Pointwise math part by part (tensordict's _fast_apply; the result keeps
  // the kind): fn(part, share) for each part, `share` its part of `operand`
  // (a tensordict cut along the stack dim, a tensor shaped like the batch at
  // the part's place, a scalar whole; null when `operand` is), the results
  // restacked.
  TensorDict (*pointwise)(const TensorDict& td, const Operand* operand, const char* op,
                          c10::function_ref<TensorDict(const TensorDict& part, const Operand* share)> fn) = nullptr;
  // The same in place: fn(part, share) on each part, whose entries are the
  // tensordict's (the in-place math; update_, part by part).
  void (*pointwise_)(const TensorDict& td, const Operand* operand, const char* op,
                     c10::function_ref<void(TensorDict& part, const Operand* share)> fn) = nullptr;
  // softmax() over batch dim `dim` (tensordict's LazyStackedTensorDict.
  // _softmax): across another dim, each member along its place of that dim;
  // along the stack dim of members whose entries differ in shape,
  // `leafwise(td)`, the leaves' softmax part by part; nullopt (the members'
  // entries stack), or null: the generic softmax.
  std::optional<TensorDict> (*softmax)(const TensorDict& td, int64_t dim, std::optional<at::ScalarType> dtype,
                                       c10::function_ref<TensorDict(const TensorDict&)> leafwise) = nullptr;
  // where() with a tensor condition, masked_fill(), masked_fill_(): each
  // part with its part of the batch-shaped condition or mask (and of a
  // tensordict operand).
  TensorDict (*where)(const TensorDict& td, const at::Tensor& condition, const Operand& other,
                      const MissingKeys& missing) = nullptr;
  TensorDict (*masked_fill)(const TensorDict& td, const at::Tensor& mask, const at::Scalar& value) = nullptr;
  void (*masked_fill_)(const TensorDict& td, const at::Tensor& mask, const at::Scalar& value) = nullptr;

  // update() (tensordict's _lazy.py _update_entries): each part updated with
  // the other's part along the stack dim (its own members when it stacks
  // along the same dim, else its slices); the handle has checked the lock.
  void (*update)(const TensorDict& td, const TensorDict& other) = nullptr;
  // update() with update_batch_size from another batch size: the parts take
  // the other's parts' batch sizes (fewer replace them, more are appended).
  // check_unlocked(): the handle's lock check, made after the other is cut;
  // check_rebatch(refuse_options): the handle's checks of a change of batch
  // size (every key of `td` in the other; with refuse_options, no inplace
  // or keys_to_update: a lazy stack refuses them when it takes more members).
  void (*update_batch_size)(const TensorDict& td, const TensorDict& other, const UpdateOptions& options,
                            c10::function_ref<void()> check_unlocked,
                            c10::function_ref<void(bool refuse_options)> check_rebatch) = nullptr;
  // What a nested level `dest` of a kind without its own update becomes when
  // a tensordict of this kind updates it (a lazy stack: a lazy stack of
  // dest's slices along its stack dim, updated member by member, since the
  // members may differ in shape); null: dest is updated entry by entry.
  TensorDict (*update_into)(const TensorDict& dest, const TensorDict& source) = nullptr;

  // index_put_() of a tensordict `value` (tensordict's _setitem_index): written
  // into the parts `index` selects, each its part of the value (a key it
  // brings goes into those parts only); false when the index cannot be split
  // per part (the generic write then).
  bool (*index_put)(const TensorDict& td, at::ArrayRef<TensorIndex> index, const TensorDict& value) = nullptr;

  // to_dict() of a level: throws, with tensordict's message, when the dict
  // cannot hold it (a lazy stack: keys that only some members have).
  void (*check_to_dict)(const TensorDict& td) = nullptr;

  // memmap_refresh_() of a saved tensordict whose entries live in its parts,
  // each saved in its own directory (a lazy stack: each member refreshed);
  // null: the level read anew from its directory.
  void (*memmap_refresh)(const TensorDict& td) = nullptr;

  // repeat(): each part repeated along its own dims once, that one copy held
  // at each of its places (members of different shapes work).
  TensorDict (*repeat)(const TensorDict& td, at::IntArrayRef repeats) = nullptr;
  // repeat_interleave() along batch dim `dim` (`counts`: the checked counts,
  // on the CPU): along the stack dim each part repeated in place, along
  // another each part's rows.
  TensorDict (*repeat_interleave)(const TensorDict& td, const at::Tensor& repeats, const at::Tensor& counts,
                                  int64_t dim) = nullptr;
};

// The table of `impl`'s kind.
inline const KindOps& kind_ops(const TensorDictImpl& impl) { return *kKindOps[static_cast<std::size_t>(impl.kind())]; }

// `impl` as the parts it is stacked from (KindOps::stacked); null when it
// stores its entries.
inline const Stacked* as_stacked(const TensorDictImpl& impl) {
  const auto fn = kind_ops(impl).stacked;
  return fn ? fn(impl) : nullptr;
}

// `other` cut along the stack dim of `parts`, one piece per part, for ops
// that go part by part: another stack's own parts when it stacks along the
// same dim (no copy, whatever their shapes), otherwise other.unbind().
// ValueError naming `op` when the counts differ.
std::vector<TensorDict> parts_for_members(const Stacked& parts, const TensorDict& other, const char* op);

}  // namespace tensordict::detail
