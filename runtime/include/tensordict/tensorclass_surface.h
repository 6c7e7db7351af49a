// tensordict::TensorClassSurface<Derived>: the part of a tensorclass's
// interface that the dynamic core runs (pointwise math, comparisons,
// reductions, select/exclude, gather, masked_select, update, set_).
//
// A base of TensorClass<Derived> (tensorclass.h), which owns the typed layer:
// each op here runs TensorDict's op on the tensordict form (the same
// tensors, no copy) and, where the result keeps the schema, turns it back into
// the static type through TensorClass's typed_(). So both layers share one
// implementation of tensordict's semantics.
#pragma once

#include <ATen/core/Tensor.h>
#include <ATen/ops/scalar_tensor.h>

#include <optional>
#include <tuple>
#include <vector>

#include "tensordict/base.h"
#include "tensordict/errors.h"
#include "tensordict/key.h"
#include "tensordict/detail/op_lists.h"
#include "tensordict/detail/tensorclass_fields.h"
#include "tensordict/detail/tensorclass_support.h"

namespace tensordict {

template <class Derived>
class TensorClass;

template <class Derived>
class TensorClassSurface {
 public:
  // The rule for result types: an op whose result fits the schema returns
  // the static type, and every tensor field that declares a dtype must keep
  // it (uint8 pixels / 2 throws ValueError naming the field; cast
  // to_tensordict() to leave the schema). Ops whose result does not fit the
  // schema return a TensorDict: comparisons and predicates (bools),
  // reductions (batch dims removed, dtypes promoted), select/exclude (other
  // keys). In-place forms write into the fields' tensors.
#define TENSORCLASS_UNARY(name)                                                     \
  Derived name() const { return tc_().typed_(tc_().td_form_().name(), #name); } \
  Derived& name##_() {                                                              \
    tc_().td_form_().name##_();                                                   \
    return self_();                                                                 \
  }
  TENSORDICT_UNARY_OPS(TENSORCLASS_UNARY)
#undef TENSORCLASS_UNARY

#define TENSORCLASS_BINARY(name)                                                                             \
  Derived name(const Derived& other) const {                                                                 \
    return tc_().typed_(tc_().td_form_().name(detail::tc(other).td_form_()), #name);                                 \
  }                                                                                                          \
  Derived name(const Operand& other) const { return tc_().typed_(tc_().td_form_().name(other), #name); } \
  Derived& name##_(const Derived& other) {                                                                   \
    tc_().td_form_().name##_(detail::tc(other).td_form_());                                                            \
    return self_();                                                                                          \
  }                                                                                                          \
  Derived& name##_(const Operand& other) {                                                                   \
    tc_().td_form_().name##_(other);                                                                       \
    return self_();                                                                                          \
  }
  TENSORDICT_BINARY_OPS(TENSORCLASS_BINARY)
  TENSORDICT_BINARY_OPS_NO_INPLACE(TENSORCLASS_BINARY)
  TENSORCLASS_BINARY(clamp_min)
  TENSORCLASS_BINARY(clamp_max)
#undef TENSORCLASS_BINARY

  // self + alpha * other, self - alpha * other.
#define TENSORCLASS_ALPHA_BINARY(name)                                              \
  Derived name(const Derived& other, const at::Scalar& alpha = 1) const {           \
    return tc_().typed_(tc_().td_form_().name(detail::tc(other).td_form_(), alpha), #name); \
  }                                                                                 \
  Derived name(const Operand& other, const at::Scalar& alpha = 1) const {           \
    return tc_().typed_(tc_().td_form_().name(other, alpha), #name);            \
  }                                                                                 \
  Derived& name##_(const Derived& other, const at::Scalar& alpha = 1) {             \
    tc_().td_form_().name##_(detail::tc(other).td_form_(), alpha);                            \
    return self_();                                                                 \
  }                                                                                 \
  Derived& name##_(const Operand& other, const at::Scalar& alpha = 1) {             \
    tc_().td_form_().name##_(other, alpha);                                       \
    return self_();                                                                 \
  }
  TENSORCLASS_ALPHA_BINARY(add)
  TENSORCLASS_ALPHA_BINARY(sub)
#undef TENSORCLASS_ALPHA_BINARY
  Derived clamp(const std::optional<at::Scalar>& min, const std::optional<at::Scalar>& max = std::nullopt) const {
    return tc_().typed_(tc_().td_form_().clamp(min, max), "clamp");
  }
  Derived& clamp_(const std::optional<at::Scalar>& min, const std::optional<at::Scalar>& max = std::nullopt) {
    tc_().td_form_().clamp_(min, max);
    return self_();
  }
  // self + weight * (end - self).
  Derived lerp(const Derived& end, const at::Scalar& weight) const {
    return tc_().typed_(tc_().td_form_().lerp(detail::tc(end).td_form_(), weight), "lerp");
  }
  Derived lerp(const Operand& end, const at::Scalar& weight) const {
    return tc_().typed_(tc_().td_form_().lerp(end, weight), "lerp");
  }
  Derived& lerp_(const Derived& end, const at::Scalar& weight) {
    tc_().td_form_().lerp_(detail::tc(end).td_form_(), weight);
    return self_();
  }
  Derived& lerp_(const Operand& end, const at::Scalar& weight) {
    tc_().td_form_().lerp_(end, weight);
    return self_();
  }
  // self + value * t1 * t2, self + value * t1 / t2.
#define TENSORCLASS_TERNARY(name)                                                               \
  Derived name(const Derived& t1, const Derived& t2, const at::Scalar& value = 1) const {       \
    return tc_().typed_(tc_().td_form_().name(detail::tc(t1).td_form_(), detail::tc(t2).td_form_(), value), #name); \
  }                                                                                             \
  Derived name(const Operand& t1, const Operand& t2, const at::Scalar& value = 1) const {       \
    return tc_().typed_(tc_().td_form_().name(t1, t2, value), #name);                       \
  }                                                                                             \
  Derived& name##_(const Derived& t1, const Derived& t2, const at::Scalar& value = 1) {         \
    tc_().td_form_().name##_(detail::tc(t1).td_form_(), detail::tc(t2).td_form_(), value);                            \
    return self_();                                                                             \
  }                                                                                             \
  Derived& name##_(const Operand& t1, const Operand& t2, const at::Scalar& value = 1) {         \
    tc_().td_form_().name##_(t1, t2, value);                                                  \
    return self_();                                                                             \
  }
  TENSORCLASS_TERNARY(addcmul)
  TENSORCLASS_TERNARY(addcdiv)
#undef TENSORCLASS_TERNARY
  // Every tensor field set to `value` / to fn(field), in place.
  Derived& fill_(const at::Scalar& value) {
    tc_().td_form_().fill_(value);
    return self_();
  }
  template <class Fn>
  Derived& apply_(Fn&& fn) {
    tc_().td_form_().apply_(fn);
    return self_();
  }

  // Comparisons and predicates: a TensorDict of bools (the schema's dtypes
  // do not hold for them).
#define TENSORCLASS_COMPARISON(name)                                                                          \
  TensorDict name(const Derived& other) const { return tc_().tensordict().name(detail::tc(other).tensordict()); } \
  TensorDict name(const Operand& other) const { return tc_().tensordict().name(other); }
  TENSORDICT_COMPARISONS(TENSORCLASS_COMPARISON)
#undef TENSORCLASS_COMPARISON
#define TENSORCLASS_PREDICATE(name) \
  TensorDict name() const { return tc_().tensordict().name(); }
  TENSORDICT_PREDICATES(TENSORCLASS_PREDICATE)
#undef TENSORCLASS_PREDICATE

  // Reductions over batch dims (TensorDict's): a TensorDict.
#define TENSORCLASS_REDUCTION(name)                                                              \
  TensorDict name(std::vector<int64_t> dims = {}, const ReduceOptions& options = {}) const { \
    return tc_().tensordict().name(std::move(dims), options);                             \
  }                                                                                          \
  TensorDict name(FeatureDims, const ReduceOptions& options = {}) const {                    \
    return tc_().tensordict().name(feature, options);                                     \
  }
  TENSORDICT_REDUCTIONS(TENSORCLASS_REDUCTION)
  TENSORCLASS_REDUCTION(std)
  TENSORCLASS_REDUCTION(var)
#undef TENSORCLASS_REDUCTION
  // reduce=True: one tensor, as TensorDict::reduce.
  at::Tensor reduce(Reduction op, std::vector<int64_t> dims = {}, const ReduceOptions& options = {}) const {
    return tc_().tensordict().reduce(op, std::move(dims), options);
  }
  at::Tensor reduce(Reduction op, FeatureDims, const ReduceOptions& options = {}) const {
    return tc_().tensordict().reduce(op, feature, options);
  }
  // (values, indices) over one batch dim, as TensorDict::max(dim).
  std::tuple<TensorDict, TensorDict> max(int64_t dim, const ReduceOptions& options = {}) const {
    return tc_().tensordict().max(dim, options);
  }
  std::tuple<TensorDict, TensorDict> min(int64_t dim, const ReduceOptions& options = {}) const {
    return tc_().tensordict().min(dim, options);
  }

#define TENSORCLASS_OPERATOR(op, method)                                                 \
  friend Derived operator op(const Derived& a, const Derived& b) { return detail::tc(a).method(b); } \
  friend Derived operator op(const Derived& a, const Operand& b) { return detail::tc(a).method(b); }
  TENSORCLASS_OPERATOR(+, add)
  TENSORCLASS_OPERATOR(-, sub)
  TENSORCLASS_OPERATOR(*, mul)
  TENSORCLASS_OPERATOR(/, div)
#undef TENSORCLASS_OPERATOR
#define TENSORCLASS_COMPARISON_OPERATOR(op, method)                                         \
  friend TensorDict operator op(const Derived& a, const Derived& b) { return detail::tc(a).method(b); } \
  friend TensorDict operator op(const Derived& a, const Operand& b) { return detail::tc(a).method(b); }
  TENSORCLASS_COMPARISON_OPERATOR(==, eq)
  TENSORCLASS_COMPARISON_OPERATOR(!=, ne)
  TENSORCLASS_COMPARISON_OPERATOR(<, lt)
  TENSORCLASS_COMPARISON_OPERATOR(<=, le)
  TENSORCLASS_COMPARISON_OPERATOR(>, gt)
  TENSORCLASS_COMPARISON_OPERATOR(>=, ge)
#undef TENSORCLASS_COMPARISON_OPERATOR
  friend Derived operator-(const Derived& a) { return detail::tc(a).neg(); }

  // tensordict's rsub (other - alpha * self) and mod (the remainder with the
  // divisor's sign), typed; bitwise_and keeps the fields' dtypes (integer
  // and bool fields); logical_and gives bools, so a TensorDict, as the
  // comparisons do.
  Derived rsub(const Operand& other, const at::Scalar& alpha = 1) const {
    return tc_().typed_(tc_().td_form_().rsub(other, alpha), "rsub");
  }
  Derived mod(const Derived& other) const {
    return tc_().typed_(tc_().td_form_().mod(detail::tc(other).td_form_()), "mod");
  }
  Derived mod(const Operand& other) const { return tc_().typed_(tc_().td_form_().mod(other), "mod"); }
  Derived bitwise_and(const Derived& other) const {
    return tc_().typed_(tc_().td_form_().bitwise_and(detail::tc(other).td_form_()), "bitwise_and");
  }
  Derived bitwise_and(const Operand& other) const {
    return tc_().typed_(tc_().td_form_().bitwise_and(other), "bitwise_and");
  }
  TensorDict logical_and(const Derived& other) const {
    return tc_().td_form_().logical_and(detail::tc(other).td_form_());
  }
  TensorDict logical_and(const Operand& other) const { return tc_().td_form_().logical_and(other); }
  // The elements of the tensor fields (tensordict's param_count).
  int64_t param_count(const BytesOptions& options = {}) const { return tc_().td_form_().param_count(options); }

  // %, &, |, ^, ~ per tensor field; a scalar or tensor on the left of +, -,
  // *, /, &, |, ^ (tensordict's reflected operators).
  friend Derived operator%(const Derived& a, const Derived& b) { return detail::tc(a).mod(b); }
  friend Derived operator%(const Derived& a, const Operand& b) { return detail::tc(a).mod(b); }
#define TENSORCLASS_BITWISE_OPERATOR(op)                                                          \
  friend Derived operator op(const Derived& a, const Derived& b) { return combined_(a, b, #op); } \
  friend Derived operator op(const Derived& a, const Operand& b) { return combined_(a, b, #op); } \
  friend Derived operator op(const at::Scalar& a, const Derived& b) { return combined_(b, a, #op); } \
  friend Derived operator op(const at::Tensor& a, const Derived& b) { return combined_(b, a, #op); }
  TENSORCLASS_BITWISE_OPERATOR(&)
  TENSORCLASS_BITWISE_OPERATOR(|)
  TENSORCLASS_BITWISE_OPERATOR(^)
#undef TENSORCLASS_BITWISE_OPERATOR
  friend Derived operator~(const Derived& a) { return detail::tc(a).bitwise_not_(); }
#define TENSORCLASS_REFLECTED_OPERATOR(op, body)                                  \
  friend Derived operator op(const at::Scalar& a, const Derived& b) { return body; } \
  friend Derived operator op(const at::Tensor& a, const Derived& b) { return body; }
  TENSORCLASS_REFLECTED_OPERATOR(+, detail::tc(b).add(a))
  TENSORCLASS_REFLECTED_OPERATOR(-, detail::tc(b).rsub(a))
  TENSORCLASS_REFLECTED_OPERATOR(*, detail::tc(b).mul(a))
  TENSORCLASS_REFLECTED_OPERATOR(/, detail::tc(detail::tc(b).reciprocal()).mul(a))
#undef TENSORCLASS_REFLECTED_OPERATOR

  // The elements where the batch mask is true, in one batch dim.
  Derived masked_select(const at::Tensor& mask) const {
    return tc_().typed_(tc_().td_form_().masked_select(mask), "masked_select");
  }
  // torch.gather along batch dim `dim`; the result's batch size is index's shape.
  Derived gather(int64_t dim, const at::Tensor& index) const {
    return tc_().typed_(tc_().td_form_().gather(dim, index), "gather");
  }

  // A TensorDict of the fields `keys` (shared), non-tensor fields included.
  TensorDict select(const std::vector<NestedKey>& keys, const SelectOptions& options = {}) const {
    return TensorDict(tc_().tensordict().select(keys, options));
  }
  TensorDict exclude(const std::vector<NestedKey>& keys) const {
    return TensorDict(tc_().tensordict().exclude(keys));
  }

  // Sets every entry of `other` (a tensordict holding fields of this class,
  // tensor or non-tensor; nested tensorclasses as nested tensordicts), then
  // validates: a key that is no field is a KeyError, a value that breaks the
  // schema leaves this object unchanged. Refused when locked.
  Derived& update(const TensorDict& other) {
    if (tc_().is_locked())
      detail::throw_locked(TensorClass<Derived>::schema().name, other.keys().empty() ? "" : other.keys().front().repr());
    TensorDict next = tc_().tensordict();
    next.update(other);
    Derived updated = TensorClass<Derived>::from_tensordict(next, self_());
    detail::tc(updated).tc_consolidated_storage_ = at::Tensor();
    self_() = std::move(updated);
    return self_();
  }
  Derived& update(const Derived& other) { return update(detail::tc(other).tensordict()); }
  // In place: every tensor of `other` is written into the field's tensor.
  Derived& update_(const TensorDict& other) {
    TensorDict form = tc_().td_form_();
    form.update_(other);
    tc_().read_stacks_(form);  // the form's NonTensorStack entries are values, not views
    return self_();
  }
  Derived& update_(const Derived& other) { return update_(detail::tc(other).td_form_()); }
  // tensordict's update_at_: every tensor of `other` (a tensordict of tensor
  // fields, or an object of this class shaped like obj[index]) written into
  // the field's tensor at batch `index`.
  Derived& update_at_(const TensorDict& other, at::ArrayRef<TensorIndex> index) {
    TensorDict form = tc_().td_form_();
    form.update_at_(other, index);
    tc_().read_stacks_(form);
    return self_();
  }
  Derived& update_at_(const Derived& other, at::ArrayRef<TensorIndex> index) {
    return update_at_(detail::tc(other).td_form_(), index);
  }
  // Writes into the existing tensor field at `key` in place.
  Derived& set_(const NestedKey& key, const at::Tensor& value) {
    tc_().td_form_().set_(key, value);
    return self_();
  }

  // tensordict's copy_ / copy_at_: update_() and update_at_() under torch's name.
  Derived& copy_(const Derived& other) { return update_(other); }
  Derived& copy_(const TensorDict& other) { return update_(other); }
  Derived& copy_at_(const Derived& other, at::ArrayRef<TensorIndex> index) { return update_at_(other, index); }
  Derived& copy_at_(const TensorDict& other, at::ArrayRef<TensorIndex> index) { return update_at_(other, index); }
  // A copy with the fields of `entries` set (tensordict's replace): this
  // object is unchanged, the copy validated like update().
  Derived replace(const TensorDict& entries) const {
    if (entries.keys().empty()) return self_();
    return TensorClass<Derived>::from_tensordict(tc_().tensordict().replace(entries), self_());
  }
  // tensordict's separates: removes the fields `keys` and returns them as a
  // TensorDict. Only optional fields can go (a required one is a ValueError
  // naming it, and nothing is removed); tensordict's result is an object of
  // the class with the other fields None.
  TensorDict separates(const std::vector<NestedKey>& keys, const SeparatesOptions& options = {}) {
    TensorDict rest = tc_().tensordict();
    TensorDict removed = rest.separates(keys, options);
    self_() = TensorClass<Derived>::from_tensordict(rest, self_());
    return removed;
  }
  // The non-tensor fields (tensordict's non_tensor_items), of this level or
  // of every nested one too ({.include_nested = true}).
  std::vector<std::pair<NestedKey, NonTensorData>> non_tensor_items(const NonTensorItemsOptions& options = {}) const {
    return tc_().tensordict().non_tensor_items(options);
  }
  // The tensor fields, shared (tensordict's filter_non_tensor_data; its
  // result is an object of the class with the non-tensor fields None).
  TensorDict filter_non_tensor_data() const { return tc_().tensordict_form_(detail::NonTensorFields::None); }
  // The device every tensor field is on becomes the object's (tensordict's
  // auto_device_); none when they differ.
  Derived& auto_device_() {
    TensorDict form = tc_().td_form_();
    form.auto_device_();
    tc_().set_device_tree_(form);
    return self_();
  }
  // Tensor::record_stream for every tensor field.
  Derived& record_stream(c10::Stream stream) {
    tc_().td_form_().record_stream(stream);
    return self_();
  }

  // ---- one entry at a batch index (tensordict's get_at / set_at_) ------------------------
  at::Tensor get_at(const NestedKey& key, at::ArrayRef<TensorIndex> index) const {
    return BatchIndex(index, tc_().batch_size()).apply(tc_().get(key));
  }
  // Writes `value` into the tensor field at `key`, at batch `index`, in place.
  Derived& set_at_(const NestedKey& key, const at::Tensor& value, at::ArrayRef<TensorIndex> index) {
    BatchIndex(index, tc_().batch_size()).put(tc_().get(key), value);
    return self_();
  }
  Derived& set_at_(const NestedKey& key, const at::Scalar& value, at::ArrayRef<TensorIndex> index) {
    return set_at_(key, at::scalar_tensor(value, tc_().get(key).options()), index);
  }

  // ---- ops that repeat or split batch elements (TensorDict's, retyped) --------------------
  Derived repeat(at::IntArrayRef repeats) const { return tc_().typed_(tc_().td_form_().repeat(repeats), "repeat"); }
  Derived repeat_interleave(int64_t repeats, std::optional<int64_t> dim = std::nullopt) const {
    return tc_().typed_(tc_().td_form_().repeat_interleave(repeats, dim), "repeat_interleave");
  }
  Derived repeat_interleave(const at::Tensor& repeats, std::optional<int64_t> dim = std::nullopt) const {
    return tc_().typed_(tc_().td_form_().repeat_interleave(repeats, dim), "repeat_interleave");
  }
  std::vector<Derived> tensor_split(int64_t sections, int64_t dim = 0) const {
    return typed_pieces_(tc_().td_form_().tensor_split(sections, dim), "tensor_split");
  }
  std::vector<Derived> tensor_split(at::IntArrayRef indices, int64_t dim = 0) const {
    return typed_pieces_(tc_().td_form_().tensor_split(indices, dim), "tensor_split");
  }

  // ---- dicts (tensordict's to_dict / from_dict) --------------------------------------
  // One entry per field: tensors (shared), nested classes as dicts, non-tensor
  // fields as their values.
  c10::Dict<std::string, c10::IValue> to_dict() const { return tc_().tensordict().to_dict(); }
  // The inverse: TensorDict::from_dict, then from_tensordict (validated; a key
  // that is no field is a KeyError).
  static Derived from_dict(const c10::Dict<std::string, c10::IValue>& dict, const FromDictOptions& options = {}) {
    return TensorClass<Derived>::from_tensordict(TensorDict::from_dict(dict, options));
  }

  // True when every element of every tensor member is true / nonzero.
  bool all() const {
    bool ok = true;
    TensorClass<Derived>::for_each_tensor_(self_(), [&](const at::Tensor& t) { ok = ok && t.all().template item<bool>(); });
    return ok;
  }
  bool any() const {
    bool found = false;
    TensorClass<Derived>::for_each_tensor_(self_(), [&](const at::Tensor& t) { found = found || t.any().template item<bool>(); });
    return found;
  }
  // all / any along batch dim `dim`: a TensorDict of bools, as the
  // comparisons give (tensordict: an object of the class holding bools).
  TensorDict all(int64_t dim) const { return tc_().td_form_().all(dim); }
  TensorDict any(int64_t dim) const { return tc_().td_form_().any(dim); }

 protected:
  TensorClassSurface() = default;

 private:
  // a & b, a | b, a ^ b on the tensor fields, typed (`op` names the operator).
  static Derived combined_(const Derived& a, const Operand& b, const char* op) {
    const TensorDict td = detail::tc(a).td_form_();
    const std::string_view which(op);
    const TensorDict result = which == "&" ? (td & b) : which == "|" ? (td | b) : (td ^ b);
    return detail::tc(a).typed_(result, op);
  }
  static Derived combined_(const Derived& a, const Derived& b, const char* op) {
    return combined_(a, Operand(detail::tc(b).td_form_()), op);
  }
  std::vector<Derived> typed_pieces_(const std::vector<TensorDict>& pieces, const char* op) const {
    std::vector<Derived> out;
    out.reserve(pieces.size());
    for (const auto& piece : pieces) out.push_back(tc_().typed_(piece, op));
    return out;
  }
  // ~a, typed.
  Derived bitwise_not_() const { return tc_().typed_(~tc_().td_form_(), "~"); }

  // The object, for results and assignment (a Derived&), and its
  // TensorClass<Derived> part, through which members are reached: a field of
  // Derived may hide any of them (detail::tc in tensorclass_fields.h).
  Derived& self_() { return static_cast<Derived&>(*this); }
  const Derived& self_() const { return static_cast<const Derived&>(*this); }
  TensorClass<Derived>& tc_() { return detail::tc(self_()); }
  const TensorClass<Derived>& tc_() const { return detail::tc(self_()); }
};

}  // namespace tensordict
