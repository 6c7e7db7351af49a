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
