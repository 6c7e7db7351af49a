// apply and the pointwise ops: every op is a leaf function handed to
// map_leaves (with a tensor or scalar operand) or map_pairs (with a
// tensordict operand).
#include <ATen/ATen.h>

#include <algorithm>
#include <stdexcept>
#include <string_view>
#include <vector>

#include "core/format.h"
#include "core/kind_ops.h"
#include "ops/copies.h"
#include "ops/map_pairs.h"
#include "tensordict/detail/impl.h"
#include "tensordict/detail/tensorclass_support.h"  // align_to_leaf, is_view_of: shared with the typed layer
#include "tensordict/base.h"
#include "tensordict/errors.h"

namespace tensordict {

using detail::OpKind;

at::Tensor Operand::tensor() const {
  if (auto t = std::get_if<at::Tensor>(&value_)) return *t;
  if (auto s = std::get_if<at::Scalar>(&value_)) {
    at::Tensor wrapped = c10::scalar_to_tensor(*s);
    wrapped.unsafeGetTensorImpl()->set_wrapped_number(true);
    return wrapped;
  }
  return at::Tensor();
}

namespace {

TensorDict wrap(std::shared_ptr<TensorDictImpl> impl) { return TensorDict(TensorDict(std::move(impl))); }

// Pointwise by default (OpKind::Leafwise); ops whose fn depends on where the
// batch dims are (softmax over a batch dim, a batch-shaped mask or operand)
// pass OpKind::Value.
// `nested`: the op on a nested lazy stack inside the batch (map_leaves).
TensorDict unary(const TensorDict& td, c10::function_ref<at::Tensor(const at::Tensor&)> fn, const char* op,
                 OpKind kind = OpKind::Leafwise, const detail::NestedOp* nested = nullptr) {
  // tensordict runs ops on a lazy stack member by member (_lazy.py
  // _fast_apply): members of different shapes work, the result stays lazy.
  if (kind == OpKind::Leafwise) {
    if (const auto own = detail::kind_ops(*td.impl()).pointwise) {
      return own(td, nullptr, op, [&](const TensorDict& m, const Operand*) { return unary(m, fn, op, kind); });
    }
  }
  return wrap(detail::map_leaves(*td.impl(), {td.batch_size().vec(), td.names()}, td.device(), kind, fn, op,
                                 detail::ShapeCheck::Results, nested));
}

// A tensor operand with dims is shaped like the batch (tensordict's
// _maybe_broadcast_other, base.py:319): the batch size and the operand's
// shape broadcast together, and each leaf meets the operand aligned with its
// batch dims, expanded over its own trailing dims. The broadcast batch size.
std::vector<int64_t> operand_batch(const TensorDict& td, const at::Tensor& t, const char* op) {
  const at::IntArrayRef batch = td.batch_size();
  std::vector<int64_t> out(std::max(batch.size(), static_cast<std::size_t>(t.dim())));
  for (std::size_t i = 0; i < out.size(); ++i) {
    const auto from_end = [&](at::IntArrayRef s) { return i < s.size() ? s[s.size() - 1 - i] : int64_t{1}; };
    const int64_t a = from_end(batch), b = from_end(t.sizes());
    if (a != b && a != 1 && b != 1) {
      throw ValueError(
          fmt::format("{}: a tensor operand of shape {} does not broadcast with the batch size {} "
                      "(a tensor operand is shaped like the batch)",
                      op, shape_string(t.sizes()), shape_string(batch)));
    }
    out[out.size() - 1 - i] = a == 1 ? b : a;
  }
  return out;
}

// A tensor operand with dims that would broadcast the batch size to more:
// an in-place op cannot.
void check_inplace_operand(const TensorDict& td, const Operand& other, const char* op) {
  if (other.tensordict()) return;
  const at::Tensor t = other.tensor();
  if (t.dim() > 0 && operand_batch(td, t, op) != td.batch_size()) {
    throw ValueError(fmt::format(
        "{}: a tensor operand of shape {} would broadcast the batch size {} to {}, which "
        "an in-place op cannot",
        op, shape_string(t.sizes()), shape_string(td.batch_size()), shape_string(operand_batch(td, t, op))));
  }
}

// An in-place op on a lazy stack writes into its members, each with its
// operand (tensordict's _fast_apply in place): false for another kind.
bool inplace_on_members(const TensorDict& td, const Operand& other, const char* op,
                        c10::function_ref<void(TensorDict&, const Operand&)> fn) {
  const auto own = detail::kind_ops(*td.impl()).pointwise_;
  if (!own) return false;
  check_inplace_operand(td, other, op);
  own(td, &other, op, [&](TensorDict& m, const Operand* share) { fn(m, *share); });
  return true;
}
bool inplace_on_members(const TensorDict& td, c10::function_ref<void(TensorDict&)> fn) {
  const auto own = detail::kind_ops(*td.impl()).pointwise_;
  if (!own) return false;
  own(td, nullptr, "", [&](TensorDict& m, const Operand*) { fn(m); });
  return true;
}

// fn pointwise over td's leaves and the operand's (a tensor operand is shaped
// like the batch, a scalar is leafwise).
// `non_tensor`: what two non-tensor entries at one key give (map_pairs).
TensorDict binary(const TensorDict& td, const Operand& other, detail::PairFn fn, const MissingKeys& missing, const char* op,
                  detail::NonTensorPairs non_tensor = detail::NonTensorPairs::Carry) {
  const TensorDict* o = other.tensordict();
  const at::Tensor t = o ? at::Tensor() : other.tensor();
  if (!o && t.dim() > 0) {
    const std::vector<int64_t> batch = operand_batch(td, t, op);
    if (batch != td.batch_size()) return binary(td.expand(batch), other, fn, missing, op, non_tensor);
  }
  // A lazy stack: member by member, each with its part of the operand.
  if (const auto own = detail::kind_ops(*td.impl()).pointwise) {
    return own(td, &other, op,
               [&](const TensorDict& m, const Operand* share) { return binary(m, *share, fn, missing, op, non_tensor); });
  }
  if (o) return wrap(detail::map_pairs(*td.impl(), *o->impl(), fn, missing, op, non_tensor));
  if (t.dim() == 0) return unary(td, [&](const at::Tensor& leaf) { return fn(leaf, t); }, op);
  const at::Tensor shaped = t.expand(td.batch_size());  // once, not per leaf
  // A nested lazy stack inside the batch meets the operand over its own
  // batch (trailing dims of size 1 for the dims past td's).
  auto nested_binary = [&](const TensorDict& n) {
    std::vector<int64_t> sizes = shaped.sizes().vec();
    sizes.resize(static_cast<std::size_t>(n.batch_dims()), 1);
    return std::vector<TensorDict>{binary(n, shaped.reshape(sizes), fn, missing, op, non_tensor)};
  };
  const detail::NestedOp nested = nested_binary;
  return unary(td, [&](const at::Tensor& leaf) { return fn(leaf, detail::align_to_leaf(shaped, leaf)); }, op, OpKind::Value,
               &nested);
}

void binary_(TensorDict& td, const Operand& other, c10::function_ref<void(at::Tensor&, const at::Tensor&)> fn,
             const MissingKeys& missing, const char* op) {
  if (const TensorDict* o = other.tensordict()) {
    detail::update_pairs(*td.impl(), *o->impl(), fn, missing, op);
    return;
  }
  check_inplace_operand(td, other, op);
  const at::Tensor t = other.tensor();
  const at::Tensor shaped = t.dim() == 0 ? t : t.expand(td.batch_size());
  detail::for_each_tensor(*td.impl(), [&](const at::Tensor& leaf) {
    at::Tensor target = leaf;
    fn(target, t.dim() == 0 ? t : detail::align_to_leaf(shaped, leaf));
  }, op);
}

// libtorch 1.x takes c10::optional, a distinct type from std::optional (2.x
// makes them one).
c10::optional<at::Scalar> to_c10(const std::optional<at::Scalar>& value) {
  return value ? c10::optional<at::Scalar>(*value) : c10::nullopt;
}

// Whether a lazy stack sits at a nested level (metadata only): map_pairs
// pairs one member by member, where a condition over the whole batch does
// not fit the members.
bool holds_nested_lazy(const TensorDictImpl& level) {
  bool found = false;
  level.for_each_key([&](const std::string& key, EntryKind kind) {
    if (found || kind != EntryKind::TensorDict) return;
    const TensorDict nested = level.find(key)->tensordict();
    found = detail::as_stacked(*nested.impl()) != nullptr || holds_nested_lazy(*nested.impl());
  });
  return found;
}

}  // namespace

// ---- apply ------------------------------------------------------------------------

TensorDict TensorDict::apply(const TensorFn& fn, std::optional<std::vector<int64_t>> batch_size,
                                     std::optional<Names> names) const {
  // tensordict runs a lazy stack's apply per member; the result stays lazy.
  if (!batch_size && !names) {
    if (auto parts = impl_->map_parts([&](const TensorDict& part) { return part.apply(fn); })) return TensorDict(parts);
  }
  detail::PieceMeta meta{batch_size ? *batch_size : this->batch_size().vec(), names ? *names : Names{}};
  if (!batch_size && !names) meta.names = this->names();
  // A nested lazy stack runs per member too: Leafwise.
  TensorDict out = wrap(detail::map_leaves(*impl_, meta, device(), OpKind::Leafwise, [&](const at::Tensor& t) { return fn(t); }, "apply"));
  // filter_empty: drop undefined results, then nested levels they emptied.
  // A lazy stack is pruned member by member (its members may not stack).
  auto prune = [](auto&& self, TensorDict level) -> bool {
    if (auto lazy = detail::as_stacked(*level.impl())) {
      bool pruned = false;
      for (const auto& m : lazy->members()) pruned = self(self, m) || pruned;
      return pruned;
    }
    auto emptied = [](const TensorDict& td) {
      auto lazy = detail::as_stacked(*td.impl());
      if (!lazy) return td.num_keys() == 0;
      return std::all_of(lazy->members().begin(), lazy->members().end(), [](const TensorDict& m) { return m.num_keys() == 0; });
    };
    std::vector<std::string> drop;
    level.impl()->for_each([&](const std::string& key, const Value& v) {
      if (v.is_tensor() && !v.tensor().defined()) {
        drop.push_back(key);
      } else if (v.is_tensordict() && self(self, v.tensordict()) && emptied(v.tensordict())) {
        drop.push_back(key);
      }
    });
    for (const auto& key : drop) level.impl()->erase(key);
    return !drop.empty();
  };
  prune(prune, out);  // map_leaves checked each result against its level's batch size
  return out;
}

TensorDict TensorDict::apply(const BinaryTensorFn& fn, const TensorDict& other, MissingKeys missing) const {
  return wrap(detail::map_pairs(*impl_, *other.impl(), [&](const at::Tensor& a, const at::Tensor& b) { return fn(a, b); },
                                missing, "apply"));
}

TensorDict TensorDict::named_apply(const NamedTensorFn& fn) const {
  TensorDict out = detail::dense_shallow_copy(*this, "named_apply");
  for (const auto& [key, value] : items({.include_nested = true, .leaves_only = true})) {
    if (!value.is_tensor()) continue;
    at::Tensor result;
    try {
      result = fn(key, value.tensor());
    } catch (...) {
      detail::rethrow_for_key("named_apply", key);
    }
    if (result.defined()) {
      const auto batch = (key.is_nested() ? out.get_td(key.parent()) : TensorDict(out)).batch_size().vec();
      if (!detail::leaf_starts_with(result, batch)) {
        throw RuntimeError(fmt::format("named_apply: the result for key {} has shape {}, which does not start with the batch size {}",
                                             key.repr(), shape_string(detail::leaf_shape(result)), shape_string(batch)));
      }
      detail::replace_entry(out, key, result);
    } else {
      out.del_(key);
    }
  }
  return out;
}

TensorDict& TensorDict::apply_(const TensorFn& fn) {
  if (inplace_on_members(*this, [&](TensorDict& m) { m.apply_(fn); })) return *this;
  if (!detail::writes_through(*impl_)) return update_(apply(fn));
  detail::for_each_tensor(*impl_, [&](const at::Tensor& leaf) {
    at::Tensor target = leaf;
    target.copy_(fn(leaf));
  }, "apply_");
  return *this;
}

TensorDict TensorDict::softmax(int64_t dim, std::optional<at::ScalarType> dtype) const {
  const int64_t d = wrap_batch_dim(dim, batch_dims(), "softmax");
  // c10::optional: a distinct type before libtorch 2.x
  auto leaf_softmax = [&](const at::Tensor& t) { return dtype ? at::softmax(t, d, *dtype) : at::softmax(t, d); };
  // A lazy stack: member by member unless its members' entries stack
  // (tensordict's LazyStackedTensorDict._softmax).
  if (const auto own = detail::kind_ops(*impl_).softmax) {
    if (auto out = own(*this, d, dtype, [&](const TensorDict& td) { return unary(td, leaf_softmax, "softmax"); })) {
      return *std::move(out);
    }
  }
  // A nested lazy stack inside the batch runs softmax itself.
  auto softmax_nested = [&](const TensorDict& n) { return std::vector<TensorDict>{n.softmax(d, dtype)}; };
  const detail::NestedOp nested = softmax_nested;
  return unary(*this, leaf_softmax, "softmax", OpKind::Value, &nested);
}

// ---- unary ops ------------------------------------------------------------------

#define TENSORDICT_DEFINE_UNARY(name)                                                                       \
  TensorDict TensorDict::name() const {                                                                 \
    return unary(*this, [](const at::Tensor& t) { return t.name(); }, #name);                               \
  }                                                                                                         \
  TensorDict& TensorDict::name##_() {                                                               \
    if (inplace_on_members(*this, [](TensorDict& m) { m.name##_(); })) return *this;                        \
    if (!detail::writes_through(*impl_)) return update_(name());                                            \
    detail::for_each_tensor(*impl_, [](const at::Tensor& t) { t.name##_(); }, #name "_");                   \
    return *this;                                                                                           \
  }
TENSORDICT_UNARY_OPS(TENSORDICT_DEFINE_UNARY)
#undef TENSORDICT_DEFINE_UNARY

#define TENSORDICT_DEFINE_PREDICATE(name)                                                  \
  TensorDict TensorDict::name() const {                                                \
    return unary(*this, [](const at::Tensor& t) { return at::name(t); }, #name);           \
  }
TENSORDICT_PREDICATES(TENSORDICT_DEFINE_PREDICATE)
#undef TENSORDICT_DEFINE_PREDICATE

// ---- binary ops -------------------------------------------------------------------

#define TENSORDICT_DEFINE_BINARY(name, inplace_body)                                                                 \
  TensorDict TensorDict::name(const Operand& other, MissingKeys missing) const {                                 \
    return binary(*this, other, [](const at::Tensor& a, const at::Tensor& b) { return at::name(a, b); }, missing, #name); \
  }                                                                                                                  \
  TensorDict& TensorDict::name##_(const Operand& other, MissingKeys missing) {                               \
    if (inplace_on_members(*this, other, #name "_",                                                                  \
                           [&](TensorDict& m, const Operand& part) { m.name##_(part, missing); }))                   \
      return *this;                                                                                                  \
    if (!detail::writes_through(*impl_)) return update_(name(other, missing));                                       \
    binary_(*this, other, [](at::Tensor& a, const at::Tensor& b) { inplace_body; }, missing, #name "_");              \
    return *this;                                                                                                    \
  }
#define TENSORDICT_DEFINE_BINARY_NATIVE(name) TENSORDICT_DEFINE_BINARY(name, a.name##_(b))
#define TENSORDICT_DEFINE_BINARY_COPY(name) TENSORDICT_DEFINE_BINARY(name, a.copy_(at::name(a, b)))
TENSORDICT_BINARY_OPS(TENSORDICT_DEFINE_BINARY_NATIVE)
TENSORDICT_BINARY_OPS_NO_INPLACE(TENSORDICT_DEFINE_BINARY_COPY)
TENSORDICT_DEFINE_BINARY_NATIVE(clamp_min)
TENSORDICT_DEFINE_BINARY_NATIVE(clamp_max)
#undef TENSORDICT_DEFINE_BINARY_COPY
#undef TENSORDICT_DEFINE_BINARY_NATIVE
#undef TENSORDICT_DEFINE_BINARY

TensorDict TensorDict::add(const Operand& other, const at::Scalar& alpha, MissingKeys missing) const {
  return binary(*this, other, [&](const at::Tensor& a, const at::Tensor& b) { return at::add(a, b, alpha); }, missing, "add");
}
TensorDict& TensorDict::add_(const Operand& other, const at::Scalar& alpha, MissingKeys missing) {
  if (inplace_on_members(*this, other, "add_", [&](TensorDict& m, const Operand& part) { m.add_(part, alpha, missing); })) {
    return *this;
  }
  if (!detail::writes_through(*impl_)) return update_(add(other, alpha, missing));
  binary_(*this, other, [&](at::Tensor& a, const at::Tensor& b) { a.add_(b, alpha); }, missing, "add_");
  return *this;
}
TensorDict TensorDict::sub(const Operand& other, const at::Scalar& alpha, MissingKeys missing) const {
  return binary(*this, other, [&](const at::Tensor& a, const at::Tensor& b) { return at::sub(a, b, alpha); }, missing, "sub");
}
TensorDict& TensorDict::sub_(const Operand& other, const at::Scalar& alpha, MissingKeys missing) {
  if (inplace_on_members(*this, other, "sub_", [&](TensorDict& m, const Operand& part) { m.sub_(part, alpha, missing); })) {
    return *this;
  }
  if (!detail::writes_through(*impl_)) return update_(sub(other, alpha, missing));
  binary_(*this, other, [&](at::Tensor& a, const at::Tensor& b) { a.sub_(b, alpha); }, missing, "sub_");
  return *this;
}

TensorDict TensorDict::clamp(const std::optional<at::Scalar>& min, const std::optional<at::Scalar>& max) const {
  return unary(*this, [&](const at::Tensor& t) { return at::clamp(t, to_c10(min), to_c10(max)); }, "clamp");
}
TensorDict& TensorDict::clamp_(const std::optional<at::Scalar>& min, const std::optional<at::Scalar>& max) {
  if (inplace_on_members(*this, [&](TensorDict& m) { m.clamp_(min, max); })) return *this;
  if (!detail::writes_through(*impl_)) return update_(clamp(min, max));
  detail::for_each_tensor(*impl_, [&](const at::Tensor& t) { t.clamp_(to_c10(min), to_c10(max)); }, "clamp_");
  return *this;
}

TensorDict TensorDict::lerp(const Operand& end, const at::Scalar& weight) const {
  return binary(*this, end, [&](const at::Tensor& a, const at::Tensor& b) { return at::lerp(a, b, weight); }, MissingKeys::error(),
                "lerp");
}
TensorDict& TensorDict::lerp_(const Operand& end, const at::Scalar& weight) {
  if (inplace_on_members(*this, end, "lerp_", [&](TensorDict& m, const Operand& part) { m.lerp_(part, weight); })) return *this;
  if (!detail::writes_through(*impl_)) return update_(lerp(end, weight));
  binary_(*this, end, [&](at::Tensor& a, const at::Tensor& b) { a.lerp_(b, weight); }, MissingKeys::error(), "lerp_");
  return *this;
}

namespace {
// t1 * t2 or t1 / t2 where either may be a tensordict (matched by key).
Operand combine(const Operand& t1, const Operand& t2, bool divide) {
  if (const TensorDict* a = t1.tensordict()) return divide ? a->div(t2) : a->mul(t2);
  if (const TensorDict* b = t2.tensordict()) return divide ? b->reciprocal().mul(t1) : b->mul(t1);
  return divide ? t1.tensor() / t2.tensor() : t1.tensor() * t2.tensor();
}
}  // namespace

// addcmul / addcdiv: self + value * (t1 op t2).
TensorDict TensorDict::addcmul(const Operand& t1, const Operand& t2, const at::Scalar& value) const {
  return add(combine(t1, t2, false), value);
}
TensorDict& TensorDict::addcmul_(const Operand& t1, const Operand& t2, const at::Scalar& value) {
  return add_(combine(t1, t2, false), value);
}
TensorDict TensorDict::addcdiv(const Operand& t1, const Operand& t2, const at::Scalar& value) const {
  return add(combine(t1, t2, true), value);
}
TensorDict& TensorDict::addcdiv_(const Operand& t1, const Operand& t2, const at::Scalar& value) {
  return add_(combine(t1, t2, true), value);
}

TensorDict& TensorDict::zero_() {
  if (inplace_on_members(*this, [](TensorDict& m) { m.zero_(); })) return *this;
  if (!detail::writes_through(*impl_)) return update_(apply([](const at::Tensor& t) { return at::zeros_like(t); }));
  detail::for_each_tensor(*impl_, [](const at::Tensor& t) { t.zero_(); }, "zero_");
  return *this;
}

TensorDict& TensorDict::fill_(const at::Scalar& value) {
  if (inplace_on_members(*this, [&](TensorDict& m) { m.fill_(value); })) return *this;
  if (!detail::writes_through(*impl_)) return update_(apply([&](const at::Tensor& t) { return at::full_like(t, value); }));
  detail::for_each_tensor(*impl_, [&](const at::Tensor& t) { t.fill_(value); }, "fill_");
  return *this;
}

TensorDict& TensorDict::fill_(const NestedKey& key, const at::Scalar& value) {
  auto found = get_value(key);
  if (found && found->is_tensordict()) {
    found->tensordict().fill_(value);
  } else {
    set_(key, at::full_like(get(key), value));
  }
  return *this;
}

// ---- comparisons ----------------------------------------------------------------

// == and != compare non-tensor entries element-wise (tensordict); the
// orderings carry them, as arithmetic does.
constexpr detail::NonTensorPairs non_tensor_pairs_of(std::string_view op) {
  return op == "eq" || op == "ne" ? detail::NonTensorPairs::Compare : detail::NonTensorPairs::Carry;
}
#define TENSORDICT_DEFINE_COMPARISON(name)                                                                         \
  TensorDict TensorDict::name(const Operand& other, MissingKeys missing) const {                               \
    return binary(*this, other, [](const at::Tensor& a, const at::Tensor& b) { return at::name(a, b); }, missing, #name, \
                  non_tensor_pairs_of(#name));                                                                \
  }
TENSORDICT_COMPARISONS(TENSORDICT_DEFINE_COMPARISON)
#undef TENSORDICT_DEFINE_COMPARISON

TensorDict operator+(const TensorDict& a, const Operand& b) { return a.add(b); }
TensorDict operator-(const TensorDict& a, const Operand& b) { return a.sub(b); }
TensorDict operator*(const TensorDict& a, const Operand& b) { return a.mul(b); }
TensorDict operator/(const TensorDict& a, const Operand& b) { return a.div(b); }
TensorDict operator-(const TensorDict& a) { return a.neg(); }

TensorDict TensorDict::rsub(const Operand& other, const at::Scalar& alpha) const {
  return binary(*this, other, [&](const at::Tensor& a, const at::Tensor& b) { return at::rsub(a, b, alpha); },
                MissingKeys::error(), "rsub");
}
TensorDict TensorDict::mod(const Operand& other, MissingKeys missing) const {
  return binary(*this, other, [](const at::Tensor& a, const at::Tensor& b) { return at::remainder(a, b); }, missing,
                "mod");
}
TensorDict TensorDict::bitwise_and(const Operand& other, MissingKeys missing) const {
  return binary(*this, other, [](const at::Tensor& a, const at::Tensor& b) { return at::bitwise_and(a, b); }, missing,
                "bitwise_and");
}
TensorDict TensorDict::logical_and(const Operand& other, MissingKeys missing) const {
  return binary(*this, other, [](const at::Tensor& a, const at::Tensor& b) { return at::logical_and(a, b); }, missing,
                "logical_and");
}

TensorDict operator%(const TensorDict& a, const Operand& b) { return a.mod(b); }
TensorDict operator&(const TensorDict& a, const Operand& b) { return a.bitwise_and(b); }
TensorDict operator|(const TensorDict& a, const Operand& b) {
  return binary(a, b, [](const at::Tensor& x, const at::Tensor& y) { return at::bitwise_or(x, y); },
                MissingKeys::error(), "bitwise_or");
}
TensorDict operator^(const TensorDict& a, const Operand& b) {
  return binary(a, b, [](const at::Tensor& x, const at::Tensor& y) { return at::bitwise_xor(x, y); },
                MissingKeys::error(), "bitwise_xor");
}
TensorDict operator~(const TensorDict& a) {
  return unary(a, [](const at::Tensor& t) { return at::bitwise_not(t); }, "bitwise_not");
}

// The reflected operators: the commutative ones swap their operands.
#define TENSORDICT_DEFINE_REFLECTED(op, body)                                                        \
  TensorDict operator op(const at::Scalar& a, const TensorDict& b) { return body; }               \
  TensorDict operator op(const at::Tensor& a, const TensorDict& b) { return body; }
TENSORDICT_DEFINE_REFLECTED(+, b.add(a))
TENSORDICT_DEFINE_REFLECTED(-, b.rsub(a))
TENSORDICT_DEFINE_REFLECTED(*, b.mul(a))
TENSORDICT_DEFINE_REFLECTED(/, b.reciprocal().mul(a))
TENSORDICT_DEFINE_REFLECTED(&, b & a)
TENSORDICT_DEFINE_REFLECTED(|, b | a)
TENSORDICT_DEFINE_REFLECTED(^, b ^ a)
#undef TENSORDICT_DEFINE_REFLECTED
TensorDict operator==(const TensorDict& a, const Operand& b) { return a.eq(b); }
TensorDict operator!=(const TensorDict& a, const Operand& b) { return a.ne(b); }
TensorDict operator<(const TensorDict& a, const Operand& b) { return a.lt(b); }
TensorDict operator<=(const TensorDict& a, const Operand& b) { return a.le(b); }
TensorDict operator>(const TensorDict& a, const Operand& b) { return a.gt(b); }
TensorDict operator>=(const TensorDict& a, const Operand& b) { return a.ge(b); }

// A lazy stack is reduced member by member (tensordict's _reduction_parts):
// members of different shapes (jagged stacks, or nested ragged ones) need
// no stacked value, and there may be none.
bool TensorDict::all() const {
  bool result = true;
  detail::for_each_member_tensor(*impl_, [&](const at::Tensor& t) { result = result && t.all().item<bool>(); }, "all");
  return result;
}

bool TensorDict::any() const {
  bool result = false;
  detail::for_each_member_tensor(*impl_, [&](const at::Tensor& t) { result = result || t.any().item<bool>(); }, "any");
  return result;
}

bool TensorDict::allclose(const TensorDict& other, const AllcloseOptions& options) const {
  const auto rtol = options.rtol;
  const auto atol = options.atol;
  const auto equal_nan = options.equal_nan;
  auto mine = keys({.include_nested = true, .leaves_only = true, .is_leaf = IsLeaf::NonTensor});
  auto theirs = other.keys({.include_nested = true, .leaves_only = true, .is_leaf = IsLeaf::NonTensor});
  std::sort(mine.begin(), mine.end());
  std::sort(theirs.begin(), theirs.end());
  if (mine != theirs) return false;
  for (const auto& key : mine) {
    auto a = get_value(key);
    auto b = other.get_value(key);
    if (a->is_tensor() != b->is_tensor()) return false;
    if (!a->is_tensor()) continue;
    if (a->tensor().sizes() != b->tensor().sizes() || !at::allclose(a->tensor(), b->tensor(), rtol, atol, equal_nan)) return false;
  }
  return true;
}

// ---- where and masking ------------------------------------------------------------

TensorDict TensorDict::where(const Operand& condition, const Operand& other, MissingKeys missing) const {
  if (const TensorDict* cond = condition.tensordict()) {
    // Condition per key: only the leaves it names are selected.
    TensorDict out = detail::dense_shallow_copy(*this, "where");
    for (const auto& [key, c] : cond->items({.include_nested = true, .leaves_only = true})) {
      if (!c.is_tensor()) continue;
      const at::Tensor alternative = other.tensordict() ? other.tensordict()->get(key) : other.tensor();
      try {
        detail::replace_entry(out, key, at::where(c.tensor(), get(key), alternative));
      } catch (const KeyError&) {
        throw;
      } catch (...) {
        detail::rethrow_for_key("where", key);
      }
    }
    return out;
  }
  const at::Tensor c = condition.tensor();
  // A lazy stack: each member with its part of the batch-shaped condition
  // and of a tensordict operand.
  if (const auto own = detail::kind_ops(*impl_).where) return own(*this, c, other, missing);
  // With a pad, a key of self only reads where(c, self, pad) and one of
  // `other` only where(c, pad, other): tensordict's where(~c, other, pad).
  auto select = [&](const at::Tensor& a, const at::Tensor& b) { return at::where(detail::align_to_leaf(c, a), a, b); };
  // A nested lazy stack inside the batch runs where itself, member by member.
  auto where_nested = [&](const TensorDict& n) { return std::vector<TensorDict>{n.where(c, other, missing)}; };
  const detail::NestedOp nested = where_nested;
  if (const TensorDict* o = other.tensordict()) {
    auto where_pair = [&](const TensorDict& a, const TensorDict& b) { return a.where(c, b, missing); };
    const detail::PairNestedOp pair_nested = where_pair;
    // The condition is shaped like the batch: a lazy stack in `other` alone
    // meets it whole (stacked).
    const TensorDict theirs = holds_nested_lazy(*o->impl()) && !holds_nested_lazy(*impl_) ? o->to_tensordict() : *o;
    // Non-tensor entries are picked element by element, as tensors are.
    return wrap(detail::map_pairs(*impl_, *theirs.impl(), select, missing, "where", detail::NonTensorPairs::Select,
                                  &pair_nested));
  }
  const at::Tensor t = other.tensor();
  return unary(*this, [&](const at::Tensor& leaf) { return select(leaf, t); }, "where", OpKind::Value, &nested);
}

TensorDict TensorDict::masked_fill(const at::Tensor& mask, const at::Scalar& value) const {
  auto fill_nested = [&](const TensorDict& n) { return std::vector<TensorDict>{n.masked_fill(mask, value)}; };
  const detail::NestedOp nested = fill_nested;
  // A lazy stack: each member with its part of the batch-shaped mask.
  if (const auto own = detail::kind_ops(*impl_).masked_fill) return own(*this, mask, value);
  return unary(*this, [&](const at::Tensor& t) { return t.masked_fill(detail::align_to_leaf(mask, t), value); }, "masked_fill",
               OpKind::Value, &nested);
}

TensorDict& TensorDict::masked_fill_(const at::Tensor& mask, const at::Scalar& value) {
  // A lazy stack: each member with its part of the batch-shaped mask.
  if (const auto own = detail::kind_ops(*impl_).masked_fill_) {
    own(*this, mask, value);
    return *this;
  }
  if (!detail::writes_through(*impl_)) return update_(masked_fill(mask, value));
  detail::for_each_tensor(*impl_, [&](const at::Tensor& t) { t.masked_fill_(detail::align_to_leaf(mask, t), value); }, "masked_fill_");
  return *this;
}

TensorDict TensorDict::masked_select(const at::Tensor& mask) const {
  if (mask.scalar_type() != at::kBool) {
    throw ValueError(
        fmt::format("masked_select: the mask must be a bool tensor, got {}", c10::toString(mask.scalar_type())));
  }
  return index({mask});
}

TensorDict TensorDict::gather(int64_t dim, const at::Tensor& index) const {
  const int64_t d = wrap_batch_dim(dim, batch_dims(), "gather");
  if (index.dim() != batch_dims()) {
    throw ValueError(
        fmt::format("gather: the index has {} dims but the tensordict has {} batch dims", index.dim(), batch_dims()));
  }
  auto fn = [&](const at::Tensor& t) {
    std::vector<int64_t> shape = index.sizes().vec();
    const auto feature = t.sizes().slice(index.dim());
    shape.insert(shape.end(), feature.begin(), feature.end());
    return at::gather(t, d, detail::align_to_leaf(index, t).expand(shape));
  };
  // Gather keeps the dim names (tensordict's rule).
  return wrap(detail::map_leaves(*impl_, {index.sizes().vec(), names()}, device(), OpKind::Batch, fn, "gather"));
}

namespace detail {

at::Tensor align_to_leaf(const at::Tensor& mask, const at::Tensor& leaf) {
  if (mask.dim() > leaf.dim()) {
    throw RuntimeError(fmt::format("a mask of shape {} has more dims than a leaf of shape {}", shape_string(mask.sizes()),
                                   shape_string(leaf.sizes())));
  }
  if (mask.dim() == leaf.dim()) return mask;
  std::vector<int64_t> shape = mask.sizes().vec();
  shape.resize(leaf.dim(), 1);
  return mask.reshape(shape);  // reshape: a permuted (non-contiguous) mask is a copy, not an error
}

bool is_view_of(const at::Tensor& t, const at::Tensor& storage) {
  return t.has_storage() && t.storage().unsafeGetStorageImpl() == storage.storage().unsafeGetStorageImpl();
}

}  // namespace detail

}  // namespace tensordict
