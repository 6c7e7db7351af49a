// tensordict::TensorClass<Derived>: the behaviour of every generated
// tensorclass, written once.
//
// A generated struct derives from TensorClass<Itself> and specialises
// tensordict::schema::FieldTable<Itself> (see schema.h). This is the typed
// layer over the dynamic core, whose semantics it reuses: hot batch ops
// (indexing, shape ops, stack/cat/unbind/split, copies) visit that table at
// compile time (a fold over the member pointers) with what the core plans
// once (a resolved BatchIndex, a shape plan from shape_plan.h). Two CRTP
// bases hold the rest of the interface: TensorClassSurface (the ops that run
// the TensorDict op on the tensordict form, the same tensors) and
// TensorClassPersistence (memmap, h5, save/load). Results keep the static
// type when they fit the schema (indexing an Observation returns an
// Observation) and are TensorDicts otherwise.
//
// Member kinds are read from the member types: at::Tensor members are tensors,
// members deriving from TensorClass<M> are nested tensorclasses (visited
// recursively, their batch size starting with the parent's), anything else is
// non-tensor data, copied through ops and required equal by stack/cat, except
// NonTensorStack<T> members (one value per element), which batch ops move as
// the dynamic core moves a non-tensor stack entry (non_tensor_ops.h).
#pragma once

#include <ATen/core/Tensor.h>
#include <ATen/ops/cat.h>
#include <ATen/ops/scalar_tensor.h>
#include <ATen/ops/stack.h>

#include <cstdint>
#include <optional>
#include <ostream>
#include <span>
#include <string>
#include <tuple>
#include <type_traits>
#include <utility>
#include <vector>

#include "tensordict/batch_index.h"
#include "tensordict/base.h"
#include "tensordict/errors.h"
#include "tensordict/key.h"
#include "tensordict/non_tensor.h"
#include "tensordict/non_tensor_ops.h"
#include "tensordict/non_tensor_stack.h"
#include "tensordict/schema.h"
#include "tensordict/detail/shape_plan.h"
#include "tensordict/detail/tensorclass_fields.h"
#include "tensordict/tensorclass_persistence.h"
#include "tensordict/detail/tensorclass_support.h"
#include "tensordict/tensorclass_surface.h"

namespace tensordict {

template <class Derived>
class TensorClass;

// Argument types of the generated constructors.
// A batch size held inline up to 6 dims, so that building a tensorclass (and
// every op that makes one) allocates nothing for it. Built from a braced
// list, a std::vector or an IntArrayRef.
class BatchSizeArg : public c10::SmallVector<int64_t, 6> {
 public:
  BatchSizeArg() = default;
  BatchSizeArg(std::initializer_list<int64_t> dims) : SmallVector(dims) {}
  BatchSizeArg(const std::vector<int64_t>& dims) : SmallVector(dims.begin(), dims.end()) {}
  BatchSizeArg(at::IntArrayRef dims) : SmallVector(dims.begin(), dims.end()) {}
};
using DeviceArg = std::optional<at::Device>;

template <class Derived>
class TensorClass : public TensorClassSurface<Derived>, public TensorClassPersistence<Derived> {
 public:
  TensorClass() = default;

  // ---- static description -------------------------------------------------------
  static constexpr const schema::ClassInfo& schema() {
    return schema::FieldTable<Derived>::info;
  }
  static constexpr std::span<const schema::FieldInfo> fields() { return schema().fields; }
  static constexpr std::size_t num_fields() { return detail::num_fields_v<Derived>; }

  // ---- metadata ---------------------------------------------------------------
  at::IntArrayRef batch_size() const { return tc_batch_size_; }
  at::IntArrayRef sizes() const { return tc_batch_size_; }
  int64_t batch_dims() const { return static_cast<int64_t>(tc_batch_size_.size()); }
  int64_t dim() const { return batch_dims(); }
  int64_t numel() const {
    int64_t n = 1;
    for (int64_t s : tc_batch_size_) n *= s;
    return n;
  }
  // tensordict's len(): the first batch dim.
  int64_t len() const { return tc_batch_size_.empty() ? 0 : tc_batch_size_[0]; }
  const DeviceArg& device() const { return tc_device_; }
  // One entry per batch dim (all nullopt when unnamed).
  Names names() const { return tc_names_.empty() ? Names(tc_batch_size_.size()) : tc_names_; }
  bool has_names() const { return !tc_names_.empty(); }
  // Names the batch dims (one per dim; an empty list removes the names).
  Derived& rename_(Names names);
  // tensordict's refine_names: unnamed dims take the given names, named dims
  // must already have them; one "..." entry stands for the dims not listed.
  Derived& refine_names(const Names& names);
  // tensordict's is_shared() (TensorDict::is_shared): true after
  // share_memory_() until unlock_(), and always on a CUDA device; views that
  // keep the tensors (index with ints, None, Ellipsis and slices from the
  // start; unbind, split, chunk, view, permute, transpose, squeeze,
  // unsqueeze) keep the mark, and are locked.
  bool is_shared() const;
  // tensordict's share_memory_(), through TensorDict::share_memory_ (whose
  // refusals it shares: a field without a storage, such as a sparse tensor):
  // every CPU tensor field's storage moves into shared memory in place, so
  // this instance's tensors (and any other view of them) are in shared
  // memory; the instance and its nested tensorclasses are marked shared and
  // locked. On a CUDA device nothing changes. Non-tensor fields stay this
  // process's. A memory-mapped instance is refused (memmap and shared memory
  // are exclusive).
  Derived& share_memory_();

  // Locking reaches every nested tensorclass member, as it reaches nested
  // tensordicts (members are values: unlocking the root unlocks them too).
  Derived& lock_();
  Derived& unlock_();
  bool is_locked() const { return tc_locked_; }

  // tensordict refuses truth testing.
  explicit operator bool() const = delete;

  // ---- construction -------------------------------------------------------------
  // Sets batch size, device and names, moves tensors to `device`, then
  // validates every field against the schema (generated constructors call
  // this). A nested member that was never given a batch size takes ours.
  Derived& init_(BatchSizeArg batch_size, DeviceArg device = std::nullopt, Names names = {});

  // Checks every field against the schema: required fields, dtypes, fixed and
  // symbolic dims, the batch prefix, nested batch sizes. Throws naming the
  // class, field and dim.
  void validate() const;

  // ---- fields by name ---------------------------------------------------------------
  bool contains(const NestedKey& key) const;
  // The tensor at `key` (a field name, or a path into nested tensorclasses).
  at::Tensor get(const NestedKey& key) const;
  // Sets the tensor field at `key` after validating it (moved to our device).
  Derived& set(const NestedKey& key, const at::Tensor& value);

  // ---- indexing --------------------------------------------------------------------
  // obj[index] over the batch dims; basic indices give views.
  Derived index(at::ArrayRef<TensorIndex> index) const;
  // obj[index] = value, field by field.
  Derived& index_put_(at::ArrayRef<TensorIndex> index, const Derived& value);
  Derived& index_put_(at::ArrayRef<TensorIndex> index, const at::Tensor& value);
  Derived& index_put_(at::ArrayRef<TensorIndex> index, const at::Scalar& value);
  // obj[index] = td: each tensor of `td` (nested classes as nested
  // tensordicts) written into its field's tensor. Every key is checked
  // before anything is written: one that is no set tensor field is a KeyError.
  Derived& index_put_(at::ArrayRef<TensorIndex> index, const TensorDict& value);

  // tensordict's batch_size setter: every tensor field must start with
  // `batch_size`; a nested class whose batch size does not takes it; dim
  // names are kept for the dims that remain. The schema is checked again: when
  // anything fails, nothing changes.
  Derived& set_batch_size(at::IntArrayRef batch_size);

  // ---- stack, cat, unbind, split (shape_plan.h: the dynamic core's plans) -------------------
  static Derived stack(const std::vector<Derived>& list, int64_t dim = 0);
  static Derived cat(const std::vector<Derived>& list, int64_t dim = 0);
  std::vector<Derived> unbind(int64_t dim = 0) const;
  std::vector<Derived> split(at::IntArrayRef split_sizes, int64_t dim = 0) const;
  std::vector<Derived> split(int64_t split_size, int64_t dim = 0) const;
  std::vector<Derived> chunk(int64_t chunks, int64_t dim = 0) const;

  // ---- shape ops on batch dims (shape_plan.h) ----------------------------------------------------
  Derived reshape(at::IntArrayRef shape) const;
  Derived view(at::IntArrayRef shape) const;
  Derived permute(at::IntArrayRef dims) const;
  Derived transpose(int64_t dim0, int64_t dim1) const;
  // Without a dim, removes every batch dim of size 1.
  Derived squeeze(std::optional<int64_t> dim = std::nullopt) const;
  Derived unsqueeze(int64_t dim) const;
  // The new batch size's trailing dims broadcast against the current ones (-1 keeps a dim).
  Derived expand(at::IntArrayRef batch_size) const;
  // No batch dims: batch [1], as torch.flatten of a 0-dim tensor.
  Derived flatten(int64_t start_dim = 0, int64_t end_dim = -1) const;
  Derived unflatten(int64_t dim, at::IntArrayRef sizes) const;

  // ---- device, dtype, copies ------------------------------------------------------------------
  // TensorDict::to's moves (one block for a consolidated instance, pinned
  // staging, one synchronisation; non_blocking: wait with
  // tensordict::synchronize), through the tensordict form.
  // tensordict: an instance already on `device` is returned as it is; the
  // result keeps the lock (as to(dtype) does).
  Derived to(at::Device device, const ToOptions& options = {}) const;
  // TensorDict::pin_memory: the host tensors in one pinned allocation.
  Derived pin_memory() const;

  // ---- one storage (TensorDict::consolidate) ---------------------------------------------
  // tensordict's consolidate(): a copy whose tensor fields are views of one
  // flat storage; non-tensor fields and nested tensorclasses are kept. The
  // copy is locked; unlock_() ends the consolidation.
  Derived consolidate(const ConsolidateOptions& options = {}) const;
  // Whether every tensor field is still a view of that storage.
  bool is_consolidated() const;
  // That storage (a flat uint8 tensor), or nullopt when not consolidated.
  std::optional<at::Tensor> consolidated_storage() const;
  // Casts every tensor field (tensordict's to(dtype)). A field whose schema
  // declares another dtype makes it throw ValueError naming the
  // field (a typed result always passes its own validate()); the tensordict
  // form casts freely: to_tensordict().to(dtype).
  Derived to(at::ScalarType dtype) const;
  Derived cpu() const;
  Derived clone() const;
  Derived detach() const;
  Derived contiguous() const;

  // ---- apply, math, comparison ----------------------------------------------------------------
  // fn(tensor) -> tensor for every tensor member, nested ones included; the
  // batch size, device and non-tensor fields are kept.
  template <class Fn>
  Derived apply(Fn&& fn) const {
    return same_batch_(fn);
  }
  // fn(ours, theirs) -> tensor, pairing the tensor members of two instances
  // (TensorDict::apply(fn, other), tensordict's td.apply(fn, other)).
  template <class Fn>
  Derived apply(Fn&& fn, const Derived& other) const {
    Derived out = shell_();
    detail::tc(out).set_locked_tree_(false);
    map2_into_(out, other, fn);
    return out;
  }
  // Elementwise where(condition, self, other): `condition` covers the batch
  // dims (or a prefix of them) and broadcasts over the feature dims.
  Derived where(const at::Tensor& condition, const Derived& other) const;
  Derived where(const at::Tensor& condition, const at::Scalar& other) const;
  Derived masked_fill(const at::Tensor& mask, const at::Scalar& value) const;
  Derived& masked_fill_(const at::Tensor& mask, const at::Scalar& value);
  Derived& zero_();

  // ---- conversion ----------------------------------------------------------------------
  // The object as a TensorDict sharing its tensors (Python's tc._tensordict):
  // one entry per set tensor field, nested tensorclasses as nested
  // tensordicts, non-tensor fields as non-tensor data; unset optional fields
  // are left out. Writes into its tensors are writes into the fields.
  TensorDict tensordict() const;
  // The same, with the tensors copied (tensordict's to_tensordict()).
  TensorDict to_tensordict() const;
  // The inverse, validated. Non-tensor fields come from the tensordict's
  // non-tensor entries, else from `non_tensor` (defaults when omitted). A key
  // of `td` that is no field is a KeyError unless `options.strict` is false.
  static Derived from_tensordict(const TensorDict& td, const Derived& non_tensor = Derived{},
                                 const FromTensorDictOptions& options = {});
  static Derived from_tensordict(const TensorDict& td, const FromTensorDictOptions& options);

  // ---- printing -----------------------------------------------------------------------
  // tensordict's tensorclass repr: compact unless set_printoptions says
  // compact=false (print_options.h).
  std::string repr() const;
  friend std::ostream& operator<<(std::ostream& os, const Derived& x) { return os << detail::tc(x).repr(); }

 private:
  // The entries of the compact repr: the set fields by type, sorted as
  // sort_keys says, then the unset ones as None (tensordict's _compact_body).
  std::vector<detail::CompactNode> compact_fields_(const PrintOptions& options) const;
  // compact=false: tensordict's detailed tensorclass repr.
  std::string detailed_repr_(const PrintOptions& options) const;
  template <class>
  friend class TensorClass;
  friend class TensorClassSurface<Derived>;
  friend class TensorClassPersistence<Derived>;
  template <class>
  friend class TensorClassPersistence;

  Derived& derived() { return static_cast<Derived&>(*this); }
  const Derived& derived() const { return static_cast<const Derived&>(*this); }

  // The field visitor (tensorclass_fields.h) over this class's fields.
  template <class H, class... Objs>
  static void visit_fields_(H&& handler, Objs&... objs) {
    detail::visit_fields<Derived>(handler, objs...);
  }
  template <class H, class... Objs>
  static bool visit_field_named_(std::string_view name, H&& handler, Objs&... objs) {
    return detail::visit_field_named<Derived>(name, handler, objs...);
  }

  // fn(tensor) for every set tensor field of `self`, nested ones included.
  // `batched_only`: UnbatchedTensor fields left out.
  template <class Self, class Fn>
  static void for_each_tensor_(Self& self, Fn&& fn, bool batched_only = false) {
    visit_fields_(detail::Overloaded{[&](detail::TensorField, auto field, auto& m) {
                                       if (m.defined() && !(batched_only && field.info().unbatched)) fn(m);
                                     },
                                     [&](detail::NestedField, auto, auto& m) {
                                       if (auto* n = detail::present(m)) detail::tc(*n).for_each_tensor_(*n, fn, batched_only);
                                     }},
                  self);
  }
  // fn(member) for every present nested tensorclass member of this level.
  template <class Fn>
  void for_each_nested_(Fn&& fn) {
    visit_fields_(
        [&](detail::NestedField, auto, auto& m) {
          if (auto* n = detail::present(m)) fn(*n);
        },
        derived());
  }
  // A non-tensor field holds one value for the whole batch: an indexed write
  // of another value is refused before anything is written (tensordict
  // would make the field a NonTensorStack, which the field cannot hold).
  static void check_same_data_(const Derived& self, const Derived& other);
  // fn(ours, theirs) for every tensor field set in both (an UnbatchedTensor
  // field is the whole batch's: theirs is copied into ours whole, as
  // tensordict's indexed writes do); an optional nested class present in one
  // only is an error (a value would be lost, or missing).
  template <class Fn>
  static void for_each_pair_(Derived& self, const Derived& other, Fn&& fn) {
    visit_fields_(detail::Overloaded{[&](detail::TensorField, auto field, auto& a, const auto& b) {
                                       if (!a.defined() || !b.defined()) return;
                                       if (field.info().unbatched) {
                                         a.copy_(b);
                                       } else {
                                         fn(a, b);
                                       }
                                     },
                                     [&](detail::NestedField, auto field, auto& a, const auto& b) {
                                       auto* x = detail::present(a);
                                       const auto* y = detail::present(b);
                                       if (x && y) {
                                         detail::tc(*x).for_each_pair_(*x, *y, fn);
                                       } else if (x || y) {
                                         detail::throw_optional_mismatch("write", field_path_(field), 1);
                                       }
                                     }},
                  self, other);
  }

  // index_put_'s writes into the NonTensorStack fields of `self`, nested
  // ones included: `other`'s values at `bi` (put_non_tensor, as the dynamic
  // core writes a non-tensor entry at an index).
  static void put_stacks_(Derived& self, const Derived& other, const BatchIndex& bi);
  // Whether `path` (from `at`) names a NonTensorStack field, whose type
  // `value` must fit (else the field's TypeError); with `bi`, `value` is
  // written there at `bi`. index_put_ checks every key (bi null) before it
  // writes any.
  bool put_stack_at_(std::span<const std::string> path, std::size_t at, const BatchIndex* bi,
                     const NonTensorData& value);
  // where(condition, other) for the NonTensorStack fields of `out` (a result
  // holding this instance's values): each element from us where `condition`
  // holds, else from `other`, picked as the dynamic core picks non-tensor
  // elements (shared_value_ids).
  void where_stacks_(Derived& out, const Derived& other, const at::Tensor& condition) const;

  // detail::present(dst), after giving the nested field `dst` the presence
  // of `src` (a detail::present() result): reset when it is null, else, if
  // absent, a shell of it.
  template <class M, class N>
  static auto* mirror_presence_(M& dst, const N* src) {
    if constexpr (is_optional_nested_v<M>) {
      if (!src) {
        dst.reset();
      } else if (!dst) {
        dst.emplace(detail::tc(*src).shell_());
      }
    }
    return detail::present(dst);
  }

  // "Class.field", for messages.
  template <class Field>
  static std::string field_path_(Field field) {
    return std::string(schema().name) + "." + std::string(field.info().name);
  }
  static bool is_field_(std::string_view name);

  // ---- batch metadata -------------------------------------------------------------------
  // Names with no name left mean "unnamed" (an empty list).
  static Names unnamed_if_empty_(Names names);
  void set_names_(Names names);

  // An unnamed instance of a class whose schema names its batch dims takes
  // those names, as Python's generated class does. Unnamed nested members
  // then take ours for their leading dims, as tensordict names nested
  // tensordicts.
  void name_from_schema_();

  void set_device_(DeviceArg device);

  // Each level's device from the same level of `form`, a tensordict form of
  // this object (TensorDict::auto_device_ decided them).
  void set_device_tree_(const TensorDict& form);

  // The lock of this level and of every nested tensorclass member. An
  // unlocked instance is not shared (tensordict's rule: a field set now
  // would not be in shared memory), although its tensors stay there.
  void set_locked_tree_(bool locked);
  // share_memory_()'s mark on this level and every nested tensorclass member.
  void set_shared_tree_(bool shared);
  // `out`, a view of this instance's tensors by an op tensordict counts as
  // keeping share_memory_()'s mark: marked and locked when this one is marked.
  Derived kept_shared_(Derived out) const;
  std::vector<Derived> kept_shared_(std::vector<Derived> out) const;

  // ---- schema checks -----------------------------------------------------------------------
  // `trust_built`: skip the fields of nested members that a constructor
  // validated (their batch prefix is still checked).
  void validate_(const detail::FieldPath& path, bool trust_built) const;

  // A tensordict the dynamic core derived from td_form_() by an op that
  // keeps the schema's shapes, as this class: declared dtypes must be kept.
  Derived typed_(const TensorDict& td, const char* op) const;
  // Throws naming the field when `dtype_of(tensor)` differs from a tensor
  // field's declared dtype (fields with an open dtype take any).
  template <class DtypeOf>
  void check_dtypes_(const detail::FieldPath& path, const char* op, const DtypeOf& dtype_of) const {
    visit_fields_(detail::Overloaded{[&](detail::TensorField, auto field, const auto& m) {
                                       if (!m.defined() || field.info().dtype.empty()) return;
                                       const detail::FieldPath sub{&path, field.info().name};
                                       detail::check_declared_dtype(op, sub, field.info(), dtype_of(m));
                                     },
                                     [&](detail::NestedField, auto field, const auto& m) {
                                       const auto* n = detail::present(m);
                                       if (n)
                                         detail::tc(*n).check_dtypes_(detail::FieldPath{&path, field.info().name}, op, dtype_of);
                                     }},
                  derived());
  }

  // ---- the tensordict form -------------------------------------------------------------------
  TensorDict tensordict_form_(detail::NonTensorFields which) const;
  // An instance as the schema's defaults make it (h5 leaves out a non-string
  // field that holds its default).
  static const Derived& defaults_();

  // The tensordict form with our consolidated storage (if any), so that the
  // dynamic core's moves treat it as one block.
  TensorDict td_form_() const;
  // This instance's non-tensor fields over the tensors of `td`, a tensordict
  // the core derived from td_form_(); consolidated and locked when `td` is.
  Derived from_form_(const TensorDict& td) const;

  // Reads the fields from a tensordict form: tensors, nested tensorclasses,
  // and non-tensor fields held as non-tensor data (what load_memmap through
  // TensorDict gives); an absent non-tensor field keeps its current value.
  void from_td_(const TensorDict& td, bool strict = true);

  // A non-tensor field from the non-tensor entry `value`; errors name `sub`
  // and call the entry `what`.
  template <class M>
  static void read_non_tensor_(M& m, const Value& value, const std::string& sub, const schema::FieldInfo& field,
                               std::string_view what);

  // A NonTensorStack field from the non-tensor entry `value`: every value
  // must fit the element type V (errors as read_non_tensor_'s).
  template <class V>
  static void read_stack_(NonTensorStack<V>& m, const Value& value, const std::string& sub,
                          const schema::FieldInfo& field, std::string_view what);

  // The NonTensorStack fields (nested ones included) from `form`, a form of
  // this object an in-place op of the dynamic core wrote into: its tensors
  // are ours, its non-tensor entries new values.
  void read_stacks_(const TensorDict& form);

  // ---- new instances --------------------------------------------------------------------
  // A copy of everything but the tensors (metadata and non-tensor fields, at
  // every level): what an op that sets every tensor starts from. Copying the
  // whole struct would touch every tensor's refcount twice for nothing.
  Derived shell_() const;
  void copy_shell_(const Derived& src);

  // A copy with a new batch size and names (empty: none), every tensor mapped.
  template <class Fn>
  Derived mapped_(BatchSizeArg batch, Fn&& fn, Names names = {}) const {
    Derived out = shell_();
    detail::tc(out).tc_batch_size_ = std::move(batch);
    detail::tc(out).tc_names_ = unnamed_if_empty_(std::move(names));
    detail::tc(out).set_locked_tree_(false);
    map_into_(out, fn, batch_dims(), /*moves_batch=*/true);
    return out;
  }
  // Same batch size and names.
  template <class Fn>
  Derived same_batch_(Fn&& fn) const {
    Derived out = shell_();
    detail::tc(out).set_locked_tree_(false);
    map_into_(out, fn, batch_dims(), /*moves_batch=*/false);
    return out;
  }
  // `out` (a conversion of this instance: to(dtype), to(device)) locked when
  // this instance is, as tensordict keeps the lock through to().
  Derived locked_like_(Derived out) const;
  // A shape plan (shape_plan.h) applied to every tensor field. The result
  // keeps the lock, as the dynamic core's shape ops do (tensordict: the same
  // data seen through another shape).
  template <class Plan>
  Derived planned_(const Plan& plan) const {
    Derived out = mapped_(BatchSizeArg(at::IntArrayRef(plan.batch)), plan, plan.names);
    if (tc_locked_) detail::tc(out).set_locked_tree_(true);
    return out;
  }
  template <class Plan>
  std::vector<Derived> planned_pieces_(const Plan& plan) const {
    std::vector<Derived> out(plan.batches.size(), shell_());
    std::vector<Derived*> ptrs;
    const Names piece_names = unnamed_if_empty_(plan.names);
    for (std::size_t i = 0; i < out.size(); ++i) {
      detail::tc(out[i]).tc_batch_size_ = BatchSizeArg(at::IntArrayRef(plan.batches[i]));
      detail::tc(out[i]).tc_names_ = piece_names;
      detail::tc(out[i]).set_locked_tree_(false);
      ptrs.push_back(&out[i]);
    }
    pieces_into_(ptrs, plan, batch_dims());
    return out;
  }
  static std::vector<at::IntArrayRef> batch_sizes_(const std::vector<Derived>& list);

  // A nested member's batch size in an op's output `parent_batch`: the
  // parent's new batch size, then the member's own dims past the source's
  // `nb` batch dims.
  template <class N>
  static BatchSizeArg nested_batch_(at::IntArrayRef parent_batch, const N& src, int64_t nb) {
    BatchSizeArg b = parent_batch;
    b.insert(b.end(), detail::tc(src).tc_batch_size_.begin() + std::min<int64_t>(nb, detail::tc(src).batch_dims()), detail::tc(src).tc_batch_size_.end());
    return b;
  }

  // out.member = fn(this->member) for every tensor member (recursing); `nb` is
  // the number of batch dims of the op's source. `moves_batch`: fn is a batch
  // op (index, shape plan), which NonTensorStack members go through too;
  // else (a value op: clone, to, apply) they keep the shell's values.
  template <class Fn>
  void map_into_(Derived& out, Fn&& fn, int64_t nb, bool moves_batch) const {
    visit_fields_(detail::Overloaded{[&](detail::TensorField, auto field, const auto& src, auto& dst) {
                                       // A batch op carries an UnbatchedTensor field unchanged.
                                       if (src.defined()) dst = moves_batch && field.info().unbatched ? src : fn(src);
                                     },
                                     [&](detail::StackField, auto, const auto& src, auto& dst) {
                                       using M = std::remove_cvref_t<decltype(dst)>;
                                       if (moves_batch && src.is_stack())
                                         dst = M(detail::map_non_tensor(src.data(), [&](const at::Tensor& ids) { return fn(ids); }));
                                     },
                                     [&](detail::NestedField, auto, const auto& src, auto& dst) {
                                       const auto* s = detail::present(src);
                                       auto* d = mirror_presence_(dst, s);
                                       if (!s) return;
                                       if (d != s) {
                                         detail::tc(*d).tc_batch_size_ = nested_batch_(detail::tc(out).tc_batch_size_, *s, nb);
                                         if (detail::tc(*d).tc_names_.size() != detail::tc(*d).tc_batch_size_.size()) detail::tc(*d).tc_names_.clear();
                                         detail::tc(*d).tc_locked_ = false;
                                       }
                                       detail::tc(*s).map_into_(*d, fn, nb, moves_batch);
                                     }},
                  derived(), out);
  }

  // out.member = fn(this->member, other.member), pairing the tensor members.
  template <class Fn>
  void map2_into_(Derived& out, const Derived& other, Fn&& fn) const {
    visit_fields_(detail::Overloaded{[&](detail::TensorField, auto field, const auto& a, const auto& b, auto& o) {
                                       if (a.defined() && b.defined()) {
                                         o = fn(a, b);
                                       } else if (a.defined() != b.defined()) {
                                         detail::throw_optional_mismatch("apply", field_path_(field), 1);
                                       }
                                     },
                                     [&](detail::NestedField, auto field, const auto& a, const auto& b, auto& o) {
                                       const auto* x = detail::present(a);
                                       const auto* y = detail::present(b);
                                       if (x && y) {
                                         detail::tc(*x).map2_into_(*mirror_presence_(o, x), *y, fn);
                                       } else if (x || y) {
                                         detail::throw_optional_mismatch("apply", field_path_(field), 1);
                                       }
                                     }},
                  derived(), other, out);
  }

  // Pieces: fn(tensor, out) writes one tensor per piece (shape::Unbind, shape::Split).
  template <class Fn>
  void pieces_into_(const std::vector<Derived*>& outs, Fn&& fn, int64_t nb) const {
    std::vector<at::Tensor> parts(outs.size());  // one field's pieces, reused field after field
    visit_fields_(detail::Overloaded{[&](detail::TensorField, auto field, const auto& src) {
                                       if (!src.defined()) return;
                                       if (field.info().unbatched) {  // every piece shares it
                                         for (std::size_t i = 0; i < outs.size(); ++i) field.of(*outs[i]) = src;
                                         return;
                                       }
                                       fn(src, parts.data());
                                       for (std::size_t i = 0; i < outs.size(); ++i)
                                         field.of(*outs[i]) = std::move(parts[i]);
                                     },
                                     [&](detail::StackField, auto field, const auto& src) {
                                       using M = std::remove_cvref_t<decltype(src)>;
                                       if (!src.is_stack()) return;  // the pieces are shells holding its value
                                       fn(src.data().ids(), parts.data());
                                       for (std::size_t i = 0; i < outs.size(); ++i)
                                         field.of(*outs[i]) = M(NonTensorData::from_ids(src.data().pool(), std::move(parts[i])));
                                     },
                                     [&](detail::NestedField, auto field, const auto& src) {
                                       pieces_nested_(outs, field, detail::present(src), fn, nb);
                                     }},
                  derived());
  }

  // After libtorch refused to stack/cat one field's tensors: throws the named
  // error for the first tensor whose shape past the `nb` batch dims differs
  // from the first one's, if there is one. Checked only on failure: stack and
  // cat run for every field of every object, and a check up front cost
  // stack64 5%.
  static void name_feature_mismatch_(const std::vector<at::Tensor>& tensors, int64_t nb, const char* op,
                                     const std::string& path);
  // stack / cat: `plan` gives the batch size and names.
  template <class Fn>
  static Derived combine_(const std::vector<Derived>& list, shape::Combined plan, Fn&& fn, const char* op) {
    std::vector<const Derived*> srcs;
    for (const auto& x : list) srcs.push_back(&x);
    Derived out = detail::tc(list.front()).shell_();
    detail::tc(out).tc_batch_size_ = BatchSizeArg(at::IntArrayRef(plan.batch));
    detail::tc(out).tc_names_ = unnamed_if_empty_(std::move(plan.names));
    detail::tc(out).set_locked_tree_(false);
    for (const auto* s : srcs) {
      if (detail::tc(*s).tc_device_ != detail::tc(out).tc_device_) detail::tc(out).tc_device_ = std::nullopt;
    }
    combine_into_(out, srcs, fn, detail::tc(list.front()).batch_dims(), op, std::string(schema().name));
    return out;
  }
  template <class Fn>
  static void combine_into_(Derived& out, const std::vector<const Derived*>& srcs, Fn&& fn, int64_t nb, const char* op,
                            const std::string& path) {
    std::vector<at::Tensor> tensors;
    // The field's path, only built for an error or a nested level.
    auto sub = [&](auto field) { return path + "." + std::string(field.info().name); };
    visit_fields_(detail::Overloaded{[&](detail::TensorField, auto field, auto& o) {
                                       tensors.clear();
                                       const bool set = field.of(*srcs[0]).defined();
                                       for (std::size_t i = 0; i < srcs.size(); ++i) {
                                         const at::Tensor& t = field.of(*srcs[i]);
                                         if (t.defined() != set) detail::throw_optional_mismatch(op, sub(field), i);
                                         if (set) tensors.push_back(t);
                                       }
                                       if (!set) {
                                         o = at::Tensor();
                                         return;
                                       }
                                       if (field.info().unbatched) {  // the first one's, as the dynamic core's stack
                                         o = detail::first_unbatched(tensors);
                                         return;
                                       }
                                       try {
                                         o = fn(tensors);
                                       } catch (const c10::Error&) {
                                         name_feature_mismatch_(tensors, nb, op, sub(field));
                                         throw;
                                       }
                                     },
                                     [&](detail::NestedField, auto field, auto& o) {
                                       combine_nested_(out, detail::present(o), srcs, field, fn, nb, op, sub(field));
                                     },
                                     [&](detail::DataField, auto field, auto&) {
                                       const auto& first = field.of(*srcs[0]);
                                       for (std::size_t i = 1; i < srcs.size(); ++i) {
                                         const auto& x = field.of(*srcs[i]);
                                         if (x == first) continue;
                                         detail::throw_non_tensor_mismatch(op, sub(field), detail::python_repr(first),
                                                                           detail::python_repr(x), i);
                                       }
                                     },
                                     [&](detail::StackField, auto field, auto& o) {
                                       using M = std::remove_cvref_t<decltype(o)>;
                                       std::vector<NonTensorData> items;
                                       std::vector<std::vector<int64_t>> batches;
                                       for (const auto* s : srcs) {
                                         items.push_back(field.of(*s).data());
                                         batches.push_back(detail::tc(*s).batch_size().vec());
                                       }
                                       o = M(detail::combine_non_tensor(items, batches, fn));
                                     }},
                  out);
  }

  // pieces_into_ and combine_into_ for a nested tensorclass field. Functions
  // of their own, with the nested class deduced from an argument: GCC 13
  // crashes (tsubst_copy) on types built inside the visitor's lambdas from
  // the field's type (std::vector<N*> and the like).
  // The outputs are shells of this object: an optional class is present in
  // them exactly when it is here.
  template <class Field, class N, class Fn>
  static void pieces_nested_(const std::vector<Derived*>& outs, Field field, const N* src, Fn& fn, int64_t nb) {
    if (!src) return;
    std::vector<N*> sub;
    for (Derived* o : outs) {
      N& dst = *detail::present(field.of(*o));
      detail::tc(dst).tc_batch_size_ = nested_batch_(detail::tc(*o).tc_batch_size_, *src, nb);
      detail::tc(dst).tc_names_.clear();
      sub.push_back(&dst);
    }
    detail::tc(*src).pieces_into_(sub, fn, nb);
  }
  // An optional class must be present in every input or in none.
  template <class N, class Field, class Fn>
  static void combine_nested_(const Derived& out, N* dst, const std::vector<const Derived*>& srcs, Field field, Fn& fn,
                              int64_t nb, const char* op, const std::string& path) {
    std::vector<const N*> sub_srcs;
    for (std::size_t i = 0; i < srcs.size(); ++i) {
      const N* s = detail::present(field.of(*srcs[i]));
      if ((s == nullptr) != (dst == nullptr)) detail::throw_optional_mismatch(op, path, i);
      sub_srcs.push_back(s);
    }
    if (!dst) return;  // absent in every input, as in `out` (a shell of the first)
    detail::tc(*dst).tc_batch_size_ = nested_batch_(detail::tc(out).tc_batch_size_, *sub_srcs.front(), nb);
    detail::tc(*dst).tc_names_.clear();
    detail::tc(*dst).tc_device_ = detail::tc(out).tc_device_;
    TensorClass<N>::combine_into_(*dst, sub_srcs, fn, nb, op, path);
  }

  // ---- fields by path -----------------------------------------------------------------------
  const at::Tensor* find_tensor_(std::span<const std::string> path, std::size_t at, bool required) const;

  void set_path_(std::span<const std::string> path, std::size_t at, const at::Tensor& value);

  // Reads the fields from a loaded tensordict form (TensorClassPersistence's
  // from_loaded_): every stored key must be a field; batch sizes as stored
  // or, for h5, inferred from the schema.
  void read_loaded_(const TensorDict& td, const std::string& path, std::optional<at::IntArrayRef> parent,
                    bool infer_batch);

  BatchSizeArg tc_batch_size_;
  DeviceArg tc_device_;
  Names tc_names_;  // empty: unnamed
  bool tc_locked_ = false;
  // tensordict's `_is_shared`: set by share_memory_() and the views that keep
  // it, never copied with the rest of the metadata (copy_shell_).
  bool tc_shared_ = false;
  // The storage consolidate() made, which the tensor fields view (a claim
  // that is_consolidated() checks); not copied by ops that make new tensors.
  at::Tensor tc_consolidated_storage_;
  // Built by a validating constructor (init_). A parent's constructor then
  // checks only this member's batch prefix: its fields were checked when it
  // was built, and later writes to public members are unchecked until
  // validate(), as they are for the parent's own members.
  bool tc_validated_ = false;
};

}  // namespace tensordict
