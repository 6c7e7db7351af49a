// TensorDictImpl: the interface a tensordict kind implements (dense,
// lazy stack, sub-view, h5 file; runtime/src/kinds/). Users hold a TensorDict
// (base.h); this is for whoever adds a kind. Every user-facing op is written
// once against these hooks, so kinds differ only here.
#pragma once

#include <ATen/core/Tensor.h>
#include <c10/core/Device.h>
#include <c10/util/FunctionRef.h>

#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "tensordict/batch_index.h"
#include "tensordict/kind.h"
#include "tensordict/value.h"

namespace tensordict {

// What repr needs of a tensor entry, without building it: a lazy stack whose
// members differ reports -1 in the dims where they do.
struct TensorMeta {
  std::vector<int64_t> shape;
  at::ScalarType dtype;
  at::Device device;
  bool is_shared;
  bool unbatched = false;  // an UnbatchedTensor: `shape` is the payload's
};

// A batch-shape op as TensorDictImpl::reshape_parts receives it, its
// arguments checked and wrapped.
struct BatchShapeOp {
  // Which op it is.
  enum class Op : uint8_t { Expand, Permute, Squeeze, Unsqueeze, Reshape };
  Op op;
  // Expand, Reshape: the new batch size; Permute: the order of the batch
  // dims; Squeeze (a dim of size 1), Unsqueeze: the one dim. A view of the
  // caller's plan (nothing is allocated for a dense tensordict).
  at::IntArrayRef dims;
};

// The storage a tensordict kind implements. No validation happens here: the
// handle validates, then calls these.
class TensorDictImpl : public std::enable_shared_from_this<TensorDictImpl> {
 public:
  virtual ~TensorDictImpl() = default;

  // Which kind this is; control flow that must tell kinds apart asks this
  // (the cross-kind switches are listed in runtime/src/kinds/README.md).
  virtual Kind kind() const = 0;
  // The class name tensordict prints for it ("TensorDict").
  std::string_view type_name() const { return tensordict::type_name(kind()); }
  virtual at::IntArrayRef batch_size() const = 0;
  virtual std::optional<at::Device> device() const = 0;
  virtual const Names& names() const = 0;
  virtual void set_meta(std::vector<int64_t> batch_size, std::optional<at::Device> device, Names names) = 0;

  // This level's entries, in insertion order.
  virtual std::size_t num_keys() const = 0;
  // Keys and kinds only: no value is built (a lazy stack stacks nothing).
  virtual void for_each_key(c10::function_ref<void(const std::string&, EntryKind)> fn) const;
  // The values (a lazy stack builds each one, stacking its members').
  virtual void for_each(c10::function_ref<void(const std::string&, const Value&)> fn) const = 0;
  virtual std::optional<Value> find(const std::string& key) const = 0;
  // Whether `key` is an entry, without building its value (an h5 group reads
  // no dataset to answer).
  virtual bool has_key(const std::string& key) const { return find(key).has_value(); }
  virtual TensorMeta tensor_meta(const std::string& key) const;
  // The tensordicts this one is made of, for lock propagation: nested
  // tensordicts (a lazy stack: its members).
  virtual void for_each_child(c10::function_ref<void(const TensorDict&)> fn) const;

  // Writes `value` into the existing tensor entry `key` in place (a sub-view
  // writes into its source, a lazy stack into its members).
  virtual void assign(const std::string& key, const at::Tensor& value);
  // True when the tensors find() returns share storage with the entries, so
  // writing into them is writing into the tensordict; false for kinds that
  // build them (a lazy stack's stacked tensors): in-place ops then compute
  // the result and assign() it.
  virtual bool entries_alias_storage() const { return true; }
  // Adds `key` at the end, or replaces its value in place.
  virtual void insert(const std::string& key, Value value) = 0;
  virtual bool erase(const std::string& key) = 0;
  // Renames; `to` must not exist. The entry goes last where the kind keeps
  // an order (tensordict: a new key is set, then the old one deleted).
  virtual void rename(const std::string& from, const std::string& to) = 0;

  // The tensordict whose lock this one shares, or null when it has its own:
  // a sub-view is locked exactly when its source is, and cannot be locked or
  // unlocked itself (tensordict's rule: that would lock the whole source).
  virtual const TensorDictImpl* lock_source() const { return nullptr; }
  // Lock state (see TensorDict::lock_). Not virtual: every set() asks, and a
  // dense level answers from its own flag inline. A kind that derives it
  // (from a lock source; a lazy stack: locked when all its members are,
  // tensordict's rule) sets derives_lock_ and answers in derived_lock().
  bool is_locked() const { return derives_lock_ ? derived_lock() : locked_; }

  // ---- shared memory (TensorDict::share_memory_, is_shared) -----------------------
  // Throws tensordict's error when this kind's leaves cannot move into shared
  // memory (a sub-view's live in its source, an h5 file's in the file); the
  // default accepts. share_memory_() asks every level before moving anything.
  virtual void check_share_memory() const {}
  // tensordict's `_is_shared`: share_memory_() marked this tensordict (or an
  // op that views a marked one kept the mark); unlock_() clears it. A kind
  // may derive it: a sub-view has its source's, a lazy stack has it when it
  // has members and they all do.
  virtual bool marked_shared() const { return shared_; }
  void set_marked_shared(bool shared) { shared_ = shared; }
  // tensordict's is_shared(): marked shared, or on a CUDA device (whose
  // tensors are shared already). A lazy stack asks its members, which must
  // agree.
  virtual bool is_shared() const;

  // The flat uint8 storage that consolidate() copied every tensor leaf into
  // (the leaves are views of it); undefined when not consolidated. Only a
  // claim: TensorDict::is_consolidated() checks it against the leaves.
  const at::Tensor& consolidated_storage() const { return consolidated_storage_; }
  void set_consolidated_storage(at::Tensor storage) { consolidated_storage_ = std::move(storage); }

  // Where memmap() wrote this tensordict or load_memmap() read it ("" for
  // anonymous shared memory: memmap_() without a prefix); nullopt when it is
  // not memory-mapped (is_memmap, saved_path).
  const std::optional<std::string>& memmap_dir() const { return memmap_dir_; }
  void set_memmap_dir(std::optional<std::string> dir) { memmap_dir_ = std::move(dir); }

  // ---- operations whose result keeps the kind ------------------------------------
  // TensorDict validates, then calls these. The defaults build a dense
  // result leaf by leaf, which is right for a dense tensordict and a sub-view;
  // a lazy stack keeps its members (kinds/lazy/), an h5 file reads and writes
  // only the hyperslab an index selects (kinds/persistent/).
  virtual TensorDict index(at::ArrayRef<TensorIndex> index) const;
  virtual std::vector<TensorDict> unbind(int64_t dim) const;
  // A value op (clone, to, apply, detach) on a kind made of other
  // tensordicts: the same kind rebuilt from fn(part) (a lazy stack: of its
  // members); null for the kinds whose result is dense.
  virtual std::shared_ptr<TensorDictImpl> map_parts(c10::function_ref<TensorDict(const TensorDict&)> fn) const {
    return nullptr;
  }
  // A batch-shape op run part by part (a lazy stack: member by member, lazy
  // where tensordict's stays lazy); nullopt for the kinds whose result is
  // dense. The handle has checked the op.
  virtual std::optional<TensorDict> reshape_parts(const BatchShapeOp& op) const;
  virtual std::optional<std::vector<TensorDict>> split_parts(at::IntArrayRef sizes, int64_t dim) const;
  // The kind of entry `key`, nullopt when there is none; builds no value (an
  // h5 group and a lazy stack answer from their metadata).
  virtual std::optional<EntryKind> entry_kind(const std::string& key) const;
  // The tensor entry `key` at `index` (as written; `resolved` is the same
  // index resolved against the caller's batch size, which this level's
  // batch size starts with).
  virtual at::Tensor read_at(const std::string& key, const BatchIndex& resolved, at::ArrayRef<TensorIndex> index) const;
  // Writes `value` into the tensor entry `key` at `index`, in place.
  virtual void assign_at(const std::string& key, const BatchIndex& resolved, at::ArrayRef<TensorIndex> index,
                         const at::Tensor& value);

 protected:
  // Whether lock_() was called on this tensordict itself (or a locked parent
  // reached it), whatever the kind derives.
  bool own_lock() const { return locked_; }
  // is_locked() of a kind that set derives_lock_ (in its constructor); the
  // default: its lock source's. Out of line (core/lock.cpp), so that the
  // inline is_locked() stays a flag test where set() calls it.
  virtual bool derived_lock() const;
  bool derives_lock_ = false;

  // Deep trees are destroyed level after level, never recursively past a
  // bound (a tensordict nested 200,000 deep would exhaust the stack): the
  // destructor of a kind that holds tensordicts calls destroy_nested(), which
  // takes the levels below it out with release_children() (hands each
  // nested tensordict the kind holds to `take`, moving it out) and destroys
  // them: recursively near the top (no allocation), one by one below.
  virtual void release_children(c10::function_ref<void(std::shared_ptr<TensorDictImpl>)> take) {}
  void destroy_nested();

 private:
  friend class TensorDict;
  bool locked_ = false;
  bool shared_ = false;
  at::Tensor consolidated_storage_;
  std::optional<std::string> memmap_dir_;
  // The locked tensordicts that locked this one as their child: it stays
  // locked while any of them is (a tensordict may sit in two parents).
  std::vector<std::weak_ptr<const TensorDictImpl>> lock_parents_;
};

}  // namespace tensordict
