// The bodies of TensorClass<Derived>'s and TensorClassPersistence<Derived>'s
// member functions: the typed engine.
//
// A generated header (<schema>.tc.h) declares `extern template` of both
// classes for each of its types, and its <schema>.tc.cpp, the one unit that
// includes this file, instantiates them: a user's translation unit sees the
// declarations only and compiles none of this, as protobuf's generated
// classes are compiled once in their .pb.cc. A class written by hand (a test's,
// without tensorclass-gen) includes this header to instantiate them where used.
// This is also the one place in the typed layer that reads JSON (non-tensor
// fields, meta.json), so the public headers need only nlohmann/json_fwd.hpp.
#pragma once

#include <nlohmann/json.hpp>

#include <cstdint>
#include <limits>
#include <string>
#include <type_traits>
#include <vector>

#include "tensordict/detail/tensorclass_memmap.h"
#include "tensordict/detail/impl.h"
#include "tensordict/tensorclass.h"

namespace tensordict {

namespace detail {
// Non-template helpers of the methods below (src/typed/tensorclass_persistence.cpp).

// Checks that meta.json `meta` of `dir` names the class `info` (its
// python_type, or the same bare class name as a Python module elsewhere
// writes it); throws RuntimeError naming the file and both classes.
void check_memmap_class(const Json& meta, const schema::ClassInfo& info, const std::string& dir);

// h5 stores no batch size: the number of batch dims of a `info` level comes
// from a tensor field with a declared shape (its dims minus the declared
// feature dims) or the class's declared batch names; without either, the
// parent's batch size (`parent`, when nested) or the batch size `td` was read with.
std::vector<int64_t> infer_batch_size(const schema::ClassInfo& info, const TensorDict& td,
                                      std::optional<at::IntArrayRef> parent);

// TypeError "Class.name: non-tensor field must be a string, got 3" (an int
// field: "an int in int64's range").
[[noreturn]] void throw_bad_non_tensor(const std::string& path, const schema::FieldInfo& field, const Json& got);

template <class T>
struct IsVector : std::false_type {};
template <class T, class A>
struct IsVector<std::vector<T, A>> : std::true_type {};

// Whether `json` converts to the field type M keeping its value: nlohmann's
// get<int64_t>() casts 1e30 to INT64_MIN, 2^64-1 to -1 and 5.5 to 5 silently.
template <class M>
bool json_fits(const Json& json) {
  if constexpr (std::is_same_v<M, bool>) {
    return json.is_boolean();
  } else if constexpr (std::is_integral_v<M>) {
    if (json.is_number_unsigned()) {
      return json.get<std::uint64_t>() <= static_cast<std::uint64_t>(std::numeric_limits<M>::max());
    }
    if (!json.is_number_integer()) return false;
    const auto value = json.get<std::int64_t>();
    if (value < 0) return std::is_signed_v<M> && value >= static_cast<std::int64_t>(std::numeric_limits<M>::min());
    return static_cast<std::uint64_t>(value) <= static_cast<std::uint64_t>(std::numeric_limits<M>::max());
  } else if constexpr (std::is_floating_point_v<M>) {
    return json.is_number();
  } else if constexpr (std::is_same_v<M, std::string>) {
    return json.is_string();
  } else if constexpr (IsVector<M>::value) {
    if (!json.is_array()) return false;
    for (const auto& element : json) {
      if (!json_fits<typename M::value_type>(element)) return false;
    }
    return true;
  } else {
    return true;  // nlohmann's own checks
  }
}

}  // namespace detail

// ---- TensorClass ----

template <class Derived>
auto TensorClass<Derived>::rename_(Names names) -> Derived& {
    set_names_(std::move(names));
    return derived();
  }

template <class Derived>
auto TensorClass<Derived>::refine_names(const Names& names) -> Derived& {
    set_names_(shape::refined_names(this->names(), names));
    return derived();
  }

template <class Derived>
auto TensorClass<Derived>::is_shared() const -> bool {
    if (tc_device_ && !this->is_memmap()) return tc_device_->is_cuda() || tc_shared_;
    return tc_shared_;
  }

template <class Derived>
auto TensorClass<Derived>::share_memory_() -> Derived& {
    if (this->is_memmap()) throw RuntimeError("share_memory_: memmap and shared memory are mutually exclusive features.");
    if (tc_device_ && tc_device_->is_cuda()) return derived();
    tensordict_form_(detail::NonTensorFields::Stacks).share_memory_();
    set_shared_tree_(true);
    set_locked_tree_(true);
    return derived();
  }

template <class Derived>
auto TensorClass<Derived>::lock_() -> Derived& {
    set_locked_tree_(true);
    return derived();
  }

template <class Derived>
auto TensorClass<Derived>::unlock_() -> Derived& {
    set_locked_tree_(false);  // ends the shared mark too
    // tensordict's rule: unlocked, its fields may be replaced, which the
    // consolidated storage would no longer describe.
    tc_consolidated_storage_ = at::Tensor();
    return derived();
  }

template <class Derived>
auto TensorClass<Derived>::init_(BatchSizeArg batch_size, DeviceArg device, Names names) -> Derived& {
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

template <class Derived>
auto TensorClass<Derived>::validate() const -> void { validate_(detail::FieldPath{nullptr, schema().name}, /*trust_built=*/false); }

template <class Derived>
auto TensorClass<Derived>::contains(const NestedKey& key) const -> bool { return find_tensor_(key.path(), 0, false) != nullptr; }

template <class Derived>
auto TensorClass<Derived>::get(const NestedKey& key) const -> at::Tensor { return *find_tensor_(key.path(), 0, true); }

template <class Derived>
auto TensorClass<Derived>::set(const NestedKey& key, const at::Tensor& value) -> Derived& {
    set_path_(key.path(), 0, value);
    return derived();
  }

template <class Derived>
auto TensorClass<Derived>::index(at::ArrayRef<TensorIndex> index) const -> Derived {
    const BatchIndex bi(index, tc_batch_size_);
    Derived out = shell_();
    detail::tc(out).tc_batch_size_ = bi.result_batch_size().vec();
    detail::tc(out).tc_names_ = has_names() ? unnamed_if_empty_(bi.result_names(tc_names_)) : Names{};
    detail::tc(out).set_locked_tree_(false);
    map_into_(
        out, [&](const at::Tensor& t) { return bi.apply(t); }, batch_dims(), /*moves_batch=*/true);
    return detail::index_keeps_shared(index) ? kept_shared_(std::move(out)) : out;
  }

template <class Derived>
auto TensorClass<Derived>::index_put_(at::ArrayRef<TensorIndex> index, const Derived& value) -> Derived& {
    const BatchIndex bi(index, tc_batch_size_);
    check_same_data_(derived(), value);
    for_each_pair_(derived(), value, [&](const at::Tensor& dst, const at::Tensor& src) { bi.put(dst, src); });
    put_stacks_(derived(), value, bi);
    return derived();
  }

template <class Derived>
auto TensorClass<Derived>::index_put_(at::ArrayRef<TensorIndex> index, const at::Tensor& value) -> Derived& {
    const BatchIndex bi(index, tc_batch_size_);
    // An UnbatchedTensor field has no batch dims to broadcast into: left as it is.
    for_each_tensor_(derived(), [&](const at::Tensor& dst) { bi.put(dst, value); }, /*batched_only=*/true);
    return derived();
  }

template <class Derived>
auto TensorClass<Derived>::index_put_(at::ArrayRef<TensorIndex> index, const at::Scalar& value) -> Derived& {
    return index_put_(index, at::scalar_tensor(value, at::TensorOptions().dtype(value.type())));
  }

template <class Derived>
auto TensorClass<Derived>::index_put_(at::ArrayRef<TensorIndex> index, const TensorDict& value) -> Derived& {
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

template <class Derived>
auto TensorClass<Derived>::set_batch_size(at::IntArrayRef batch_size) -> Derived& {
    TensorDict form = td_form_();
    form.set_batch_size(batch_size);
    Derived next = from_form_(form);
    detail::tc(next).validate();
    detail::tc(next).set_locked_tree_(tc_locked_);
    return derived() = std::move(next);
  }

template <class Derived>
auto TensorClass<Derived>::stack(const std::vector<Derived>& list, int64_t dim) -> Derived {
    if (list.empty()) detail::throw_empty_list("stack", schema().name);
    std::vector<const Names*> names;
    for (const auto& x : list) names.push_back(&detail::tc(x).tc_names_);
    shape::Combined plan = shape::stacked(batch_sizes_(list), names, dim);
    const int64_t d = plan.dim;
    return combine_(
        list, std::move(plan), [&](const std::vector<at::Tensor>& ts) { return at::stack(ts, d); }, "stack");
  }

template <class Derived>
auto TensorClass<Derived>::cat(const std::vector<Derived>& list, int64_t dim) -> Derived {
    if (list.empty()) detail::throw_empty_list("cat", schema().name);
    shape::Combined plan = shape::concatenated(batch_sizes_(list), detail::tc(list.front()).tc_names_, dim);
    const int64_t d = plan.dim;
    return combine_(
        list, std::move(plan), [&](const std::vector<at::Tensor>& ts) { return at::cat(ts, d); }, "cat");
  }

template <class Derived>
auto TensorClass<Derived>::unbind(int64_t dim) const -> std::vector<Derived> {
    return kept_shared_(planned_pieces_(shape::Unbind(batch_size(), tc_names_, dim)));
  }

template <class Derived>
auto TensorClass<Derived>::split(at::IntArrayRef split_sizes, int64_t dim) const -> std::vector<Derived> {
    return kept_shared_(planned_pieces_(shape::Split(batch_size(), tc_names_, split_sizes.vec(), dim)));
  }

template <class Derived>
auto TensorClass<Derived>::split(int64_t split_size, int64_t dim) const -> std::vector<Derived> {
    const int64_t d = wrap_batch_dim(dim, batch_dims(), "split");
    return split(shape::split_sizes(tc_batch_size_[d], split_size), d);
  }

template <class Derived>
auto TensorClass<Derived>::chunk(int64_t chunks, int64_t dim) const -> std::vector<Derived> {
    const int64_t d = wrap_batch_dim(dim, batch_dims(), "chunk");
    return split(shape::chunk_sizes(tc_batch_size_[d], chunks), d);
  }

template <class Derived>
auto TensorClass<Derived>::reshape(at::IntArrayRef shape) const -> Derived { return planned_(shape::Reshape(batch_size(), shape)); }

template <class Derived>
auto TensorClass<Derived>::view(at::IntArrayRef shape) const -> Derived {
    return kept_shared_(planned_(shape::Reshape(batch_size(), shape, shape::Reshape::Mode::View)));
  }

template <class Derived>
auto TensorClass<Derived>::permute(at::IntArrayRef dims) const -> Derived {
    return kept_shared_(planned_(shape::Permute(batch_size(), tc_names_, dims)));
  }

template <class Derived>
auto TensorClass<Derived>::transpose(int64_t dim0, int64_t dim1) const -> Derived {
    return kept_shared_(planned_(shape::Transpose(batch_size(), tc_names_, dim0, dim1)));
  }

template <class Derived>
auto TensorClass<Derived>::squeeze(std::optional<int64_t> dim) const -> Derived {
    return kept_shared_(planned_(shape::Squeeze(batch_size(), tc_names_, dim)));
  }

template <class Derived>
auto TensorClass<Derived>::unsqueeze(int64_t dim) const -> Derived {
    return kept_shared_(planned_(shape::Unsqueeze(batch_size(), tc_names_, dim)));
  }

template <class Derived>
auto TensorClass<Derived>::expand(at::IntArrayRef batch_size) const -> Derived {
    return planned_(shape::Expand(this->batch_size(), tc_names_, batch_size));
  }

template <class Derived>
auto TensorClass<Derived>::flatten(int64_t start_dim, int64_t end_dim) const -> Derived {
    return planned_(shape::Flatten(batch_size(), tc_names_, start_dim, end_dim));
  }

template <class Derived>
auto TensorClass<Derived>::unflatten(int64_t dim, at::IntArrayRef sizes) const -> Derived {
    return planned_(shape::Unflatten(batch_size(), tc_names_, dim, sizes));
  }

template <class Derived>
auto TensorClass<Derived>::to(at::Device device, const ToOptions& options) const -> Derived {
    if (tc_device_ && *tc_device_ == device) return derived();
    bool there = true;
    for_each_tensor_(derived(), [&](const at::Tensor& t) { there = there && t.device() == device; });
    if (!there) return locked_like_(from_form_(td_form_().to(device, options)));
    if (is_consolidated()) return derived();  // tensordict: where it is, it stays consolidated
    Derived out = same_batch_([](const at::Tensor& t) { return t; });
    detail::tc(out).set_device_(device);
    return locked_like_(std::move(out));
  }

template <class Derived>
auto TensorClass<Derived>::pin_memory() const -> Derived { return from_form_(td_form_().pin_memory()); }

template <class Derived>
auto TensorClass<Derived>::consolidate(const ConsolidateOptions& options) const -> Derived {
    return from_form_(td_form_().consolidate(options));
  }

template <class Derived>
auto TensorClass<Derived>::is_consolidated() const -> bool {
    if (!tc_consolidated_storage_.defined()) return false;
    bool all = true;
    for_each_tensor_(derived(), [&](const at::Tensor& t) { all = all && detail::is_view_of(t, tc_consolidated_storage_); });
    return all;
  }

template <class Derived>
auto TensorClass<Derived>::consolidated_storage() const -> std::optional<at::Tensor> {
    return is_consolidated() ? std::optional<at::Tensor>(tc_consolidated_storage_) : std::nullopt;
  }

template <class Derived>
auto TensorClass<Derived>::to(at::ScalarType dtype) const -> Derived {
    check_dtypes_(detail::FieldPath{nullptr, schema().name}, "to", [dtype](const at::Tensor&) { return dtype; });
    return locked_like_(same_batch_([&](const at::Tensor& t) { return t.to(dtype); }));
  }

template <class Derived>
auto TensorClass<Derived>::cpu() const -> Derived { return to(at::Device(at::kCPU)); }

template <class Derived>
auto TensorClass<Derived>::clone() const -> Derived {
    Derived out = same_batch_([](const at::Tensor& t) { return t.clone(); });
    return out;
  }

template <class Derived>
auto TensorClass<Derived>::detach() const -> Derived {
    return same_batch_([](const at::Tensor& t) { return t.detach(); });
  }

template <class Derived>
auto TensorClass<Derived>::contiguous() const -> Derived {
    return same_batch_([](const at::Tensor& t) { return t.contiguous(); });
  }

template <class Derived>
auto TensorClass<Derived>::where(const at::Tensor& condition, const Derived& other) const -> Derived {
    Derived out = apply(
        [&](const at::Tensor& a, const at::Tensor& b) { return a.where(detail::align_to_leaf(condition, a), b); },
        other);
    where_stacks_(out, other, condition);
    return out;
  }

template <class Derived>
auto TensorClass<Derived>::where(const at::Tensor& condition, const at::Scalar& other) const -> Derived {
    return apply(
        [&](const at::Tensor& a) { return a.masked_fill(detail::align_to_leaf(condition, a).logical_not(), other); });
  }

template <class Derived>
auto TensorClass<Derived>::masked_fill(const at::Tensor& mask, const at::Scalar& value) const -> Derived {
    return apply([&](const at::Tensor& a) { return a.masked_fill(detail::align_to_leaf(mask, a), value); });
  }

template <class Derived>
auto TensorClass<Derived>::masked_fill_(const at::Tensor& mask, const at::Scalar& value) -> Derived& {
    for_each_tensor_(derived(), [&](const at::Tensor& a) { a.masked_fill_(detail::align_to_leaf(mask, a), value); });
    return derived();
  }

template <class Derived>
auto TensorClass<Derived>::zero_() -> Derived& {
    for_each_tensor_(derived(), [](const at::Tensor& t) { t.zero_(); });
    return derived();
  }

template <class Derived>
auto TensorClass<Derived>::tensordict() const -> TensorDict { return tensordict_form_(detail::NonTensorFields::All); }

template <class Derived>
auto TensorClass<Derived>::to_tensordict() const -> TensorDict { return tensordict().clone(); }

template <class Derived>
auto TensorClass<Derived>::from_tensordict(const TensorDict& td, const Derived& non_tensor,
                                 const FromTensorDictOptions& options) -> Derived {
    Derived out = non_tensor;
    detail::tc(out).set_locked_tree_(false);
    detail::tc(out).tc_consolidated_storage_ = at::Tensor();
    detail::tc(out).saved_path_.reset();
    detail::tc(out).from_td_(td, options.strict);
    detail::tc(out).validate();
    return out;
  }

template <class Derived>
auto TensorClass<Derived>::from_tensordict(const TensorDict& td, const FromTensorDictOptions& options) -> Derived {
    return from_tensordict(td, Derived{}, options);
  }

template <class Derived>
auto TensorClass<Derived>::repr() const -> std::string {
    const PrintOptions options = get_printoptions();
    if (!options.compact) return detailed_repr_(options);
    std::vector<std::string> header;
    if (options.show_batch_size) header.push_back(detail::compact_batch_size(tc_batch_size_));
    if (options.show_device && tc_device_) header.push_back("device=" + tc_device_->str());
    return detail::compact_repr(schema().name, header, compact_fields_(options));
  }

template <class Derived>
auto TensorClass<Derived>::compact_fields_(const PrintOptions& options) const -> std::vector<detail::CompactNode> {
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

template <class Derived>
auto TensorClass<Derived>::detailed_repr_(const PrintOptions& options) const -> std::string {
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

template <class Derived>
auto TensorClass<Derived>::check_same_data_(const Derived& self, const Derived& other) -> void {
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

template <class Derived>
auto TensorClass<Derived>::put_stacks_(Derived& self, const Derived& other, const BatchIndex& bi) -> void {
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

template <class Derived>
auto TensorClass<Derived>::put_stack_at_(std::span<const std::string> path, std::size_t at, const BatchIndex* bi,
                     const NonTensorData& value) -> bool {
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

template <class Derived>
auto TensorClass<Derived>::where_stacks_(Derived& out, const Derived& other, const at::Tensor& condition) const -> void {
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

template <class Derived>
auto TensorClass<Derived>::is_field_(std::string_view name) -> bool {
    for (const auto& f : fields()) {
      if (f.name == name) return true;
    }
    return false;
  }

template <class Derived>
auto TensorClass<Derived>::unnamed_if_empty_(Names names) -> Names {
    for (const auto& n : names) {
      if (n) return names;
    }
    return {};
  }

template <class Derived>
auto TensorClass<Derived>::set_names_(Names names) -> void {
    bool any = false;
    for (const auto& n : names) any = any || n.has_value();
    if (!names.empty() && names.size() != tc_batch_size_.size()) {
      throw ValueError(std::string(schema().name) + ": got " + std::to_string(names.size()) + " names for batch size " +
                       detail::shape_string(batch_size()));
    }
    shape::check_unique_names(names);
    tc_names_ = any ? std::move(names) : Names{};
  }

template <class Derived>
auto TensorClass<Derived>::name_from_schema_() -> void {
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

template <class Derived>
auto TensorClass<Derived>::set_device_(DeviceArg device) -> void {
    tc_device_ = device;
    for_each_nested_([&](auto& n) { detail::tc(n).set_device_(device); });
  }

template <class Derived>
auto TensorClass<Derived>::set_device_tree_(const TensorDict& form) -> void {
    tc_device_ = form.device();
    visit_fields_(detail::Overloaded{[&](detail::NestedField, auto field, auto& m) {
                    if (auto* n = detail::present(m)) detail::tc(*n).set_device_tree_(form.get_td(std::string(field.info().name)));
                  }},
                  derived());
  }

template <class Derived>
auto TensorClass<Derived>::set_locked_tree_(bool locked) -> void {
    tc_locked_ = locked;
    if (!locked) tc_shared_ = false;
    for_each_nested_([&](auto& n) { detail::tc(n).set_locked_tree_(locked); });
  }

template <class Derived>
auto TensorClass<Derived>::set_shared_tree_(bool shared) -> void {
    tc_shared_ = shared;
    for_each_nested_([&](auto& n) { detail::tc(n).set_shared_tree_(shared); });
  }

template <class Derived>
auto TensorClass<Derived>::kept_shared_(Derived out) const -> Derived {
    if (!tc_shared_) return out;
    detail::tc(out).set_shared_tree_(true);
    detail::tc(out).set_locked_tree_(true);
    return out;
  }

template <class Derived>
auto TensorClass<Derived>::kept_shared_(std::vector<Derived> out) const -> std::vector<Derived> {
    for (auto& piece : out) piece = kept_shared_(std::move(piece));
    return out;
  }

template <class Derived>
auto TensorClass<Derived>::validate_(const detail::FieldPath& path, bool trust_built) const -> void {
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

template <class Derived>
auto TensorClass<Derived>::typed_(const TensorDict& td, const char* op) const -> Derived {
    Derived out = from_form_(td);
    detail::tc(out).check_dtypes_(detail::FieldPath{nullptr, schema().name}, op,
                      [](const at::Tensor& t) { return t.scalar_type(); });
    return out;
  }

template <class Derived>
auto TensorClass<Derived>::tensordict_form_(detail::NonTensorFields which) const -> TensorDict {
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

template <class Derived>
auto TensorClass<Derived>::defaults_() -> const Derived& {
    static const Derived instance{};
    return instance;
  }

template <class Derived>
auto TensorClass<Derived>::td_form_() const -> TensorDict {
    TensorDict td = tensordict_form_(detail::NonTensorFields::Stacks);
    if (tc_consolidated_storage_.defined()) td.impl()->set_consolidated_storage(tc_consolidated_storage_);
    return td;
  }

template <class Derived>
auto TensorClass<Derived>::from_form_(const TensorDict& td) const -> Derived {
    Derived out = shell_();
    detail::tc(out).from_td_(td);
    detail::tc(out).tc_consolidated_storage_ = td.impl()->consolidated_storage();
    detail::tc(out).set_locked_tree_(detail::tc(out).tc_consolidated_storage_.defined());
    return out;
  }

template <class Derived>
auto TensorClass<Derived>::from_td_(const TensorDict& td, bool strict) -> void {
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

template <class Derived>
template <class M>
auto TensorClass<Derived>::read_non_tensor_(M& m, const Value& value, const std::string& sub, const schema::FieldInfo& field,
                               std::string_view what) -> void {
    if (!value.is_non_tensor()) throw TypeError(sub + ": " + std::string(what) + " is not non-tensor data");
    const Json json = value.non_tensor().data();
    if (!detail::json_fits<M>(json)) detail::throw_bad_non_tensor(sub, field, json);
    try {
      m = json.template get<M>();
    } catch (const Json::exception&) {
      detail::throw_bad_non_tensor(sub, field, json);
    }
  }

template <class Derived>
template <class V>
auto TensorClass<Derived>::read_stack_(NonTensorStack<V>& m, const Value& value, const std::string& sub,
                          const schema::FieldInfo& field, std::string_view what) -> void {
    if (!value.is_non_tensor()) throw TypeError(sub + ": " + std::string(what) + " is not non-tensor data");
    for (const Json& json : *value.non_tensor().pool()) {
      if (!detail::json_fits<V>(json)) detail::throw_bad_non_tensor(sub, field, json);
    }
    m = NonTensorStack<V>(value.non_tensor());
  }

template <class Derived>
auto TensorClass<Derived>::read_stacks_(const TensorDict& form) -> void {
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

template <class Derived>
auto TensorClass<Derived>::shell_() const -> Derived {
    Derived out;
    detail::tc(out).copy_shell_(derived());
    return out;
  }

template <class Derived>
auto TensorClass<Derived>::copy_shell_(const Derived& src) -> void {
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

template <class Derived>
auto TensorClass<Derived>::locked_like_(Derived out) const -> Derived {
    if (tc_locked_ && !detail::tc(out).tc_locked_) detail::tc(out).set_locked_tree_(true);
    return out;
  }

template <class Derived>
auto TensorClass<Derived>::batch_sizes_(const std::vector<Derived>& list) -> std::vector<at::IntArrayRef> {
    std::vector<at::IntArrayRef> out;
    out.reserve(list.size());
    for (const auto& x : list) out.push_back(detail::tc(x).batch_size());
    return out;
  }

template <class Derived>
auto TensorClass<Derived>::name_feature_mismatch_(const std::vector<at::Tensor>& tensors, int64_t nb, const char* op,
                                     const std::string& path) -> void {
    const at::IntArrayRef first = tensors.front().sizes().slice(nb);
    for (std::size_t i = 1; i < tensors.size(); ++i) {
      const at::IntArrayRef features = tensors[i].sizes().slice(nb);
      if (features != first) detail::throw_feature_shape_mismatch(op, path, first, features, i);
    }
  }

template <class Derived>
auto TensorClass<Derived>::find_tensor_(std::span<const std::string> path, std::size_t at, bool required) const -> const at::Tensor* {
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

template <class Derived>
auto TensorClass<Derived>::set_path_(std::span<const std::string> path, std::size_t at, const at::Tensor& value) -> void {
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

template <class Derived>
auto TensorClass<Derived>::read_loaded_(const TensorDict& td, const std::string& path, std::optional<at::IntArrayRef> parent,
                    bool infer_batch) -> void {
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

// ---- TensorClassPersistence ----

template <class Derived>
auto TensorClassPersistence<Derived>::memmap(const std::string& prefix, const MemmapOptions& options) const -> Derived {
    return written_(prefix, options, MemmapContent::Copy);
  }

template <class Derived>
auto TensorClassPersistence<Derived>::memmap_like(const std::string& prefix, const MemmapOptions& options) const -> Derived {
    return written_(prefix, options, MemmapContent::Like);
  }

template <class Derived>
auto TensorClassPersistence<Derived>::memmap_(const std::string& prefix, const MemmapOptions& options) -> Derived& {
    if (tc_().tc_shared_) throw RuntimeError("memmap_: memmap and shared memory are mutually exclusive features.");
    self_() = memmap(prefix, options);
    return self_();
  }

template <class Derived>
auto TensorClassPersistence<Derived>::load_memmap(const std::string& prefix, std::optional<at::Device> device) -> Derived {
    register_memmap();
    Derived out;
    bool mapped = false;
    read_memmap_tree(prefix, [&] {
      const Json meta = read_memmap_meta(prefix);
      detail::check_memmap_class(meta, TensorClass<Derived>::schema(), prefix);
      const TensorDict td = load_tensorclass_level(prefix, meta, device);
      mapped = td.is_memmap();
      out = from_loaded_(td, prefix, false);
    });
    // A .tdz archive's instance is not memory-mapped, as in tensordict.
    if (mapped) detail::tc(out).saved_path_ = prefix;
    return out;
  }

template <class Derived>
auto TensorClassPersistence<Derived>::register_memmap() -> void {
    static const bool registered = [] {
      MemmapLoader loader = [](const std::string& dir, const Json& meta, std::optional<at::Device> device) {
        return Value(load_tensorclass_level(dir, meta, device));
      };
      register_memmap_class(std::string(TensorClass<Derived>::schema().python_type), loader);
      register_memmap_class(std::string(TensorClass<Derived>::schema().name), loader);
      TensorClass<Derived>::visit_fields_([](detail::NestedField, auto field) { register_nested_memmap_(field); });
      return true;
    }();
    (void)registered;
  }

template <class Derived>
auto TensorClassPersistence<Derived>::to_h5(const std::string& path, const H5Options& options) const -> PersistentTensorDict {
    return tc_().tensordict_form_(detail::NonTensorFields::H5).to_h5(path, options);
  }

template <class Derived>
auto TensorClassPersistence<Derived>::save(const std::string& prefix, const MemmapOptions& options) const -> Derived { return memmap(prefix, options); }

template <class Derived>
auto TensorClassPersistence<Derived>::load(const std::string& prefix, std::optional<at::Device> device) -> Derived {
    return load_memmap(prefix, device);
  }

template <class Derived>
auto TensorClassPersistence<Derived>::from_h5(const std::string& path) -> Derived {
    const TensorDict td = PersistentTensorDict::from_h5(path, "r").to_tensordict();
    return from_loaded_(td, path, true);
  }

template <class Derived>
auto TensorClassPersistence<Derived>::written_(const std::string& prefix, const MemmapOptions& options, MemmapContent content) const -> Derived {
    register_memmap();  // an archive is loaded back after it is written
    MemmapClassTags tags;
    collect_tags_(tags, {});
    const TensorDict mapped =
        memmap_tensorclass(tc_().tensordict_form_(detail::NonTensorFields::Stacks), prefix, tags, options, content);
    Derived out = tc_().shell_();
    detail::tc(out).set_locked_tree_(false);
    detail::tc(out).from_td_(mapped);
    // A .tdz archive loads as tensordict's does: neither memory-mapped nor locked.
    if (mapped.is_memmap()) {
      detail::tc(out).set_locked_tree_(true);
      detail::tc(out).saved_path_ = prefix;
    }
    return out;
  }

template <class Derived>
auto TensorClassPersistence<Derived>::collect_tags_(MemmapClassTags& tags, std::vector<std::string> path) const -> void {
    MemmapClassTag tag{std::string(TensorClass<Derived>::schema().python_type), Json::object()};
    TensorClass<Derived>::visit_fields_(detail::Overloaded{[&](detail::TensorField, auto field, const auto& m) {
                                                if (!m.defined()) tag.fields[std::string(field.info().name)] = nullptr;
                                              },
                                              [&](detail::NestedField, auto field, const auto& m) {
                                                const std::string name(field.info().name);
                                                const auto* n = detail::present(m);
                                                if (!n) {
                                                  tag.fields[name] = nullptr;  // Python's tensorclass stores None
                                                  return;
                                                }
                                                auto sub = path;
                                                sub.push_back(name);
                                                detail::tc(*n).collect_tags_(tags, std::move(sub));
                                              },
                                              [&](detail::DataField, auto field, const auto& m) {
                                                tag.fields[std::string(field.info().name)] = m;
                                              }},
                           self_());
    tags.emplace(std::move(path), std::move(tag));
  }

template <class Derived>
auto TensorClassPersistence<Derived>::append_to_(const std::string& prefix, const MemmapOptions& options) const -> void {
    MemmapClassTags tags;
    collect_tags_(tags, {});
    append_memmap_tensorclass(prefix, tc_().tensordict_form_(detail::NonTensorFields::Stacks), tags, options);
  }

template <class Derived>
auto TensorClassPersistence<Derived>::from_loaded_(const TensorDict& td, const std::string& where, bool infer_batch) -> Derived {
    Derived out;
    try {
      detail::tc(out).read_loaded_(td, std::string(TensorClass<Derived>::schema().name), std::nullopt, infer_batch);
      detail::tc(out).validate();
    } catch (...) {
      rethrow_reworded([&](std::string_view what) { return where + ": " + std::string(what); });
    }
    return out;
  }

}  // namespace tensordict
