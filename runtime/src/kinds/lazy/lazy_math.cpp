// A lazy stack's math, member by member (tensordict's _lazy.py _fast_apply):
// members of different shapes work, and the result stays lazy. Each member
// meets its part of an operand shaped like the batch. KindOps::pointwise,
// pointwise_, softmax, where, masked_fill, masked_fill_.
#include <ATen/ATen.h>

#include <vector>

#include "kinds/lazy/lazy_impl.h"

namespace tensordict::detail {

namespace {

// A batch-shaped tensor's part for member `i` of a lazy stack along `dim`:
// its element at the stack dim (a dim of size 1 broadcasts), or the tensor
// itself when its dims stop before the stack dim.
at::Tensor member_slice(const at::Tensor& t, int64_t dim, std::size_t i) {
  if (t.dim() <= dim) return t;
  return t.select(dim, t.size(dim) == 1 ? 0 : static_cast<int64_t>(i));
}

// `other` cut into one operand per member of `lazy` (`td`'s storage): a
// tensordict along the stack dim (parts_for_members), a tensor with dims
// (shaped like the batch, which it must not broadcast) at the stack dim, a
// scalar for every member.
std::vector<Operand> member_operands(const TensorDict& td, const Stacked& lazy, const Operand& other, const char* op) {
  std::vector<Operand> out;
  if (const TensorDict* o = other.tensordict()) {
    for (auto& part : parts_for_members(lazy, *o, op)) out.emplace_back(std::move(part));
    return out;
  }
  const at::Tensor t = other.tensor();
  if (t.dim() == 0) return std::vector<Operand>(lazy.members().size(), other);
  const at::Tensor shaped = t.expand(td.batch_size());
  for (std::size_t i = 0; i < lazy.members().size(); ++i) out.emplace_back(member_slice(shaped, lazy.stack_dim(), i));
  return out;
}

}  // namespace

TensorDict lazy_pointwise(const TensorDict& td, const Operand* operand, const char* op,
                          c10::function_ref<TensorDict(const TensorDict&, const Operand*)> fn) {
  const Stacked& lazy = lazy_of(td);
  if (!operand) return TensorDict(lazy.map_stacked([&](const TensorDict& m, std::size_t) { return fn(m, nullptr); }));
  const auto operands = member_operands(td, lazy, *operand, op);
  return TensorDict(lazy.map_stacked([&](const TensorDict& m, std::size_t i) { return fn(m, &operands[i]); }));
}

// In place: each member written with its operand.
void lazy_pointwise_(const TensorDict& td, const Operand* operand, const char* op,
                     c10::function_ref<void(TensorDict&, const Operand*)> fn) {
  const Stacked& lazy = lazy_of(td);
  if (!operand) {
    for (TensorDict member : lazy.members()) fn(member, nullptr);
    return;
  }
  const auto operands = member_operands(td, lazy, *operand, op);
  for (std::size_t i = 0; i < operands.size(); ++i) {
    TensorDict member = lazy.members()[i];
    fn(member, &operands[i]);
  }
}

// tensordict's LazyStackedTensorDict._softmax: across another dim, each
// member along that dim's place in it; along the stack dim of members whose
// entries differ in shape (no dense copy), each member's leaves along their
// own dim `dim` (tensordict 0.15.3's rule, its TODO #2359).
std::optional<TensorDict> lazy_softmax(const TensorDict& td, int64_t dim, std::optional<at::ScalarType> dtype,
                                       c10::function_ref<TensorDict(const TensorDict&)> leafwise) {
  const Stacked& lazy = lazy_of(td);
  const int64_t sd = lazy.stack_dim();
  if (dim != sd) {
    return TensorDict(lazy.map_stacked([&](const TensorDict& m, std::size_t) { return m.softmax(dim < sd ? dim : dim - 1, dtype); }));
  }
  if (!lazy.entries_stack()) return leafwise(td);
  return std::nullopt;
}

// Each member with its part of the batch-shaped condition and of a
// tensordict operand.
TensorDict lazy_where(const TensorDict& td, const at::Tensor& condition, const Operand& other, const MissingKeys& missing) {
  const Stacked& lazy = lazy_of(td);
  const auto others = other.tensordict() ? member_operands(td, lazy, other, "where")
                                         : std::vector<Operand>(lazy.members().size(), other);
  return TensorDict(lazy.map_stacked([&](const TensorDict& m, std::size_t i) {
    return m.where(member_slice(condition, lazy.stack_dim(), i), others[i], missing);
  }));
}

// Each member with its part of the batch-shaped mask.
TensorDict lazy_masked_fill(const TensorDict& td, const at::Tensor& mask, const at::Scalar& value) {
  const Stacked& lazy = lazy_of(td);
  return TensorDict(lazy.map_stacked([&](const TensorDict& m, std::size_t i) {
    return m.masked_fill(member_slice(mask, lazy.stack_dim(), i), value);
  }));
}

void lazy_masked_fill_(const TensorDict& td, const at::Tensor& mask, const at::Scalar& value) {
  const Stacked& lazy = lazy_of(td);
  for (std::size_t i = 0; i < lazy.members().size(); ++i) {
    TensorDict(lazy.members()[i]).masked_fill_(member_slice(mask, lazy.stack_dim(), i), value);
  }
}

}  // namespace tensordict::detail
