// TensorDict: the user API, one handle for every kind of tensordict.
//
// A tensordict is a handle with reference semantics, like at::Tensor: copying a
// handle shares the entries; clone() copies them. The handle holds a
// TensorDictImpl (detail/impl.h, which this header does not include), the
// storage a kind implements (dense, lazy stack, sub-view, h5; kind.h). Every
// user-facing operation is written once against that interface; kinds differ
// only in their impl, so a result never depends on the handle's static type.
#pragma once

#include <ATen/core/Tensor.h>
#include <c10/core/Device.h>
#include <c10/core/Stream.h>
#include <c10/util/FunctionRef.h>

#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <tuple>
#include <type_traits>
#include <utility>
#include <variant>
#include <vector>

#include "tensordict/batch_index.h"
#include "tensordict/consolidate_options.h"
#include "tensordict/errors.h"
#include "tensordict/key.h"
#include "tensordict/kind.h"
#include "tensordict/persistence_options.h"
#include "tensordict/value.h"
#include "tensordict/detail/op_lists.h"
#include "tensordict/op_options.h"

#include <nlohmann/json_fwd.hpp>

namespace c10 {
template <class Key, class Value>
class Dict;
struct IValue;
}  // namespace c10

namespace tensordict {

namespace nn {
class ToModuleGuard;
struct ToModuleOptions;
}  // namespace nn

// tensordict's `default=` for an op between two tensordicts whose keys differ.
class MissingKeys {
 public:
  // A KeyError naming the first key found in one operand only (the default).
  static MissingKeys error() { return MissingKeys(Policy::Error, 0); }
  // Keys present in one operand only are left out of the result.
  static MissingKeys intersection() { return MissingKeys(Policy::Intersection, 0); }
  // A missing entry counts as a tensor full of `value`, shaped like the other.
  static MissingKeys fill(at::Scalar value) { return MissingKeys(Policy::Fill, value); }

  // What becomes of a key found in one operand only.
  enum class Policy { Error, Intersection, Fill };
  Policy policy() const { return policy_; }
  const at::Scalar& fill_value() const { return fill_; }

 private:
  MissingKeys(Policy policy, at::Scalar fill) : policy_(policy), fill_(fill) {}
  Policy policy_;
  at::Scalar fill_;
};

class Operand;

// tensordict's update() keywords (TensorDict::update(other, options)).
struct UpdateOptions {
  // Clone the values taken from the other tensordict.
  bool clone = false;
  // Write into existing tensor entries in place (new keys are still set).
  bool inplace = false;
  // Only these keys (nested keys reach into nested tensordicts); all when empty.
  std::optional<std::vector<NestedKey>> keys_to_update = std::nullopt;
  // Take the other tensordict's batch size (at every level it updates).
  bool update_batch_size = false;
};

// Reductions (see TensorDict::reduce).
enum class Reduction {
#define TENSORDICT_ENUM_VALUE(name) name,
  TENSORDICT_REDUCTIONS(TENSORDICT_ENUM_VALUE) std, var
#undef TENSORDICT_ENUM_VALUE
};

// The one handle users hold, whatever the kind. Each section below names the
// files (under runtime/src) that implement it. Methods follow tensordict's
// names and semantics; tensor-like ones follow libtorch's C++ spelling
// (index, index_put_, sizes, to, dim; in-place ops end in `_`). Every op
// returns a TensorDict that keeps the kind of its result (a lazy stack's
// clone() is a lazy stack), as every at::Tensor op returns an at::Tensor.
class TensorDict {
 public:
  using Entry = std::pair<NestedKey, Value>;

  // ---- construction (a dense tensordict; src/kinds/dense/dense.cpp, src/core/dict_convert.cpp, src/memmap/load.cpp)
  // An empty tensordict with an empty batch size and no device.
  TensorDict();
  // Entries are set in order with set()'s rules: every tensor must start with
  // `batch_size`; with a `device`, entries are moved there; `names` names the
  // batch dims.
  TensorDict(std::vector<Entry> entries, at::IntArrayRef batch_size = {},
             std::optional<at::Device> device = std::nullopt, Names names = {});
  // A handle on `impl`, of whatever kind (for kinds and the typed layer).
  explicit TensorDict(std::shared_ptr<TensorDictImpl> impl);

  // tensordict's from_dict: tensors, nested dicts (nested tensordicts) and
  // non-tensor values (strings, numbers, bools, None, lists). Without a
  // batch size the batch size is [] unless `auto_batch_size` or `batch_dims`
  // asks for the longest leading shape every entry shares (at most
  // `batch_dims` dims), as in tensordict.
  static TensorDict from_dict(const c10::Dict<std::string, c10::IValue>& dict, const FromDictOptions& options = {});
  // A tensordict of batch size [] with `value` (a 0-dim tensor of it) at
  // each key (tensordict's TensorDict.fromkeys).
  static TensorDict fromkeys(const std::vector<NestedKey>& keys, const at::Scalar& value = 0);
  // Loads a tree written by memmap()/memmap_() (or Python tensordict) at any
  // level; leaves map their files (no data is read). With a device, leaves are
  // copied there. The result has the kind the tree was written from.
  // `options.copy`: leaves read into memory, nothing mapped (LoadOptions).
  static TensorDict load_memmap(const std::string& prefix, std::optional<at::Device> device = std::nullopt,
                                const LoadOptions& options = {});
  static TensorDict load(const std::string& prefix, std::optional<at::Device> device = std::nullopt);
  // Reads a file written by consolidate({.filename = ...}) here or by Python
  // tensordict's consolidate(filename=...): a consolidated tensordict whose
  // leaves are views of one copy-on-write mapping of the file (in-place
  // writes stay in memory), with the batch sizes, names, nested levels, lazy
  // stacks and non-tensor data the file records; not locked unless the file
  // says so. A bad file throws RuntimeError naming it and what was expected
  // (src/storage/consolidated_file_read.cpp).
  // `options.copy`: the storage is read into memory, nothing mapped (LoadOptions).
  static TensorDict from_consolidated(const std::string& filename, const LoadOptions& options = {});

  // ---- kind (kind.h; the conversion: src/core/dict.cpp) ------------------------
  Kind kind() const;
  // The class name tensordict prints ("TensorDict", "LazyStackedTensorDict").
  std::string_view type_name() const { return tensordict::type_name(kind()); }
  // The one checked conversion to a kind's class, for its own methods
  // (LazyStackedTensorDict::stack_dim, PersistentTensorDict::close, ...): a
  // handle on the same tensordict; TypeError naming both kinds when this one
  // is of another kind. K's header must be included.
  template <class K>
  K as() const {
    return K(*this);
  }

  // ---- metadata (src/core/dict.cpp) -----------------------------------------
  at::IntArrayRef batch_size() const;
  at::IntArrayRef sizes() const { return batch_size(); }
  int64_t batch_dims() const { return static_cast<int64_t>(batch_size().size()); }
  int64_t dim() const { return batch_dims(); }
  // Sets the batch size after checking every entry against it.
  void set_batch_size(at::IntArrayRef batch_size);
  std::optional<at::Device> device() const;
  const Names& names() const;
  bool has_names() const;

  // ---- dim names (src/ops/names.cpp) ---------------------------------------------
  // Names the batch dims (nullopt: unnamed); nested tensordicts share the
  // names of the dims they have in common with this one.
  TensorDict& rename_(const Names& names);
  // Renames the dim called `old_name` (tensordict's rename_(old="new")).
  TensorDict& rename_(const std::string& old_name, const std::string& new_name);
  // The same, on a shallow copy.
  TensorDict rename(const Names& names) const;
  TensorDict rename(const std::string& old_name, const std::string& new_name) const;
  // tensordict's refine_names: unnamed dims take the given names, named dims
  // must already have them; one "..." entry stands for the dims not listed.
  TensorDict& refine_names(const Names& names);

  // tensordict's auto_batch_size_: the longest leading shape every entry
  // shares (at most `batch_dims` dims), applied level by level.
  TensorDict& auto_batch_size_(std::optional<int64_t> batch_dims = std::nullopt);

  // Number of elements of the batch (product of batch_size).
  int64_t numel() const;
  // tensordict's len(): the first batch dim, 0 for an empty batch size.
  int64_t len() const;
  // Number of keys at the first level (len() is the batch, not the keys).
  std::size_t num_keys() const;
  // True when no leaf (tensor or non-tensor data) exists at any depth.
  bool is_empty() const;

  // ---- locking (src/core/lock.cpp) ------------------------------------------------
  // A locked tensordict refuses set() (tensordict's set() never writes in
  // place, existing key or not), new keys, deletion and renaming; set_(),
  // update_() and indexed writes write in place. Locking reaches every nested
  // tensordict; one stays locked while any locked parent holds it. unlock_()
  // of a tensordict whose parent is locked throws. A sub-tensordict is locked
  // exactly when its source is: lock_() of an unlocked one and unlock_() of a
  // locked one throw. Shape ops (view, reshape, permute, transpose, squeeze,
  // unsqueeze, expand, flatten, unflatten) give locked results of a locked
  // tensordict; indexing and copies give unlocked ones.
  TensorDict& lock_();
  TensorDict& unlock_();
  bool is_locked() const;

  // tensordict refuses truth testing; so do we, at compile time.
  explicit operator bool() const = delete;

  // ---- dict API (src/core/dict.cpp, src/ops/key_ops.cpp, src/ops/new_like.cpp,
  // src/core/introspection.cpp) ------------------------------------------------
  bool contains(const NestedKey& key) const;
  // The tensor at `key`; KeyError naming the key path if absent,
  // TypeError if the entry is a tensordict or non-tensor data.
  at::Tensor get(const NestedKey& key) const;
  at::Tensor get(const NestedKey& key, const at::Tensor& default_value) const;
  // The nested tensordict at `key` (the same object: writes reach the parent).
  TensorDict get_td(const NestedKey& key) const;
  // Non-tensor data (tensordict's NonTensorData): the value, or for a stack
  // of differing values the nested lists over the batch (tolist()).
  Json get_non_tensor(const NestedKey& key) const;
  Json get_non_tensor(const NestedKey& key, const Json& default_value) const;
  TensorDict& set_non_tensor(const NestedKey& key, const Json& value);

  // The entry at `key`, whatever its kind; nullopt if absent.
  std::optional<Value> get_value(const NestedKey& key) const;
  // Whether `key` holds an UnbatchedTensor (tensordict:
  // isinstance(td.get(key), UnbatchedTensor)); KeyError if absent.
  bool is_unbatched(const NestedKey& key) const;

  // Sets `key`, creating intermediate levels. A tensor must start with the
  // batch size (an UnbatchedTensor may have any shape) and is moved to the
  // tensordict's device; a nested tensordict
  // whose batch size does not start with ours is given ours when its entries
  // allow it.
  TensorDict& set(const NestedKey& key, Value value);
  // tensordict's set(..., inplace=True): a tensor written into the existing
  // tensor entry at `key` in place (set_), else set() (the key is created).
  TensorDict& set(const NestedKey& key, Value value, const SetOptions& options);
  // Writes into the existing tensor at `key` (shapes must match).
  TensorDict& set_(const NestedKey& key, const at::Tensor& value);
  // The existing value at `key`, else sets and returns `default_value`.
  Value setdefault(const NestedKey& key, const Value& default_value);
  TensorDict& del_(const NestedKey& key);
  Value pop(const NestedKey& key);
  Value pop(const NestedKey& key, const Value& default_value);
  // Creates an empty nested tensordict with this batch size and device.
  TensorDict& create_nested(const NestedKey& key);

  // Keys in tensordict's order: with include_nested, a nested tensordict's
  // keys come before its own key; leaves_only drops nested tensordicts and,
  // unless .is_leaf = IsLeaf::NonTensor, non-tensor data (tensordict 0.15).
  std::vector<NestedKey> keys(const KeysOptions& options = {}) const;
  std::vector<Value> values(const KeysOptions& options = {}) const;
  std::vector<std::pair<NestedKey, Value>> items(const KeysOptions& options = {}) const;

  // A new tensordict with only `keys` (sharing their values). strict: a
  // missing key is a KeyError, else it is skipped. A lazy stack gives a lazy
  // stack of its members' selections.
  TensorDict select(const std::vector<NestedKey>& keys, const SelectOptions& options = {}) const;
  TensorDict exclude(const std::vector<NestedKey>& keys) const;
  // In place (tensordict's inplace=True): the keys not selected (the keys
  // given) are deleted from this tensordict, which is returned.
  TensorDict& select_(const std::vector<NestedKey>& keys, const SelectOptions& options = {});
  TensorDict& exclude_(const std::vector<NestedKey>& keys);
  // Sets every entry of `other`; nested tensordicts are updated recursively.
  TensorDict& update(const TensorDict& other);
  // update() with tensordict's keywords: clone, inplace, keys_to_update,
  // update_batch_size.
  TensorDict& update(const TensorDict& other, const UpdateOptions& options);
  // In place: every tensor of `other` is written into the existing entry at
  // its key (which must exist with a compatible shape).
  TensorDict& update_(const TensorDict& other);
  // tensordict's update_at_: every entry of `other` written into this
  // tensordict at batch `index` (set_at_ for each tensor; non-tensor data is
  // written at the index too). Every key of `other` must exist here.
  // keys_to_update: only those keys, as update()'s; an empty list updates
  // nothing.
  TensorDict& update_at_(const TensorDict& other, at::ArrayRef<TensorIndex> index,
                             const std::optional<std::vector<NestedKey>>& keys_to_update = std::nullopt);
  // tensordict's copy_ and copy_at_: update_() and update_at_() under
  // torch.Tensor.copy_'s name (every key of `other` must exist here; the
  // existing tensors keep their storage).
  TensorDict& copy_(const TensorDict& other);
  TensorDict& copy_at_(const TensorDict& other, at::ArrayRef<TensorIndex> index);
  // A shallow copy with the entries of `entries` written into it (update():
  // nested tensordicts are merged); this tensordict does not change. With no
  // entry to write, this tensordict itself (tensordict's replace).
  TensorDict replace(const TensorDict& entries) const;
  // Removes the entries at `keys` and returns them in a new tensordict of
  // this batch size, their nested levels kept (tensordict's separates). A
  // missing key is a KeyError unless options.strict is false; nested levels
  // left empty here are removed unless keep_empty.
  TensorDict separates(const std::vector<NestedKey>& keys, const SeparatesOptions& options = {});
  // The non-tensor entries (tensordict's non_tensor_items): of this level,
  // or of every level under nested keys ({.include_nested = true}).
  std::vector<std::pair<NestedKey, NonTensorData>> non_tensor_items(const NonTensorItemsOptions& options = {}) const;
  // A tensordict without the non-tensor entries, nested ones included; the
  // leaves are not copied (tensordict's filter_non_tensor_data).
  TensorDict filter_non_tensor_data() const;
  // Sets this tensordict's device (and its nested levels') to the device of
  // its tensor leaves when they all share one, else clears it; the leaves do
  // not move (tensordict's auto_device_).
  TensorDict& auto_device_();
  // Marks every tensor leaf as used by `stream` (Tensor::record_stream): a
  // freed leaf's memory is not reused before the work queued on `stream`
  // completes. For CUDA leaves (libtorch refuses others, naming the key).
  TensorDict& record_stream(c10::Stream stream);
  // tensordict's cat_tensors / stack_tensors: the tensors at `keys`
  // concatenated (stacked) along tensor dim `dim` into a new entry `out_key`;
  // the entries taken are deleted unless keep_entries. The new entry is set
  // before any is deleted, so a failure (shapes, batch size, lock) changes
  // nothing.
  TensorDict& cat_tensors(const std::vector<NestedKey>& keys, const NestedKey& out_key, int64_t dim = 0,
                          const CombineTensorsOptions& options = {});
  TensorDict& stack_tensors(const std::vector<NestedKey>& keys, const NestedKey& out_key, int64_t dim = 0,
                            const CombineTensorsOptions& options = {});
  TensorDict& rename_key_(const NestedKey& old_key, const NestedKey& new_key, const RenameKeyOptions& options = {});
  TensorDict flatten_keys(std::string_view separator = ".") const;
  TensorDict unflatten_keys(std::string_view separator = ".") const;
  // In place (tensordict's inplace=True): this tensordict's entries are
  // rearranged, and it is returned.
  TensorDict& flatten_keys_(std::string_view separator = ".");
  TensorDict& unflatten_keys_(std::string_view separator = ".");
  // One tensordict per key list, then one with the remaining keys.
  std::vector<TensorDict> split_keys(const std::vector<std::vector<NestedKey>>& key_lists,
                                     const SelectOptions& options = {}) const;
  // In place (tensordict's inplace=True, whose last result is the tensordict
  // itself): returns one tensordict per key list, and the keys taken leave
  // this one, which keeps the rest.
  std::vector<TensorDict> split_keys_(const std::vector<std::vector<NestedKey>>& key_lists,
                                      const SelectOptions& options = {});
  // The first-level keys, sorted.
  std::vector<std::string> sorted_keys() const;
  // Removes and returns the last first-level entry set (dict.popitem);
  // KeyError when there is none.
  std::pair<std::string, Value> popitem();
  // The number of levels of nesting above the deepest leaf (0: no nested
  // tensordict holds a leaf).
  int64_t depth() const;
  // The bytes the tensor leaves hold (their gradients included); without
  // count_duplicates a tensor reached twice counts once.
  int64_t bytes(const BytesOptions& options = {}) const;
  // The number of elements of the tensor leaves, nested ones included
  // (tensordict's param_count); non-tensor data is not counted. With
  // count_duplicates false a tensor stored under several keys counts once
  // (two views of one tensor still count twice).
  int64_t param_count(const BytesOptions& options = {}) const;
  // Each tensor leaf's data pointer (of its storage, with `storage`) as a
  // 0-dim int64 tensor, keyed like the leaves; batch size [].
  TensorDict data_ptr(const DataPtrOptions& options = {}) const;

  // Tensordicts of the given batch size (the leaves keep their feature dims,
  // dtype unless given, and device), as tensordict's new_* methods. Dim names
  // follow the trailing dims. Non-tensor values are carried.
  TensorDict new_zeros(at::IntArrayRef batch_size, std::optional<at::ScalarType> dtype = std::nullopt) const;
  TensorDict new_ones(at::IntArrayRef batch_size, std::optional<at::ScalarType> dtype = std::nullopt) const;
  TensorDict new_empty(at::IntArrayRef batch_size, std::optional<at::ScalarType> dtype = std::nullopt) const;
  TensorDict new_full(at::IntArrayRef batch_size, const at::Scalar& fill_value,
                      std::optional<at::ScalarType> dtype = std::nullopt) const;

  // Same batch size, device and names, no entries (recurse: keep the nested
  // structure, empty).
  TensorDict empty(const EmptyOptions& options = {}) const;
  TensorDict& clear();

  // A view of this tensordict at `index` whose writes reach this one:
  // tensordict's get_sub_tensordict (<tensordict/sub.h>).
  SubTensorDict get_sub_tensordict(at::ArrayRef<TensorIndex> index) const;

  // ---- batch indexing (src/ops/indexing.cpp) ----------------------------------------
  // td[index] over batch dims: int, slice, None, Ellipsis, bool mask, long
  // tensor and lists of these (libtorch's TensorIndex). Basic indices give
  // views.
  TensorDict index(at::ArrayRef<TensorIndex> index) const;
  // td[index] = value: a tensordict (expanded to the indexed batch size), a
  // tensor or a scalar, written into every leaf.
  TensorDict& index_put_(at::ArrayRef<TensorIndex> index, const TensorDict& value);
  TensorDict& index_put_(at::ArrayRef<TensorIndex> index, const at::Tensor& value);
  TensorDict& index_put_(at::ArrayRef<TensorIndex> index, const at::Scalar& value);
  at::Tensor get_at(const NestedKey& key, at::ArrayRef<TensorIndex> index) const;
  TensorDict& set_at_(const NestedKey& key, const at::Tensor& value, at::ArrayRef<TensorIndex> index);
  // A non-tensor entry written at `index` (tensordict's set_at_ with a
  // string): the entry becomes a stack where the elements differ.
  TensorDict& set_at_(const NestedKey& key, const NonTensorData& value, at::ArrayRef<TensorIndex> index);

  // ---- shape ops on batch dims (negative dims count from the batch's end;
  // src/ops/shape_ops.cpp) ----------------------------------------------------------
  // A lazy stack stays lazy, member by member (tensordict's rules): expand
  // stacks densely where the members allow; reshape, view, flatten and
  // unflatten regroup the members when they flatten or unflatten dims, and
  // give a dense result for other shapes.
  TensorDict reshape(at::IntArrayRef shape) const;
  TensorDict view(at::IntArrayRef shape) const;
  TensorDict permute(at::IntArrayRef dims) const;
  TensorDict transpose(int64_t dim0, int64_t dim1) const;
  // Without a dim, removes every batch dim of size 1.
  TensorDict squeeze(std::optional<int64_t> dim = std::nullopt) const;
  TensorDict unsqueeze(int64_t dim) const;
  // The new batch size's trailing dims broadcast against the current ones.
  TensorDict expand(at::IntArrayRef batch_size) const;
  TensorDict flatten(int64_t start_dim = 0, int64_t end_dim = -1) const;
  TensorDict unflatten(int64_t dim, at::IntArrayRef sizes) const;
  std::vector<TensorDict> unbind(int64_t dim = 0) const;
  // tensordict's to_lazystack: a lazy stack of this tensordict's slices
  // along `dim` (<tensordict/lazy.h>).
  LazyStackedTensorDict to_lazystack(int64_t dim = 0) const;
  // tensordict's densify: a TensorDict in which every lazy stack (this one or
  // a nested one) is dense. Tensors of equal shapes are stacked; tensors
  // whose shapes differ, or which some members lack (those read as empty
  // along the last dim), become nested (jagged) tensors, which needs the
  // stack dim to be 0.
  TensorDict densify() const;
  std::vector<TensorDict> split(int64_t split_size, int64_t dim = 0) const;
  std::vector<TensorDict> split(at::IntArrayRef split_sizes, int64_t dim = 0) const;
  std::vector<TensorDict> chunk(int64_t chunks, int64_t dim = 0) const;
  // torch.tensor_split: `sections` pieces whose sizes differ by at most one
  // (the first ones longer), or pieces cut at `indices`.
  std::vector<TensorDict> tensor_split(int64_t sections, int64_t dim = 0) const;
  std::vector<TensorDict> tensor_split(at::IntArrayRef indices, int64_t dim = 0) const;
  // Moves batch dims `source` to positions `destination` (a permute).
  TensorDict movedim(at::IntArrayRef source, at::IntArrayRef destination) const;
  TensorDict movedim(int64_t source, int64_t destination) const;
  // Aliases of transpose.
  TensorDict swapaxes(int64_t dim0, int64_t dim1) const;
  TensorDict swapdims(int64_t dim0, int64_t dim1) const;
  // Batch elements [start, start + length) of batch dim `dim` (a view).
  TensorDict narrow(int64_t dim, int64_t start, int64_t length) const;
  // expand() without -1 entries; the result has no names (as in tensordict).
  TensorDict broadcast_to(at::IntArrayRef batch_size) const;
  // expand(other.sizes()); for a tensordict, every leaf is expanded as the
  // other's leaf at its key, the result taking the other's batch size.
  TensorDict expand_as(const at::Tensor& other) const;
  TensorDict expand_as(const TensorDict& other) const;

  // ---- ops that reorder or repeat batch elements (copies; src/ops/repeat_ops.cpp)
  TensorDict flip(at::IntArrayRef dims) const;
  TensorDict fliplr() const;  // flip({1})
  TensorDict flipud() const;  // flip({0})
  // torch.roll over batch dims (one shift per dim; the dims are required,
  // whereas tensordict without dims would roll each leaf flattened).
  TensorDict roll(at::IntArrayRef shifts, at::IntArrayRef dims) const;
  TensorDict roll(int64_t shift, int64_t dim) const;
  // One repeat count per batch dim.
  TensorDict repeat(at::IntArrayRef repeats) const;
  // torch.tile over batch dims: fewer counts than batch dims apply to the
  // last ones, more add leading batch dims. The result has no names.
  TensorDict tile(at::IntArrayRef reps) const;
  // Each batch element of `dim` repeated `repeats` times (a count per element
  // for a tensor); without a dim, over the flattened batch.
  TensorDict repeat_interleave(int64_t repeats, std::optional<int64_t> dim = std::nullopt) const;
  TensorDict repeat_interleave(const at::Tensor& repeats, std::optional<int64_t> dim = std::nullopt) const;

  // ---- apply and math (src/ops/math_ops.cpp) -------------------------------------
  using TensorFn = std::function<at::Tensor(const at::Tensor&)>;
  using BinaryTensorFn = std::function<at::Tensor(const at::Tensor&, const at::Tensor&)>;
  using NamedTensorFn = std::function<at::Tensor(const NestedKey&, const at::Tensor&)>;

  // A new tensordict of fn(leaf) for every tensor leaf (non-tensor data is
  // carried). A leaf for which fn returns an undefined tensor is dropped, and
  // so is a nested tensordict left empty by that (tensordict's filter_empty).
  // `batch_size`/`names` set the result's when fn changes the batch dims.
  TensorDict apply(const TensorFn& fn, std::optional<std::vector<int64_t>> batch_size = std::nullopt,
                       std::optional<Names> names = std::nullopt) const;
  // fn(leaf, other's leaf at the same key).
  TensorDict apply(const BinaryTensorFn& fn, const TensorDict& other,
                   MissingKeys missing = MissingKeys::error()) const;
  // fn(key path, leaf).
  TensorDict named_apply(const NamedTensorFn& fn) const;
  // In place: every leaf becomes fn(leaf) (written into the existing tensor).
  TensorDict& apply_(const TensorFn& fn);
  // Every nested (jagged) tensor leaf becomes a dense tensor padded with
  // `padding`; other leaves are carried. When the batch size has a ragged
  // (-1) dim, the result's batch size is inferred again over as many dims,
  // and `mask_key`, if given, receives where the first nested leaf holds
  // data rather than padding (over the batch dims).
  TensorDict to_padded_tensor(double padding = 0.0, const std::optional<NestedKey>& mask_key = std::nullopt) const;

#define TENSORDICT_DECLARE_UNARY(name) \
  TensorDict name() const;             \
  TensorDict& name##_();
  TENSORDICT_UNARY_OPS(TENSORDICT_DECLARE_UNARY)
#undef TENSORDICT_DECLARE_UNARY

#define TENSORDICT_DECLARE_PREDICATE(name) TensorDict name() const;
  TENSORDICT_PREDICATES(TENSORDICT_DECLARE_PREDICATE)
#undef TENSORDICT_DECLARE_PREDICATE

  // Binary ops take a tensordict (matched by key), a tensor (broadcast to
  // every leaf) or a scalar.
#define TENSORDICT_DECLARE_BINARY(name)                                                          \
  TensorDict name(const Operand& other, MissingKeys missing = MissingKeys::error()) const; \
  TensorDict& name##_(const Operand& other, MissingKeys missing = MissingKeys::error());
  TENSORDICT_BINARY_OPS(TENSORDICT_DECLARE_BINARY)
  TENSORDICT_BINARY_OPS_NO_INPLACE(TENSORDICT_DECLARE_BINARY)
  TENSORDICT_DECLARE_BINARY(clamp_min)
  TENSORDICT_DECLARE_BINARY(clamp_max)
#undef TENSORDICT_DECLARE_BINARY

  TensorDict add(const Operand& other, const at::Scalar& alpha = 1, MissingKeys missing = MissingKeys::error()) const;
  TensorDict& add_(const Operand& other, const at::Scalar& alpha = 1, MissingKeys missing = MissingKeys::error());
  TensorDict sub(const Operand& other, const at::Scalar& alpha = 1, MissingKeys missing = MissingKeys::error()) const;
  TensorDict& sub_(const Operand& other, const at::Scalar& alpha = 1, MissingKeys missing = MissingKeys::error());
  TensorDict clamp(const std::optional<at::Scalar>& min, const std::optional<at::Scalar>& max = std::nullopt) const;
  TensorDict& clamp_(const std::optional<at::Scalar>& min, const std::optional<at::Scalar>& max = std::nullopt);
  // self + weight * (end - self).
  TensorDict lerp(const Operand& end, const at::Scalar& weight) const;
  TensorDict& lerp_(const Operand& end, const at::Scalar& weight);
  // self + value * t1 * t2, self + value * t1 / t2.
  TensorDict addcmul(const Operand& t1, const Operand& t2, const at::Scalar& value = 1) const;
  TensorDict& addcmul_(const Operand& t1, const Operand& t2, const at::Scalar& value = 1);
  TensorDict addcdiv(const Operand& t1, const Operand& t2, const at::Scalar& value = 1) const;
  TensorDict& addcdiv_(const Operand& t1, const Operand& t2, const at::Scalar& value = 1);

  // other - alpha * self (tensordict's rsub; `2 - td`).
  TensorDict rsub(const Operand& other, const at::Scalar& alpha = 1) const;
  // The remainder of each leaf divided by `other`, with the divisor's sign
  // (tensordict's mod; `td % other`).
  TensorDict mod(const Operand& other, MissingKeys missing = MissingKeys::error()) const;
  // Bitwise AND (logical for bool leaves; `td & other`) and logical AND
  // (nonzero is true, bool leaves).
  TensorDict bitwise_and(const Operand& other, MissingKeys missing = MissingKeys::error()) const;
  TensorDict logical_and(const Operand& other, MissingKeys missing = MissingKeys::error()) const;

  TensorDict& zero_();
  TensorDict& fill_(const at::Scalar& value);
  TensorDict& fill_(const NestedKey& key, const at::Scalar& value);

  // Comparisons: a tensordict of bools (also as operators below).
#define TENSORDICT_DECLARE_COMPARISON(name) \
  TensorDict name(const Operand& other, MissingKeys missing = MissingKeys::error()) const;
  TENSORDICT_COMPARISONS(TENSORDICT_DECLARE_COMPARISON)
#undef TENSORDICT_DECLARE_COMPARISON

  // True when every (any) element of every leaf is true; with a dim, a
  // tensordict reduced over that batch dim.
  bool all() const;
  bool any() const;
  TensorDict all(int64_t dim) const;
  TensorDict any(int64_t dim) const;
  // Same keys, and every pair of leaves allclose.
  bool allclose(const TensorDict& other, const AllcloseOptions& options = {}) const;

  // where(condition, self, other) per leaf; `condition` is a bool tensor over
  // the batch dims (expanded over feature dims) or a tensordict of bools.
  // A key in one operand only is a KeyError unless `missing` says otherwise:
  // MissingKeys::fill(pad) is tensordict's pad= (the absent side reads pad).
  TensorDict where(const Operand& condition, const Operand& other, MissingKeys missing = MissingKeys::error()) const;
  TensorDict masked_fill(const at::Tensor& mask, const at::Scalar& value) const;
  TensorDict& masked_fill_(const at::Tensor& mask, const at::Scalar& value);
  // The elements where the batch mask is true, gathered into one batch dim.
  TensorDict masked_select(const at::Tensor& mask) const;
  // torch.gather along batch dim `dim`; `index` has the batch dims and is
  // expanded over feature dims. The result's batch size is index's shape.
  TensorDict gather(int64_t dim, const at::Tensor& index) const;

  // ---- reductions over batch dims (src/ops/reductions.cpp) -------------------------
  // Each leaf reduced over batch `dims` (all of each leaf's dims when empty,
  // giving an empty batch size, or with keepdim a batch size of ones); with
  // `feature` (tensordict's dim="feature"), over each leaf's feature dims,
  // keeping the batch size. `reduce` folds every leaf into one tensor:
  // tensordict's reduce=True.
#define TENSORDICT_DECLARE_REDUCTION(name)                                                     \
  TensorDict name(std::vector<int64_t> dims = {}, const ReduceOptions& options = {}) const; \
  TensorDict name(FeatureDims, const ReduceOptions& options = {}) const;
  TENSORDICT_REDUCTIONS(TENSORDICT_DECLARE_REDUCTION)
  TENSORDICT_DECLARE_REDUCTION(std)
  TENSORDICT_DECLARE_REDUCTION(var)
#undef TENSORDICT_DECLARE_REDUCTION
  // The 2-norm of each leaf.
  TensorDict norm() const;
  // log(sum(exp)) over batch `dims` (every batch dim when empty).
  TensorDict logsumexp(std::vector<int64_t> dims = {}, const ReduceOptions& options = {}) const;
  // The q-th quantile of each leaf over batch dim `dim` (over each leaf
  // flattened, giving batch size [], without one); torch.quantile's
  // interpolation: linear, lower, higher, midpoint or nearest.
  TensorDict quantile(double q, std::optional<int64_t> dim = std::nullopt, const QuantileOptions& options = {}) const;
  // Over each leaf's feature dims, keeping the batch size (dim="feature").
  TensorDict quantile(double q, FeatureDims, const QuantileOptions& options = {}) const;
  // A 0-d or 1-d tensor q, as torch.quantile takes: a 1-d q of n quantiles
  // gives every leaf a first dim of size n, and the batch size too, unless
  // the result's batch size is [] (no dim, no keepdim).
  TensorDict quantile(const at::Tensor& q, std::optional<int64_t> dim = std::nullopt,
                      const QuantileOptions& options = {}) const;
  TensorDict quantile(const at::Tensor& q, FeatureDims, const QuantileOptions& options = {}) const;
  // The max / min over one batch dim: (values, indices), as at::max(t, dim)
  // and tensordict's max(dim=...) (whose named tuple has the same two
  // tensordicts). max() and max(dims) above give the values only.
  std::tuple<TensorDict, TensorDict> max(int64_t dim, const ReduceOptions& options = {}) const;
  std::tuple<TensorDict, TensorDict> min(int64_t dim, const ReduceOptions& options = {}) const;
  // Cumulative max / min along batch dim `dim`: (values, indices), as
  // torch.cummax's named tuple.
  std::tuple<TensorDict, TensorDict> cummax(int64_t dim) const;
  std::tuple<TensorDict, TensorDict> cummin(int64_t dim) const;
  // Each leaf's softmax along batch dim `dim`.
  TensorDict softmax(int64_t dim, std::optional<at::ScalarType> dtype = std::nullopt) const;
  // tensordict's reduce=True: every tensor leaf reduced together into one
  // tensor. Without dims, over all their elements (a scalar); with batch
  // dims, the leaves (of one number of dims) are joined along the first dim
  // and reduced over `dims`; with `feature`, each leaf's feature dims are
  // joined and reduced, giving a tensor of the batch size.
  at::Tensor reduce(Reduction op, std::vector<int64_t> dims = {}, const ReduceOptions& options = {}) const;
  at::Tensor reduce(Reduction op, FeatureDims, const ReduceOptions& options = {}) const;
  // quantile's reduce=True, as reduce() above.
  at::Tensor reduce_quantile(double q, std::optional<int64_t> dim = std::nullopt, const QuantileOptions& options = {}) const;
  at::Tensor reduce_quantile(double q, FeatureDims, const QuantileOptions& options = {}) const;
  at::Tensor reduce_quantile(const at::Tensor& q, std::optional<int64_t> dim = std::nullopt,
                             const QuantileOptions& options = {}) const;
  at::Tensor reduce_quantile(const at::Tensor& q, FeatureDims, const QuantileOptions& options = {}) const;

  // ---- state dicts (include <tensordict/state_dict.h> to use them;
  // src/storage/state_dict.cpp, src/core/dict_convert.cpp) -----------------------
  // tensordict's state_dict: one entry per tensor (detached unless
  // keep_vars), a nested dict per nested tensordict, then "__batch_size"
  // (int list) and "__device" (string or None). flatten joins nested keys
  // with "." and keeps only the top level's batch size and device.
  // Non-tensor data is not part of a state dict.
  c10::Dict<std::string, c10::IValue> state_dict(const StateDictOptions& options = {}) const;
  // Loads one: by default tensors are copied into the existing ones; assign
  // replaces them. strict: the keys must match exactly.
  TensorDict& load_state_dict(const c10::Dict<std::string, c10::IValue>& state_dict,
                              const LoadStateDictOptions& options = {});

  // tensordict's to_dict: a dict per level holding the tensors (shared, not
  // copied) and non-tensor values (strings, numbers, bools, None and lists
  // of them); TensorDict::from_dict takes it back.
  c10::Dict<std::string, c10::IValue> to_dict() const;

  // tensordict's params.to_module(module): loads these weights into a module
  // of any kind (a torch::nn module, a tensordict::nn module, an exported
  // AOTIModule) until the guard is destroyed, or for good with release().
  // Include <tensordict/nn/params.h> to use it (nn::to_module there).
  // (Two overloads, not a default argument: ToModuleOptions is incomplete
  // here, which clang refuses in a default argument.)
  template <class Module>
  [[nodiscard]] nn::ToModuleGuard to_module(Module&& module) const;
  template <class Module>
  [[nodiscard]] nn::ToModuleGuard to_module(Module&& module, const nn::ToModuleOptions& options) const;

  // ---- device, dtype, copies (src/storage/device_moves.cpp, src/ops/copies.cpp) ----
  // Every leaf on `device`, with as few copies and synchronisations as the
  // leaves allow: a consolidated tensordict (or one whose leaves share one
  // storage) moves as one copy of that storage, the result's leaves being
  // views of the copy (a consolidated source gives a consolidated, locked
  // result); otherwise leaves in pageable host memory go to an accelerator
  // through one pinned staging buffer and one device allocation, and leaves
  // coming back to the CPU land in one pinned buffer. Without non_blocking
  // the data is there when to() returns (one synchronisation at the end);
  // with it, the copies may still run: wait with tensordict::synchronize(d)
  // or an event from tensordict::record_event(d) (<tensordict/device_sync.h>),
  // d being the accelerator involved, before reading or freeing the source.
  TensorDict to(at::Device device, const ToOptions& options = {}) const;
  TensorDict to(at::ScalarType dtype) const;
#define TENSORDICT_DECLARE_CAST(name, dtype) TensorDict name() const;
  TENSORDICT_DTYPE_CASTS(TENSORDICT_DECLARE_CAST)
#undef TENSORDICT_DECLARE_CAST
  TensorDict cpu() const;
  TensorDict cuda(std::optional<int> index = std::nullopt, const ToOptions& options = {}) const;
  // recurse=false copies the structure only; tensors are shared.
  TensorDict clone(const CloneOptions& options = {}) const;
  TensorDict detach() const;
  // A dense tensordict (a lazy stack's members stacked, an h5 file read);
  // leaves that are already contiguous are shared.
  TensorDict contiguous() const;
  // tensordict's to_tensordict(): a dense copy, whatever the kind.
  TensorDict to_tensordict() const;
  // Every CPU leaf in page-locked memory, copied into one pinned allocation
  // (leaves already pinned are kept; a consolidated tensordict pins its
  // storage and stays consolidated). Needs an accelerator in libtorch.
  TensorDict pin_memory() const;

  // ---- one storage (src/storage/consolidate.cpp) -------------------------------------
  // tensordict's consolidate(): a copy whose tensor leaves are views of one
  // flat uint8 storage (each leaf contiguous, starting at a multiple of 8
  // bytes), so that to(), pin_memory() and transfers move one block. Nested
  // tensordicts, non-tensor data, batch sizes and names are kept. The result
  // is locked: in-place writes into its leaves keep it consolidated; unlock_()
  // (and memmap_(), which moves the leaves into files) ends it, as in
  // tensordict. Already consolidated, with a storage that matches `options`:
  // returns this tensordict. With `filename`, the storage is that file
  // (tensordict's layout, metadata after the data: from_consolidated reads
  // it); with `share_memory`, a shared-memory object another process can map.
  // Refuses (ValueError naming the key) nested (jagged) tensors, sparse and
  // other non-strided or quantized leaves; a leaf that requires grad is
  // copied detached.
  TensorDict consolidate(const ConsolidateOptions& options = {}) const;
  // Whether every tensor leaf is still a view of the storage consolidate() made.
  bool is_consolidated() const;
  // That storage (a flat uint8 tensor), or nullopt when not consolidated.
  std::optional<at::Tensor> consolidated_storage() const;
  // tensordict's is_shared(): true after share_memory_() until unlock_(),
  // and always on a CUDA device. A tensordict built from tensors that are in
  // shared memory is not marked shared (only share_memory_() marks one);
  // views that keep the leaves (an index of ints, None, Ellipsis and slices
  // from the start; unbind, split, chunk, unsqueeze, squeeze, view, permute,
  // transpose, movedim, narrow) keep the mark, and are locked. A lazy stack
  // is shared when its members are (RuntimeError when only some are);
  // a sub-view, when its source is.
  bool is_shared() const;

  // ---- shared memory (src/storage/share_memory.cpp) ---------------------------------
  // tensordict's share_memory_(): every CPU tensor leaf moves into shared
  // memory (torch's Tensor.share_memory_(): the storage's bytes are copied
  // into a POSIX shared-memory object and the storage itself now points
  // there, so every tensor viewing it, here or elsewhere, follows; a storage
  // already shared stays). Processes forked afterwards, and those that
  // receive the storages' descriptors, read and write the same memory. The
  // tensordict and every nested level are then marked shared and locked:
  // in-place writes work, adding, replacing or removing entries does not. A
  // tensordict on a CUDA device is left as it is (CUDA tensors are shared
  // already) and not locked; leaves on other devices stay. A lazy stack
  // shares its members. Non-tensor data is not moved (it stays this
  // process's). A shared storage cannot be resized afterwards. Refuses,
  // before moving anything: a memory-mapped tensordict (memmap and shared
  // memory are exclusive), a sub-view (its leaves are its source's), an h5
  // file (NotImplementedError), and a leaf without a storage, such as a
  // sparse tensor (NotImplementedError naming its key).
  TensorDict& share_memory_();

  const std::shared_ptr<TensorDictImpl>& impl() const { return impl_; }

 protected:
  // The checked conversion's test (as<K>() and each kind's constructor from
  // a TensorDict): TypeError naming both kinds unless this one is `expected`.
  void require_kind(Kind expected) const;
  // The tensordict that holds `key`'s last part, creating levels if `create`.
  TensorDict parent_of(const NestedKey& key, bool create) const;
  // Throws tensordict's lock error if this level is locked.
  void check_unlocked() const;
  [[noreturn]] static void throw_locked();
  // The level holding the tensor entry `key`; get()'s errors when there is none.
  TensorDict tensor_level(const NestedKey& key) const;
  // target[index] = value for the tensor at `key`, written through whatever
  // kind holds it (`resolved`: `index` resolved against this batch size).
  void put_at(const NestedKey& key, const BatchIndex& resolved, at::ArrayRef<TensorIndex> index, const at::Tensor& value,
              const char* op);
  // The same for the non-tensor data `value` into the non-tensor entry at
  // `key` (which exists).
  void put_non_tensor_at(const NestedKey& key, const BatchIndex& resolved, const Value& value, const char* op);

  std::shared_ptr<TensorDictImpl> impl_;

  // ---- persistence (memmap: src/memmap, h5: src/kinds/persistent) ------------
 public:
  // Writes every leaf to `prefix` in tensordict's memmap layout (FORMATS.md)
  // and replaces it by a memory-mapped view of its file; the tensordict moves
  // to the CPU and is locked.
  TensorDict& memmap_(const std::string& prefix, const MemmapOptions& options = {});
  // tensordict's memmap_() without a prefix: every leaf moves into anonymous
  // shared memory (a file created in /dev/shm, or the temp directory, and
  // unlinked at once); the tensordict is locked and is_memmap(), with no
  // saved_path(). Leaves already there stay.
  TensorDict& memmap_();
  // A new memory-mapped copy written to `prefix`; this one is unchanged.
  TensorDict memmap(const std::string& prefix, const MemmapOptions& options = {}) const;
  // Same structure, files of full size (zero-filled), no data copied.
  TensorDict memmap_like(const std::string& prefix, const MemmapOptions& options = {}) const;
  // tensordict's save(): memmap() under another name.
  TensorDict save(const std::string& prefix, const MemmapOptions& options = {}) const;
  // True for a tensordict written or loaded by the memmap methods.
  bool is_memmap() const;
  // The directory it was written to or loaded from; nullopt if none.
  std::optional<std::string> saved_path() const;
  // Reloads the entries from saved_path() (what another process wrote there).
  TensorDict& memmap_refresh_();
  // Writes the tree to an HDF5 file (<tensordict/persistent.h>): groups for
  // nested levels, one dataset per leaf, `options` on every dataset.
  PersistentTensorDict to_h5(const std::string& path, const H5Options& options = {}) const;
};

// tensordict's name for the class every kind derives from: here the same
// handle, kept so that code written against the earlier API compiles.
using TensorDictBase = TensorDict;

// The other operand of a binary op: a tensordict, a tensor or a scalar.
class Operand {
 public:
  Operand(const TensorDict& td) : value_(td) {}
  Operand(at::Tensor tensor) : value_(std::move(tensor)) {}
  Operand(const at::Scalar& scalar) : value_(scalar) {}
  template <class T, std::enable_if_t<std::is_arithmetic_v<T>, int> = 0>
  Operand(T scalar) : value_(at::Scalar(scalar)) {}

  const TensorDict* tensordict() const { return std::get_if<TensorDict>(&value_); }
  // The tensor, or the scalar as a wrapped-number tensor (so type promotion
  // treats it as a Python scalar); undefined for a tensordict.
  at::Tensor tensor() const;

 private:
  std::variant<TensorDict, at::Tensor, at::Scalar> value_;
};

// Operators, as on tensors: arithmetic and elementwise comparison.
TensorDict operator+(const TensorDict& a, const Operand& b);
TensorDict operator-(const TensorDict& a, const Operand& b);
TensorDict operator*(const TensorDict& a, const Operand& b);
TensorDict operator/(const TensorDict& a, const Operand& b);
TensorDict operator-(const TensorDict& a);
TensorDict operator==(const TensorDict& a, const Operand& b);
TensorDict operator!=(const TensorDict& a, const Operand& b);
TensorDict operator<(const TensorDict& a, const Operand& b);
TensorDict operator<=(const TensorDict& a, const Operand& b);
TensorDict operator>(const TensorDict& a, const Operand& b);
TensorDict operator>=(const TensorDict& a, const Operand& b);
// Bitwise per leaf (logical for bool leaves), as tensors' &, |, ^, ~; % is mod.
TensorDict operator%(const TensorDict& a, const Operand& b);
TensorDict operator&(const TensorDict& a, const Operand& b);
TensorDict operator|(const TensorDict& a, const Operand& b);
TensorDict operator^(const TensorDict& a, const Operand& b);
TensorDict operator~(const TensorDict& a);
// A scalar or a tensor on the left (tensordict's __radd__, __rsub__,
// __rmul__, __rtruediv__, __rand__, __ror__, __rxor__): `1 - td`, `2 * td`,
// `1 / td` (td.reciprocal() * 1, as tensordict computes it).
#define TENSORDICT_DECLARE_REFLECTED(op)                  \
  TensorDict operator op(const at::Scalar& a, const TensorDict& b); \
  TensorDict operator op(const at::Tensor& a, const TensorDict& b);
TENSORDICT_DECLARE_REFLECTED(+)
TENSORDICT_DECLARE_REFLECTED(-)
TENSORDICT_DECLARE_REFLECTED(*)
TENSORDICT_DECLARE_REFLECTED(/)
TENSORDICT_DECLARE_REFLECTED(&)
TENSORDICT_DECLARE_REFLECTED(|)
TENSORDICT_DECLARE_REFLECTED(^)
#undef TENSORDICT_DECLARE_REFLECTED

// Scoped locking, for tensordict's `with td.lock_():` / `with td.unlock_():`:
// sets the state for the guard's lifetime and restores the previous one.
class LockGuard {
 public:
  enum Mode { Lock, Unlock };
  explicit LockGuard(TensorDict td, Mode mode = Lock);
  ~LockGuard();
  LockGuard(const LockGuard&) = delete;
  LockGuard& operator=(const LockGuard&) = delete;

 private:
  TensorDict td_;
  bool was_locked_;
};

// A dense stack along a new batch dim; every member needs the same keys and
// batch size.
TensorDict stack(const std::vector<TensorDict>& tds, int64_t dim = 0);
// Concatenation along an existing batch dim. With a lazy stack among `tds`,
// a lazy stack (tensordict's rule): along the stack dim, of every member;
// along another dim, of the members concatenated pairwise (dense inputs are
// cut along the stack dim first).
TensorDict cat(const std::vector<TensorDict>& tds, int64_t dim = 0);

// tensordict.from_consolidated: TensorDict::from_consolidated.
TensorDict from_consolidated(const std::string& filename, const LoadOptions& options = {});

}  // namespace tensordict
