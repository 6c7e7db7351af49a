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
#include "tensordict/shape_plan.h"
#include "tensordict/tensorclass_fields.h"
#include "tensordict/tensorclass_persistence.h"
#include "tensordict/tensorclass_support.h"
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
  Derived& rename_(Names names) {
    set_names_(std::move(names));
    return derived();
  }
  // tensordict's refine_names: unnamed dims take the given names, named dims
  // must already have them; one "..." entry stands for the dims not listed.
  Derived& refine_names(const Names& names) {
    set_names_(shape::refined_names(this->names(), names));
    return derived();
  }
  // tensordict's is_shared() (TensorDict::is_shared): true after
  // share_memory_() until unlock_(), and always on a CUDA device; views that
  // keep the tensors (index with ints, None, Ellipsis and slices from the
  // start; unbind, split, chunk, view, permute, transpose, squeeze,
  // unsqueeze) keep the mark, and are locked.
  bool is_shared() const {
    if (tc_device_ && !this->is_memmap()) return tc_device_->is_cuda() || tc_shared_;
    return tc_shared_;
  }
  // tensordict's share_memory_(), through TensorDict::share_memory_ (whose
  // refusals it shares: a field without a storage, such as a sparse tensor):
  // every CPU tensor field's storage moves into shared memory in place, so
  // this instance's tensors (and any other view of them) are in shared
  // memory; the instance and its nested tensorclasses are marked shared and
  // locked. On a CUDA device nothing changes. Non-tensor fields stay this
  // process's. A memory-mapped instance is refused (memmap and shared memory
  // are exclusive).
  Derived& share_memory_() {
    if (this->is_memmap()) throw RuntimeError("share_memory_: memmap and shared memory are mutually exclusive features.");
    if (tc_device_ && tc_device_->is_cuda()) return derived();
    tensordict_form_(detail::NonTensorFields::Stacks).share_memory_();
    set_shared_tree_(true);
    set_locked_tree_(true);
    return derived();
  }

  // Locking reaches every nested tensorclass member, as it reaches nested
  // tensordicts (members are values: unlocking the root unlocks them too).
  Derived& lock_() {
    set_locked_tree_(true);
    return derived();
  }
  Derived& unlock_() {
    set_locked_tree_(false);  // ends the shared mark too
    // tensordict's rule: unlocked, its fields may be replaced, which the
    // consolidated storage would no longer describe.
    tc_consolidated_storage_ = at::Tensor();
    return derived();
  }
  bool is_locked() const { return tc_locked_; }

  // tensordict refuses truth testing.
  explicit operator bool() const = delete;

  // ---- construction -------------------------------------------------------------
  // Sets batch size, device and names, moves tensors to `device`, then
  // validates every field against the schema (generated constructors call
  // this). A nested member that was never given a batch size takes ours.
  Derived& init_(BatchSizeArg batch_size, DeviceArg device = std::nullopt, Names names = {}) {
    tc_batch_size_ = std::move(batch_size);
    tc_device_ = device;
    set_names_(std::move(names));
    visit_fields_(detail::Overloaded{[&](detail::TensorField, auto, auto& m) {
                                       if (device && m.defined()) m = m.to(*device);
                                     },
                                     [&](detail::NestedField, auto, auto& m) {
                                       auto* n = detail::present(m);
                                       if (!n) return;
                                       if (detail::tc(*n).tc_batch_size_.empty() && !tc_batch_size_.empty()) {
                                         detail::tc(*n).init_(tc_batch_size_, device);
                                       } else if (device) {
                                         detail::tc(*n).for_each_tensor_(*n, [&](at::Tensor& t) { t = t.to(*device); });
                                         detail::tc(*n).set_device_(device);
                                       }
                                     }},
                  derived());
    name_from_schema_();
    // Nested members built by their own constructors were checked then.
    validate_(detail::FieldPath{nullptr, schema().name}, /*trust_built=*/true);
    tc_validated_ = true;
    return derived();
  }

  // Checks every field against the schema: required fields, dtypes, fixed and
  // symbolic dims, the batch prefix, nested batch sizes. Throws naming the
  // class, field and dim.
  void validate() const { validate_(detail::FieldPath{nullptr, schema().name}, /*trust_built=*/false); }

  // ---- fields by name ---------------------------------------------------------------
  bool contains(const NestedKey& key) const { return find_tensor_(key.path(), 0, false) != nullptr; }
  // The tensor at `key` (a field name, or a path into nested tensorclasses).
  at::Tensor get(const NestedKey& key) const { return *find_tensor_(key.path(), 0, true); }
  // Sets the tensor field at `key` after validating it (moved to our device).
  Derived& set(const NestedKey& key, const at::Tensor& value) {
    set_path_(key.path(), 0, value);
    return derived();
  }

  // ---- indexing --------------------------------------------------------------------
  // obj[index] over the batch dims; basic indices give views.
  Derived index(at::ArrayRef<TensorIndex> index) const {
    const BatchIndex bi(index, tc_batch_size_);
    Derived out = shell_();
    detail::tc(out).tc_batch_size_ = bi.result_batch_size().vec();
    detail::tc(out).tc_names_ = has_names() ? unnamed_if_empty_(bi.result_names(tc_names_)) : Names{};
    detail::tc(out).set_locked_tree_(false);
    map_into_(
        out, [&](const at::Tensor& t) { return bi.apply(t); }, batch_dims(), /*moves_batch=*/true);
    return detail::index_keeps_shared(index) ? kept_shared_(std::move(out)) : out;
  }
  // obj[index] = value, field by field.
  Derived& index_put_(at::ArrayRef<TensorIndex> index, const Derived& value) {
    const BatchIndex bi(index, tc_batch_size_);
    check_same_data_(derived(), value);
    for_each_pair_(derived(), value, [&](const at::Tensor& dst, const at::Tensor& src) { bi.put(dst, src); });
    put_stacks_(derived(), value, bi);
    return derived();
  }
  Derived& index_put_(at::ArrayRef<TensorIndex> index, const at::Tensor& value) {
    const BatchIndex bi(index, tc_batch_size_);
    // An UnbatchedTensor field has no batch dims to broadcast into: left as it is.
    for_each_tensor_(derived(), [&](const at::Tensor& dst) { bi.put(dst, value); }, /*batched_only=*/true);
    return derived();
  }
  Derived& index_put_(at::ArrayRef<TensorIndex> index, const at::Scalar& value) {
    return index_put_(index, at::scalar_tensor(value, at::TensorOptions().dtype(value.type())));
  }
  // obj[index] = td: each tensor of `td` (nested classes as nested
  // tensordicts) written into its field's tensor. Every key is checked
  // before anything is written: one that is no set tensor field is a KeyError.
  Derived& index_put_(at::ArrayRef<TensorIndex> index, const TensorDict& value) {
    const BatchIndex bi(index, tc_batch_size_);
    struct Write {
      const at::Tensor* field;
      at::Tensor value;
      bool whole;  // an UnbatchedTensor: the whole batch's, written whole
    };
    std::vector<Write> writes;
    std::vector<std::pair<NestedKey, NonTensorData>> stack_writes;  // into NonTensorStack fields
    if (const auto data = value.non_tensor_items({.include_nested = true}); !data.empty()) {
      const TensorDict form = tensordict_form_(detail::NonTensorFields::All);
      for (const auto& [key, written] : data) {
        if (put_stack_at_(key.path(), 0, nullptr, written)) {
          stack_writes.emplace_back(key, written);
          continue;
        }
        const auto held = form.get_value(key);
        if (!held || !held->is_non_tensor()) {
          throw KeyError(std::string(schema().name) + ".index_put_: key " + key.repr() + " is not a non-tensor field of " +
                         std::string(schema().name));
        }
        if (!(held->non_tensor() == written)) {
          std::string path(schema().name);
          for (const auto& part : key.path()) path += "." + part;
          detail::throw_per_element_data(path, tensordict::python_repr(held->non_tensor().data()),
                                         tensordict::python_repr(written.data()));
        }
      }
    }
    for (const auto& key : value.keys({.include_nested = true, .leaves_only = true})) {
      const auto leaf = value.get_value(key);
      const at::Tensor* field = find_tensor_(key.path(), 0, false);
      if (!field) {
        throw KeyError(std::string(schema().name) + ".index_put_: key " + key.repr() + " is not a set tensor field of " +
                       std::string(schema().name));
      }
      writes.push_back({field, leaf->tensor(), leaf->is_unbatched()});
    }
    for (const auto& w : writes) {
      if (w.whole) {
        w.field->copy_(w.value);
      } else {
        bi.put(*w.field, w.value);
      }
    }
    for (const auto& [key, written] : stack_writes) put_stack_at_(key.path(), 0, &bi, written);
    return derived();
  }

  // tensordict's batch_size setter: every tensor field must start with
  // `batch_size`; a nested class whose batch size does not takes it; dim
  // names are kept for the dims that remain. The schema is checked again: when
  // anything fails, nothing changes.
  Derived& set_batch_size(at::IntArrayRef batch_size) {
    TensorDict form = td_form_();
    form.set_batch_size(batch_size);
    Derived next = from_form_(form);
    detail::tc(next).validate();
    detail::tc(next).set_locked_tree_(tc_locked_);
    return derived() = std::move(next);
  }

  // ---- stack, cat, unbind, split (shape_plan.h: the dynamic core's plans) -------------------
  static Derived stack(const std::vector<Derived>& list, int64_t dim = 0) {
    if (list.empty()) detail::throw_empty_list("stack", schema().name);
    std::vector<const Names*> names;
    for (const auto& x : list) names.push_back(&detail::tc(x).tc_names_);
    shape::Combined plan = shape::stacked(batch_sizes_(list), names, dim);
    const int64_t d = plan.dim;
    return combine_(
        list, std::move(plan), [&](const std::vector<at::Tensor>& ts) { return at::stack(ts, d); }, "stack");
  }
  static Derived cat(const std::vector<Derived>& list, int64_t dim = 0) {
    if (list.empty()) detail::throw_empty_list("cat", schema().name);
    shape::Combined plan = shape::concatenated(batch_sizes_(list), detail::tc(list.front()).tc_names_, dim);
    const int64_t d = plan.dim;
    return combine_(
        list, std::move(plan), [&](const std::vector<at::Tensor>& ts) { return at::cat(ts, d); }, "cat");
  }
  std::vector<Derived> unbind(int64_t dim = 0) const {
    return kept_shared_(planned_pieces_(shape::Unbind(batch_size(), tc_names_, dim)));
  }
  std::vector<Derived> split(at::IntArrayRef split_sizes, int64_t dim = 0) const {
    return kept_shared_(planned_pieces_(shape::Split(batch_size(), tc_names_, split_sizes.vec(), dim)));
  }
  std::vector<Derived> split(int64_t split_size, int64_t dim = 0) const {
    const int64_t d = wrap_batch_dim(dim, batch_dims(), "split");
    return split(shape::split_sizes(tc_batch_size_[d], split_size), d);
  }
  std::vector<Derived> chunk(int64_t chunks, int64_t dim = 0) const {
    const int64_t d = wrap_batch_dim(dim, batch_dims(), "chunk");
    return split(shape::chunk_sizes(tc_batch_size_[d], chunks), d);
  }

  // ---- shape ops on batch dims (shape_plan.h) ----------------------------------------------------
  Derived reshape(at::IntArrayRef shape) const { return planned_(shape::Reshape(batch_size(), shape)); }
  Derived view(at::IntArrayRef shape) const {
    return kept_shared_(planned_(shape::Reshape(batch_size(), shape, shape::Reshape::Mode::View)));
  }
  Derived permute(at::IntArrayRef dims) const {
    return kept_shared_(planned_(shape::Permute(batch_size(), tc_names_, dims)));
  }
  Derived transpose(int64_t dim0, int64_t dim1) const {
    return kept_shared_(planned_(shape::Transpose(batch_size(), tc_names_, dim0, dim1)));
  }
  // Without a dim, removes every batch dim of size 1.
  Derived squeeze(std::optional<int64_t> dim = std::nullopt) const {
    return kept_shared_(planned_(shape::Squeeze(batch_size(), tc_names_, dim)));
  }
  Derived unsqueeze(int64_t dim) const {
    return kept_shared_(planned_(shape::Unsqueeze(batch_size(), tc_names_, dim)));
  }
  // The new batch size's trailing dims broadcast against the current ones (-1 keeps a dim).
  Derived expand(at::IntArrayRef batch_size) const {
    return planned_(shape::Expand(this->batch_size(), tc_names_, batch_size));
  }
  // No batch dims: batch [1], as torch.flatten of a 0-dim tensor.
  Derived flatten(int64_t start_dim = 0, int64_t end_dim = -1) const {
    return planned_(shape::Flatten(batch_size(), tc_names_, start_dim, end_dim));
  }
  Derived unflatten(int64_t dim, at::IntArrayRef sizes) const {
    return planned_(shape::Unflatten(batch_size(), tc_names_, dim, sizes));
  }

  // ---- device, dtype, copies ------------------------------------------------------------------
  // TensorDict::to's moves (one block for a consolidated instance, pinned
  // staging, one synchronisation; non_blocking: wait with
  // tensordict::synchronize), through the tensordict form.
  // tensordict: an instance already on `device` is returned as it is; the
  // result keeps the lock (as to(dtype) does).
  Derived to(at::Device device, const ToOptions& options = {}) const {
    if (tc_device_ && *tc_device_ == device) return derived();
    bool there = true;
    for_each_tensor_(derived(), [&](const at::Tensor& t) { there = there && t.device() == device; });
    if (!there) return locked_like_(from_form_(td_form_().to(device, options)));
    if (is_consolidated()) return derived();  // tensordict: where it is, it stays consolidated
    Derived out = same_batch_([](const at::Tensor& t) { return t; });
    detail::tc(out).set_device_(device);
    return locked_like_(std::move(out));
  }
  // TensorDict::pin_memory: the host tensors in one pinned allocation.
  Derived pin_memory() const { return from_form_(td_form_().pin_memory()); }

  // ---- one storage (TensorDict::consolidate) ---------------------------------------------
  // tensordict's consolidate(): a copy whose tensor fields are views of one
  // flat storage; non-tensor fields and nested tensorclasses are kept. The
  // copy is locked; unlock_() ends the consolidation.
  Derived consolidate(const ConsolidateOptions& options = {}) const {
    return from_form_(td_form_().consolidate(options));
  }
  // Whether every tensor field is still a view of that storage.
  bool is_consolidated() const {
    if (!tc_consolidated_storage_.defined()) return false;
    bool all = true;
    for_each_tensor_(derived(), [&](const at::Tensor& t) { all = all && detail::is_view_of(t, tc_consolidated_storage_); });
    return all;
  }
  // That storage (a flat uint8 tensor), or nullopt when not consolidated.
  std::optional<at::Tensor> consolidated_storage() const {
    return is_consolidated() ? std::optional<at::Tensor>(tc_consolidated_storage_) : std::nullopt;
  }
  // Casts every tensor field (tensordict's to(dtype)). A field whose schema
  // declares another dtype makes it throw ValueError naming the
  // field (a typed result always passes its own validate()); the tensordict
  // form casts freely: to_tensordict().to(dtype).
  Derived to(at::ScalarType dtype) const {
    check_dtypes_(detail::FieldPath{nullptr, schema().name}, "to", [dtype](const at::Tensor&) { return dtype; });
    return locked_like_(same_batch_([&](const at::Tensor& t) { return t.to(dtype); }));
  }
  Derived cpu() const { return to(at::Device(at::kCPU)); }
  Derived clone() const {
    Derived out = same_batch_([](const at::Tensor& t) { return t.clone(); });
    return out;
  }
  Derived detach() const {
    return same_batch_([](const at::Tensor& t) { return t.detach(); });
  }
  Derived contiguous() const {
    return same_batch_([](const at::Tensor& t) { return t.contiguous(); });
  }

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
  Derived where(const at::Tensor& condition, const Derived& other) const {
    Derived out = apply(
        [&](const at::Tensor& a, const at::Tensor& b) { return a.where(detail::align_to_leaf(condition, a), b); },
        other);
    where_stacks_(out, other, condition);
    return out;
  }
  Derived where(const at::Tensor& condition, const at::Scalar& other) const {
    return apply(
        [&](const at::Tensor& a) { return a.masked_fill(detail::align_to_leaf(condition, a).logical_not(), other); });
  }
  Derived masked_fill(const at::Tensor& mask, const at::Scalar& value) const {
    return apply([&](const at::Tensor& a) { return a.masked_fill(detail::align_to_leaf(mask, a), value); });
  }
  Derived& masked_fill_(const at::Tensor& mask, const at::Scalar& value) {
    for_each_tensor_(derived(), [&](const at::Tensor& a) { a.masked_fill_(detail::align_to_leaf(mask, a), value); });
    return derived();
  }
  Derived& zero_() {
    for_each_tensor_(derived(), [](const at::Tensor& t) { t.zero_(); });
    return derived();
  }

  // ---- conversion ----------------------------------------------------------------------
  // The object as a TensorDict sharing its tensors (Python's tc._tensordict):
  // one entry per set tensor field, nested tensorclasses as nested
  // tensordicts, non-tensor fields as non-tensor data; unset optional fields
  // are left out. Writes into its tensors are writes into the fields.
  TensorDict tensordict() const { return tensordict_form_(detail::NonTensorFields::All); }
  // The same, with the tensors copied (tensordict's to_tensordict()).
  TensorDict to_tensordict() const { return tensordict().clone(); }
  // The inverse, validated. Non-tensor fields come from the tensordict's
  // non-tensor entries, else from `non_tensor` (defaults when omitted). A key
  // of `td` that is no field is a KeyError unless `options.strict` is false.
  static Derived from_tensordict(const TensorDict& td, const Derived& non_tensor = Derived{},
                                 const FromTensorDictOptions& options = {}) {
    Derived out = non_tensor;
    detail::tc(out).set_locked_tree_(false);
    detail::tc(out).tc_consolidated_storage_ = at::Tensor();
    detail::tc(out).saved_path_.reset();
    detail::tc(out).from_td_(td, options.strict);
    detail::tc(out).validate();
    return out;
  }
  static Derived from_tensordict(const TensorDict& td, const FromTensorDictOptions& options) {
    return from_tensordict(td, Derived{}, options);
  }

  // ---- printing -----------------------------------------------------------------------
  // tensordict's tensorclass repr: compact unless set_printoptions says
  // compact=false (print_options.h).
  std::string repr() const {
    const PrintOptions options = get_printoptions();
    if (!options.compact) return detailed_repr_(options);
    std::vector<std::string> header;
    if (options.show_batch_size) header.push_back(detail::compact_batch_size(tc_batch_size_));
    if (options.show_device && tc_device_) header.push_back("device=" + tc_device_->str());
    return detail::compact_repr(schema().name, header, compact_fields_(options));
  }
  friend std::ostream& operator<<(std::ostream& os, const Derived& x) { return os << detail::tc(x).repr(); }

 private:
  // The entries of the compact repr: the set fields by type, sorted as
  // sort_keys says, then the unset ones as None (tensordict's _compact_body).
  std::vector<detail::CompactNode> compact_fields_(const PrintOptions& options) const {
    std::vector<detail::CompactNode> set, unset;
    auto node = [](std::string_view name, std::string text) {
      detail::CompactNode n;
      n.key = std::string(name);
      n.text = std::move(text);
      return n;
    };
    const auto batch_dims = static_cast<int64_t>(tc_batch_size_.size());
    visit_fields_(
        detail::Overloaded{
            [&](detail::TensorField, auto field, const auto& m) {
              if (!m.defined()) return unset.push_back(node(field.info().name, "None"));
              auto shape = detail::leaf_shape(m);
              if (!field.info().unbatched)  // an UnbatchedTensor shows its whole shape
                shape.erase(shape.begin(), shape.begin() + std::min<int64_t>(batch_dims, static_cast<int64_t>(shape.size())));
              set.push_back(node(field.info().name, detail::compact_token(shape, m.scalar_type(), {m.device().str()},
                                                                           tc_device_.has_value(), options)));
            },
            [&](detail::NestedField, auto field, const auto& m) {
              const auto* n = detail::present(m);
              if (n == nullptr) return unset.push_back(node(field.info().name, "None"));
              const auto& nested = detail::tc(*n);
              auto extra = nested.tc_batch_size_;
              extra.erase(extra.begin(), extra.begin() + std::min(extra.size(), tc_batch_size_.size()));
              auto c = node(field.info().name, std::string(nested.schema().name));
              if (!extra.empty()) c.text += detail::compact_dims(extra);
              c.container = true;
              c.entries = nested.compact_fields_(options);
              set.push_back(std::move(c));
            },
            [&](detail::DataField, auto field, const auto& m) {
              set.push_back(node(field.info().name, detail::python_type_name(m)));
            },
            [&](detail::StackField, auto field, const auto& m) {
              using V = typename std::remove_cvref_t<decltype(m)>::value_type;
              set.push_back(node(field.info().name, m.is_stack() ? "NonTensorStack" : detail::python_type_name(V{})));
            }},
        derived());
    detail::sort_compact(set, options);
    set.insert(set.end(), unset.begin(), unset.end());
    return set;
  }
  // compact=false: tensordict's detailed tensorclass repr.
  std::string detailed_repr_(const PrintOptions& options) const {
    std::vector<std::string> tensors, others;
    auto set_or_none = [&](std::string_view name, bool set, auto&& value_repr) {
      (set ? tensors : others).push_back(std::string(name) + "=" + (set ? value_repr() : std::string("None")));
    };
    visit_fields_(detail::Overloaded{[&](detail::TensorField, auto field, const auto& m) {
                                       set_or_none(field.info().name, m.defined(), [&] {
                                         return detail::tensor_repr(m, options, field.info().unbatched ? "UnbatchedTensor" : "Tensor");
                                       });
                                     },
                                     [&](detail::NestedField, auto field, const auto& m) {
                                       const auto* n = detail::present(m);
                                       set_or_none(field.info().name, n != nullptr, [&] { return detail::tc(*n).repr(); });
                                     },
                                     [&](detail::DataField, auto field, const auto& m) {
                                       // held as NonTensorData, sorted with the tensors
                                       tensors.push_back(std::string(field.info().name) + "=" +
                                                         detail::non_tensor_data_repr(detail::python_str(m),
                                                                                      tc_batch_size_, tc_device_));
                                     },
                                     [&](detail::StackField, auto field, const auto& m) {
                                       tensors.push_back(std::string(field.info().name) + "=" +
                                                         detail::non_tensor_repr(m.data(), tc_batch_size_, tc_device_));
                                     }},
                  derived());
    return detail::tensorclass_repr(schema().name, std::move(tensors), others, tc_batch_size_, tc_device_, is_shared(),
                                    options);
  }
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
  static void check_same_data_(const Derived& self, const Derived& other) {
    visit_fields_(detail::Overloaded{[&](detail::DataField, auto field, const auto& a, const auto& b) {
                                       if (!(a == b)) {
                                         detail::throw_per_element_data(field_path_(field), detail::python_repr(a),
                                                                        detail::python_repr(b));
                                       }
                                     },
                                     [&](detail::NestedField, auto, const auto& a, const auto& b) {
                                       const auto* x = detail::present(a);
                                       const auto* y = detail::present(b);
                                       if (x && y) detail::tc(*x).check_same_data_(*x, *y);
                                     }},
                  self, other);
  }
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
  static void put_stacks_(Derived& self, const Derived& other, const BatchIndex& bi) {
    visit_fields_(detail::Overloaded{[&](detail::StackField, auto, auto& a, const auto& b) {
                                       using M = std::remove_cvref_t<decltype(a)>;
                                       a = M(detail::put_non_tensor(a.data(), detail::tc(self).tc_batch_size_, bi, b.data()));
                                     },
                                     [&](detail::NestedField, auto, auto& a, const auto& b) {
                                       auto* x = detail::present(a);
                                       const auto* y = detail::present(b);
                                       if (x && y) detail::tc(*x).put_stacks_(*x, *y, bi);
                                     }},
                  self, other);
  }
  // Whether `path` (from `at`) names a NonTensorStack field, whose type
  // `value` must fit (else the field's TypeError); with `bi`, `value` is
  // written there at `bi`. index_put_ checks every key (bi null) before it
  // writes any.
  bool put_stack_at_(std::span<const std::string> path, std::size_t at, const BatchIndex* bi,
                     const NonTensorData& value) {
    bool found = false;
    const bool last = at + 1 == path.size();
    visit_field_named_(path[at],
                       detail::Overloaded{[&](detail::StackField, auto field, auto& m) {
                                            if (!last) return;
                                            found = true;
                                            using M = std::remove_cvref_t<decltype(m)>;
                                            M written;
                                            read_stack_(written, Value(value), field_path_(field), field.info(), "the written value");
                                            if (bi) m = M(detail::put_non_tensor(m.data(), tc_batch_size_, *bi, written.data()));
                                          },
                                          [&](detail::NestedField, auto, auto& m) {
                                            auto* n = detail::present(m);
                                            if (!last && n) found = detail::tc(*n).put_stack_at_(path, at + 1, bi, value);
                                          }},
                       derived());
    return found;
  }
  // where(condition, other) for the NonTensorStack fields of `out` (a result
  // holding this instance's values): each element from us where `condition`
  // holds, else from `other`, picked as the dynamic core picks non-tensor
  // elements (shared_value_ids).
  void where_stacks_(Derived& out, const Derived& other, const at::Tensor& condition) const {
    visit_fields_(detail::Overloaded{[&](detail::StackField, auto, const auto& a, const auto& b, auto& o) {
                                       using M = std::remove_cvref_t<decltype(o)>;
                                       const auto shared = detail::shared_value_ids({a.data(), b.data()}, tc_batch_size_);
                                       const at::Tensor& x = shared.ids[0];
                                       o = M(NonTensorData::from_ids(shared.pool, x.where(detail::align_to_leaf(condition, x), shared.ids[1])));
                                     },
                                     [&](detail::NestedField, auto, const auto& a, const auto& b, auto& o) {
                                       const auto* x = detail::present(a);
                                       const auto* y = detail::present(b);
                                       if (x && y) detail::tc(*x).where_stacks_(*detail::present(o), *y, condition);
                                     }},
                  derived(), other, out);
  }

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
  static bool is_field_(std::string_view name) {
    for (const auto& f : fields()) {
      if (f.name == name) return true;
    }
    return false;
  }

  // ---- batch metadata -------------------------------------------------------------------
  // Names with no name left mean "unnamed" (an empty list).
  static Names unnamed_if_empty_(Names names) {
    for (const auto& n : names) {
      if (n) return names;
    }
    return {};
  }
  void set_names_(Names names) {
    bool any = false;
    for (const auto& n : names) any = any || n.has_value();
    if (!names.empty() && names.size() != tc_batch_size_.size()) {
      throw ValueError(std::string(schema().name) + ": got " + std::to_string(names.size()) + " names for batch size " +
                       detail::shape_string(batch_size()));
    }
    shape::check_unique_names(names);
    tc_names_ = any ? std::move(names) : Names{};
  }

  // An unnamed instance of a class whose schema names its batch dims takes
  // those names, as Python's generated class does. Unnamed nested members
  // then take ours for their leading dims, as tensordict names nested
  // tensordicts.
  void name_from_schema_() {
    if (tc_names_.empty() && !schema().batch_names.empty() && schema().batch_names.size() == tc_batch_size_.size()) {
      for (auto n : schema().batch_names) tc_names_.emplace_back(std::string(n));
    }
    if (tc_names_.empty()) return;
    for_each_nested_([&](auto& n) {
      if (detail::tc(n).tc_names_.empty() && detail::tc(n).tc_batch_size_.size() >= tc_names_.size()) {
        detail::tc(n).tc_names_ = tc_names_;
        detail::tc(n).tc_names_.resize(detail::tc(n).tc_batch_size_.size());
        detail::tc(n).name_from_schema_();
      }
    });
  }

  void set_device_(DeviceArg device) {
    tc_device_ = device;
    for_each_nested_([&](auto& n) { detail::tc(n).set_device_(device); });
  }

  // Each level's device from the same level of `form`, a tensordict form of
  // this object (TensorDict::auto_device_ decided them).
  void set_device_tree_(const TensorDict& form) {
    tc_device_ = form.device();
    visit_fields_(detail::Overloaded{[&](detail::NestedField, auto field, auto& m) {
                    if (auto* n = detail::present(m)) detail::tc(*n).set_device_tree_(form.get_td(std::string(field.info().name)));
                  }},
                  derived());
  }

  // The lock of this level and of every nested tensorclass member. An
  // unlocked instance is not shared (tensordict's rule: a field set now
  // would not be in shared memory), although its tensors stay there.
  void set_locked_tree_(bool locked) {
    tc_locked_ = locked;
    if (!locked) tc_shared_ = false;
    for_each_nested_([&](auto& n) { detail::tc(n).set_locked_tree_(locked); });
  }
  // share_memory_()'s mark on this level and every nested tensorclass member.
  void set_shared_tree_(bool shared) {
    tc_shared_ = shared;
    for_each_nested_([&](auto& n) { detail::tc(n).set_shared_tree_(shared); });
  }
  // `out`, a view of this instance's tensors by an op tensordict counts as
  // keeping share_memory_()'s mark: marked and locked when this one is marked.
  Derived kept_shared_(Derived out) const {
    if (!tc_shared_) return out;
    detail::tc(out).set_shared_tree_(true);
    detail::tc(out).set_locked_tree_(true);
    return out;
  }
  std::vector<Derived> kept_shared_(std::vector<Derived> out) const {
    for (auto& piece : out) piece = kept_shared_(std::move(piece));
    return out;
  }

  // ---- schema checks -----------------------------------------------------------------------
  // `trust_built`: skip the fields of nested members that a constructor
  // validated (their batch prefix is still checked).
  void validate_(const detail::FieldPath& path, bool trust_built) const {
    detail::validate_batch_dims(schema(), path, tc_batch_size_);
    detail::SymbolTable symbols;
    visit_fields_(detail::Overloaded{[&](detail::TensorField, auto field, const auto& m) {
                                       const detail::FieldPath sub{&path, field.info().name};
                                       detail::validate_tensor_field(sub, field.info(), m, tc_batch_size_, symbols);
                                     },
                                     [&](detail::NestedField, auto field, const auto& m) {
                                       const auto* n = detail::present(m);
                                       if (!n) return;  // an absent optional class
                                       const detail::FieldPath sub{&path, field.info().name};
                                       detail::validate_nested_batch(sub, detail::tc(*n).tc_batch_size_, tc_batch_size_);
                                       if (!(trust_built && detail::tc(*n).tc_validated_)) detail::tc(*n).validate_(sub, trust_built);
                                     },
                                     [&](detail::StackField, auto field, const auto& m) {
                                       if (!m.is_stack()) return;
                                       const detail::FieldPath sub{&path, field.info().name};
                                       detail::validate_stack_field(sub, m.data().ids().sizes(), tc_batch_size_);
                                     }},
                  derived());
  }

  // A tensordict the dynamic core derived from td_form_() by an op that
  // keeps the schema's shapes, as this class: declared dtypes must be kept.
  Derived typed_(const TensorDict& td, const char* op) const {
    Derived out = from_form_(td);
    detail::tc(out).check_dtypes_(detail::FieldPath{nullptr, schema().name}, op,
                      [](const at::Tensor& t) { return t.scalar_type(); });
    return out;
  }
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
  TensorDict tensordict_form_(detail::NonTensorFields which) const {
    std::vector<TensorDict::Entry> entries;
    visit_fields_(
        detail::Overloaded{[&](detail::TensorField, auto field, const auto& m) {
                             if (!m.defined()) return;
                             if (field.info().unbatched) {
                               entries.emplace_back(std::string(field.info().name), UnbatchedTensor(m));
                             } else {
                               entries.emplace_back(std::string(field.info().name), m);
                             }
                           },
                           [&](detail::NestedField, auto field, const auto& m) {
                             if (const auto* n = detail::present(m)) {
                               entries.emplace_back(std::string(field.info().name), detail::tc(*n).tensordict_form_(which));
                             }
                           },
                           [&](detail::DataField, auto field, const auto& m) {
                             if (which == detail::NonTensorFields::None || which == detail::NonTensorFields::Stacks) return;
                             if (which == detail::NonTensorFields::H5 &&
                                 field.info().value_type != schema::ValueType::String) {
                               if (m == field.of(defaults_())) return;
                               detail::throw_h5_non_tensor(schema().name, field.info(), detail::python_repr(m));
                             }
                             entries.emplace_back(std::string(field.info().name), NonTensorData(Json(m)));
                           },
                           [&](detail::StackField, auto field, const auto& m) {
                             if (which == detail::NonTensorFields::None) return;
                             if (which == detail::NonTensorFields::H5 &&
                                 field.info().value_type != schema::ValueType::String) {
                               if (m == field.of(defaults_())) return;
                               detail::throw_h5_non_tensor(schema().name, field.info(), tensordict::python_repr(m.data().data()));
                             }
                             entries.emplace_back(std::string(field.info().name), m.data());
                           }},
        derived());
    return TensorDict(std::move(entries), tc_batch_size_, tc_device_, tc_names_);
  }
  // An instance as the schema's defaults make it (h5 leaves out a non-string
  // field that holds its default).
  static const Derived& defaults_() {
    static const Derived instance{};
    return instance;
  }

  // The tensordict form with our consolidated storage (if any), so that the
  // dynamic core's moves treat it as one block.
  TensorDict td_form_() const {
    TensorDict td = tensordict_form_(detail::NonTensorFields::Stacks);
    if (tc_consolidated_storage_.defined()) td.impl()->set_consolidated_storage(tc_consolidated_storage_);
    return td;
  }
  // This instance's non-tensor fields over the tensors of `td`, a tensordict
  // the core derived from td_form_(); consolidated and locked when `td` is.
  Derived from_form_(const TensorDict& td) const {
    Derived out = shell_();
    detail::tc(out).from_td_(td);
    detail::tc(out).tc_consolidated_storage_ = td.impl()->consolidated_storage();
    detail::tc(out).set_locked_tree_(detail::tc(out).tc_consolidated_storage_.defined());
    return out;
  }

  // Reads the fields from a tensordict form: tensors, nested tensorclasses,
  // and non-tensor fields held as non-tensor data (what load_memmap through
  // TensorDict gives); an absent non-tensor field keeps its current value.
  void from_td_(const TensorDict& td, bool strict = true) {
    tc_batch_size_ = td.batch_size().vec();
    tc_device_ = td.device();
    set_names_(td.names());
    if (strict) {
      for (const auto& key : td.keys()) {
        if (!is_field_(key.front())) {
          throw KeyError(std::string(schema().name) + ".from_tensordict: key " + key.repr() + " is not a field of " +
                         std::string(schema().name) + " (from_tensordict(td, {.strict = false}) ignores extra keys)");
        }
      }
    }
    visit_fields_(detail::Overloaded{[&](detail::TensorField, auto field, auto& m) {
                                       const std::string name(field.info().name);
                                       m = td.contains(name) ? td.get(name) : at::Tensor();
                                     },
                                     [&](detail::NestedField, auto field, auto& m) {
                                       const std::string name(field.info().name);
                                       if (td.contains(name)) {
                                         detail::tc(detail::emplaced(m)).from_td_(td.get_td(name), strict);
                                       } else {
                                         detail::reset_if_optional(m);
                                       }
                                     },
                                     [&](detail::DataField, auto field, auto& m) {
                                       if (const auto value = td.get_value(std::string(field.info().name))) {
                                         read_non_tensor_(m, *value, field_path_(field), field.info(), "the entry");
                                       }
                                     },
                                     [&](detail::StackField, auto field, auto& m) {
                                       if (const auto value = td.get_value(std::string(field.info().name))) {
                                         read_stack_(m, *value, field_path_(field), field.info(), "the entry");
                                       }
                                     }},
                  derived());
  }

  // A non-tensor field from the non-tensor entry `value`; errors name `sub`
  // and call the entry `what`.
  template <class M>
  static void read_non_tensor_(M& m, const Value& value, const std::string& sub, const schema::FieldInfo& field,
                               std::string_view what) {
    if (!value.is_non_tensor()) throw TypeError(sub + ": " + std::string(what) + " is not non-tensor data");
    const Json json = value.non_tensor().data();
    if (!detail::json_fits<M>(json)) detail::throw_bad_non_tensor(sub, field, json);
    try {
      m = json.template get<M>();
    } catch (const Json::exception&) {
      detail::throw_bad_non_tensor(sub, field, json);
    }
  }

  // A NonTensorStack field from the non-tensor entry `value`: every value
  // must fit the element type V (errors as read_non_tensor_'s).
  template <class V>
  static void read_stack_(NonTensorStack<V>& m, const Value& value, const std::string& sub,
                          const schema::FieldInfo& field, std::string_view what) {
    if (!value.is_non_tensor()) throw TypeError(sub + ": " + std::string(what) + " is not non-tensor data");
    for (const Json& json : *value.non_tensor().pool()) {
      if (!detail::json_fits<V>(json)) detail::throw_bad_non_tensor(sub, field, json);
    }
    m = NonTensorStack<V>(value.non_tensor());
  }

  // The NonTensorStack fields (nested ones included) from `form`, a form of
  // this object an in-place op of the dynamic core wrote into: its tensors
  // are ours, its non-tensor entries new values.
  void read_stacks_(const TensorDict& form) {
    visit_fields_(detail::Overloaded{[&](detail::StackField, auto field, auto& m) {
                                       if (const auto value = form.get_value(std::string(field.info().name)))
                                         read_stack_(m, *value, field_path_(field), field.info(), "the entry");
                                     },
                                     [&](detail::NestedField, auto field, auto& m) {
                                       const std::string name(field.info().name);
                                       if (auto* n = detail::present(m); n && form.contains(name))
                                         detail::tc(*n).read_stacks_(form.get_td(name));
                                     }},
                  derived());
  }

  // ---- new instances --------------------------------------------------------------------
  // A copy of everything but the tensors (metadata and non-tensor fields, at
  // every level): what an op that sets every tensor starts from. Copying the
  // whole struct would touch every tensor's refcount twice for nothing.
  Derived shell_() const {
    Derived out;
    detail::tc(out).copy_shell_(derived());
    return out;
  }
  void copy_shell_(const Derived& src) {
    tc_batch_size_ = detail::tc(src).tc_batch_size_;
    tc_device_ = detail::tc(src).tc_device_;
    tc_names_ = detail::tc(src).tc_names_;
    tc_locked_ = detail::tc(src).tc_locked_;
    visit_fields_(detail::Overloaded{[](detail::NestedField, auto, auto& dst, const auto& from) {
                                       if (const auto* s = detail::present(from)) {
                                         detail::tc(detail::emplaced(dst)).copy_shell_(*s);
                                       } else {
                                         detail::reset_if_optional(dst);
                                       }
                                     },
                                     [](detail::DataField, auto, auto& dst, const auto& from) { dst = from; },
                                     [](detail::StackField, auto, auto& dst, const auto& from) { dst = from; }},
                  derived(), src);
  }

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
  Derived locked_like_(Derived out) const {
    if (tc_locked_ && !detail::tc(out).tc_locked_) detail::tc(out).set_locked_tree_(true);
    return out;
  }
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
  static std::vector<at::IntArrayRef> batch_sizes_(const std::vector<Derived>& list) {
    std::vector<at::IntArrayRef> out;
    out.reserve(list.size());
    for (const auto& x : list) out.push_back(detail::tc(x).batch_size());
    return out;
  }

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
                                     const std::string& path) {
    const at::IntArrayRef first = tensors.front().sizes().slice(nb);
    for (std::size_t i = 1; i < tensors.size(); ++i) {
      const at::IntArrayRef features = tensors[i].sizes().slice(nb);
      if (features != first) detail::throw_feature_shape_mismatch(op, path, first, features, i);
    }
  }
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
  const at::Tensor* find_tensor_(std::span<const std::string> path, std::size_t at, bool required) const {
    const at::Tensor* found = nullptr;
    const bool last = at + 1 == path.size();
    const bool matched = visit_field_named_(
        path[at],
        detail::Overloaded{[&](detail::TensorField, auto field, const auto& m) {
                             if (!last) {
                               if (required)
                                 detail::throw_not_tensor(schema().name, path[at], "a tensor (cannot index into it)");
                             } else if (m.defined()) {
                               found = &m;
                             } else if (required) {
                               throw KeyError(field_path_(field) + " is not set (optional field)");
                             }
                           },
                           [&](detail::NestedField, auto field, const auto& m) {
                             const auto* n = detail::present(m);
                             if (last) {
                               if (required)
                                 detail::throw_not_tensor(schema().name, path[at],
                                                          "a nested tensorclass; use the member");
                             } else if (n) {
                               found = detail::tc(*n).find_tensor_(path, at + 1, required);
                             } else if (required) {
                               throw KeyError(field_path_(field) + " is not set (optional field)");
                             }
                           },
                           [&](detail::DataField, auto, const auto&) {
                             if (required)
                               detail::throw_not_tensor(schema().name, path[at], "a non-tensor field; use the member");
                           },
                           [&](detail::StackField, auto, const auto&) {
                             if (required)
                               detail::throw_not_tensor(schema().name, path[at], "a non-tensor field; use the member");
                           }},
        derived());
    if (!matched && required) detail::throw_no_field(schema().name, path[at]);
    return found;
  }

  void set_path_(std::span<const std::string> path, std::size_t at, const at::Tensor& value) {
    if (tc_locked_) detail::throw_locked(schema().name, path[at]);
    const bool last = at + 1 == path.size();
    const bool matched = visit_field_named_(
        path[at],
        detail::Overloaded{[&](detail::TensorField, auto, auto& m) {
                             if (!last)
                               detail::throw_not_tensor(schema().name, path[at], "a tensor (cannot index into it)");
                             at::Tensor old = m;
                             m = tc_device_ && value.defined() ? value.to(*tc_device_) : value;
                             try {
                               validate();
                             } catch (...) {
                               m = old;
                               throw;
                             }
                           },
                           [&](detail::NestedField, auto field, auto& m) {
                             if (last)
                               detail::throw_not_tensor(schema().name, path[at],
                                                        "a nested tensorclass; assign the member");
                             auto* n = detail::present(m);
                             if (!n)
                               throw KeyError(field_path_(field) + " is not set (optional field); assign the member");
                             detail::tc(*n).set_path_(path, at + 1, value);
                           },
                           [&](detail::DataField, auto, auto&) {
                             detail::throw_not_tensor(schema().name, path[at], "a non-tensor field; assign the member");
                           },
                           [&](detail::StackField, auto, auto&) {
                             detail::throw_not_tensor(schema().name, path[at], "a non-tensor field; assign the member");
                           }},
        derived());
    if (!matched) detail::throw_no_field(schema().name, path[at]);
  }

  // Reads the fields from a loaded tensordict form (TensorClassPersistence's
  // from_loaded_): every stored key must be a field; batch sizes as stored
  // or, for h5, inferred from the schema.
  void read_loaded_(const TensorDict& td, const std::string& path, std::optional<at::IntArrayRef> parent,
                    bool infer_batch) {
    for (const auto& key : td.keys()) {
      if (!is_field_(key.front())) {
        throw KeyError(path + ": stored key " + key.repr() + " is not a field of " + std::string(schema().name));
      }
    }
    tc_batch_size_ = infer_batch ? detail::infer_batch_size(schema(), td, parent) : td.batch_size().vec();
    tc_device_ = td.device();
    tc_names_.clear();
    // The stored names (memmap keeps them; h5 does not), else the schema's.
    if (td.has_names() && td.batch_size().size() == tc_batch_size_.size()) set_names_(td.names());
    tc_locked_ = false;
    auto sub = [&](auto field) { return path + "." + std::string(field.info().name); };
    auto stored = [&](auto field) { return td.get_value(std::string(field.info().name)); };
    visit_fields_(detail::Overloaded{[&](detail::TensorField, auto field, auto& m) {
                                       const auto value = stored(field);
                                       if (value && !value->is_tensor())
                                         throw TypeError(sub(field) + ": stored entry is not a tensor");
                                       m = value ? value->tensor() : at::Tensor();
                                     },
                                     [&](detail::NestedField, auto field, auto& m) {
                                       const auto value = stored(field);
                                       if (!value && detail::reset_if_optional(m)) return;
                                       if (!value || !value->is_tensordict()) {
                                         throw ValueError(sub(field) + ": nested tensorclass is not stored");
                                       }
                                       detail::tc(detail::emplaced(m)).read_loaded_(value->tensordict(), sub(field),
                                                                        at::IntArrayRef(tc_batch_size_), infer_batch);
                                     },
                                     [&](detail::DataField, auto field, auto& m) {
                                       const auto value = stored(field);
                                       if (value) {
                                         read_non_tensor_(m, *value, sub(field), field.info(), "stored entry");
                                       } else if (!field.info().has_default && !field.info().optional) {
                                         throw ValueError(sub(field) + ": required non-tensor field is not stored");
                                       }  // else it keeps the schema default
                                     },
                                     [&](detail::StackField, auto field, auto& m) {
                                       if (const auto value = stored(field)) {
                                         read_stack_(m, *value, sub(field), field.info(), "stored entry");
                                       } else if (!field.info().has_default && !field.info().optional) {
                                         throw ValueError(sub(field) + ": required non-tensor field is not stored");
                                       }
                                     }},
                  derived());
    name_from_schema_();
  }

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
