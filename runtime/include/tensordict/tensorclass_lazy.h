// LazyStackedTensorClass<T>: tensordict's lazy_stack of tensorclass objects.
//
// Python's lazy_stack([a, b]) of tensorclass objects is an object of their
// class over a LazyStackedTensorDict. A generated C++ class's fields are
// tensors, so the stack is a type of its own: it keeps the members (objects
// of T whose fields may differ in their feature shapes, as a lazy stack's
// members may), reads a field as the members' tensors stacked on demand (or
// as their list), writes a field split into the members, and indexes along
// the stack to the member itself. tensordict() is the dynamic
// LazyStackedTensorDict over the members' tensors (no copy), for every other
// op: the dynamic core runs ops on a lazy stack member by member, so
// in-place ops on it write into the members' fields, and apply_tensordict()
// reads an op's lazy result back as objects of T. contiguous() stacks the
// members into one T.
#pragma once

#include <ATen/core/Tensor.h>

#include <string>
#include <vector>

#include "tensordict/errors.h"
#include "tensordict/key.h"
#include "tensordict/lazy.h"
#include "tensordict/tensorclass.h"

namespace tensordict {

template <class T>
  requires is_tensorclass_v<T>
class LazyStackedTensorClass {
 public:
  // The members need as many batch dims; `stack_dim` is a dim of the
  // result's batch (lazy_stack's rules and messages).
  explicit LazyStackedTensorClass(std::vector<T> members, int64_t stack_dim = 0)
      : members_(std::move(members)), stack_dim_(forms_stack_(members_, stack_dim).stack_dim()) {}

  int64_t stack_dim() const { return stack_dim_; }
  int64_t size() const { return static_cast<int64_t>(members_.size()); }
  // The members' batch size with the number of members inserted at the
  // stack dim; -1 at the dims where the members differ (tensordict's rule).
  std::vector<int64_t> batch_size() const { return tensordict().batch_size().vec(); }

  // The member itself (writes to it are writes to the stack), as indexing a
  // lazy stack along its stack dim gives. Negative positions count from the end.
  T& operator[](int64_t i) { return members_[position_(i, "[]")]; }
  const T& operator[](int64_t i) const { return members_[position_(i, "[]")]; }
  const std::vector<T>& members() const { return members_; }
  std::vector<T> unbind() const { return members_; }

  // The field at `key` of every member, stacked along the stack dim; members
  // whose tensors differ in shape make it a RuntimeError pointing to
  // get_list / get_padded (tensordict's message).
  at::Tensor get(const NestedKey& key) const { return tensordict().get(key); }
  // The members' tensors at `key`, unstacked (their shapes may differ).
  std::vector<at::Tensor> get_list(const NestedKey& key) const {
    std::vector<at::Tensor> out;
    out.reserve(members_.size());
    for (const auto& m : members_) out.push_back(detail::tc(m).get(key));
    return out;
  }
  // The members' tensors padded with `value` to the largest shape, stacked.
  at::Tensor get_padded(const NestedKey& key, const at::Scalar& value = 0) const {
    return tensordict().get_padded(key, value);
  }
  // Sets the field at `key` of every member to its slice of `value` along the
  // stack dim. Every slice is validated before any member changes.
  LazyStackedTensorClass& set(const NestedKey& key, const at::Tensor& value) {
    if (value.dim() <= stack_dim_ || value.size(stack_dim_) != size()) {
      throw ValueError(name_() + ".set: " + key.repr() + " needs " + std::to_string(size()) +
                       " entries along the stack dim " + std::to_string(stack_dim_) + " (one per member), got shape " +
                       detail::shape_string(value.sizes()));
    }
    std::vector<T> next = members_;
    const auto pieces = value.unbind(stack_dim_);
    for (std::size_t i = 0; i < next.size(); ++i) detail::tc(next[i]).set(key, pieces[i]);
    members_ = std::move(next);
    return *this;
  }

  void append(T member) { insert(size(), std::move(member)); }
  // Before the member at `position` (0 ... size(); negative counts from the end).
  void insert(int64_t position, T member) {
    const int64_t at = position < 0 ? position + size() : position;
    if (at < 0 || at > size()) {
      throw IndexError(name_() + ".insert: position " + std::to_string(position) + " is out of range for " +
                       std::to_string(size()) + " members");
    }
    std::vector<T> next = members_;
    next.insert(next.begin() + at, std::move(member));
    LazyStackedTensorClass checked(std::move(next), stack_dim_);
    members_ = std::move(checked.members_);
  }

  // tensordict's share_memory_() of a lazy stack: every member's
  // (TensorClass::share_memory_: its tensors into shared memory, marked and
  // locked). Every member is checked before anything moves.
  LazyStackedTensorClass& share_memory_() {
    for (const auto& m : members_) {
      if (m.is_memmap()) throw RuntimeError("share_memory_: memmap and shared memory are mutually exclusive features.");
    }
    tensordict().share_memory_();  // the dynamic stack over the same tensors: checks all, then moves
    for (auto& m : members_) detail::tc(m).share_memory_();  // marks and locks; nothing left to move
    return *this;
  }
  // Shared when every member is (and there is one); RuntimeError when only
  // some are (tensordict's rule and message).
  bool is_shared() const {
    std::size_t shared = 0;
    for (const auto& m : members_) shared += detail::tc(m).is_shared() ? 1 : 0;
    return detail::members_all_shared(shared, members_.size());
  }

  // Every member's tensors cloned / moved: a lazy stack of the copies.
  LazyStackedTensorClass clone() const {
    return map_members_([](const T& m) { return detail::tc(m).clone(); });
  }
  LazyStackedTensorClass to(at::Device device) const {
    return map_members_([&](const T& m) { return detail::tc(m).to(device); });
  }
  // fn(the dynamic lazy stack), a lazy stack of as many members along the
  // same dim (what the core's member-by-member ops give: math, comparisons,
  // where, masked_fill, apply...), each member read back as T with the
  // member's non-tensor fields: stack.apply_tensordict([](const TensorDict&
  // td) { return td * 2; }). TypeError when fn's result is not such a stack.
  template <class Fn>
  LazyStackedTensorClass apply_tensordict(Fn&& fn) const {
    const TensorDict result = fn(TensorDict(tensordict()));
    if (result.kind() != Kind::LazyStack || LazyStackedTensorDict(result).stack_dim() != stack_dim_ ||
        static_cast<int64_t>(LazyStackedTensorDict(result).tensordicts().size()) != size()) {
      throw TypeError(name_() + ".apply_tensordict: the function must return a lazy stack of " + std::to_string(size()) +
                      " members along dim " + std::to_string(stack_dim_) + ", got a " + std::string(result.type_name()) +
                      " of batch size " + detail::shape_string(result.batch_size()));
    }
    const auto& parts = LazyStackedTensorDict(result).tensordicts();
    std::vector<T> out;
    out.reserve(members_.size());
    for (std::size_t i = 0; i < members_.size(); ++i) out.push_back(T::from_tensordict(parts[i], members_[i]));
    return LazyStackedTensorClass(std::move(out), stack_dim_);
  }
  // tensordict's apply: fn on every tensor of every member.
  template <class Fn>
  LazyStackedTensorClass apply(Fn&& fn) const {
    return apply_tensordict([&](const TensorDict& td) { return td.apply(fn); });
  }

  // One object of T: the members stacked densely (T::stack's rules: their
  // fields must agree in shape).
  T contiguous() const { return T::stack(members_, stack_dim_); }
  // The dynamic lazy stack over the members' tensordict forms (the same
  // tensors; non-tensor fields as non-tensor data).
  LazyStackedTensorDict tensordict() const { return forms_stack_(members_, stack_dim_); }

 private:
  static LazyStackedTensorDict forms_stack_(const std::vector<T>& members, int64_t dim) {
    std::vector<TensorDict> forms;
    forms.reserve(members.size());
    for (const auto& m : members) forms.push_back(detail::tc(m).tensordict());
    return lazy_stack(forms, dim);
  }
  template <class Fn>
  LazyStackedTensorClass map_members_(Fn&& fn) const {
    std::vector<T> out;
    out.reserve(members_.size());
    for (const auto& m : members_) out.push_back(fn(m));
    return LazyStackedTensorClass(std::move(out), stack_dim_);
  }
  std::size_t position_(int64_t i, const char* op) const {
    const int64_t at = i < 0 ? i + size() : i;
    if (at < 0 || at >= size()) {
      throw IndexError(name_() + op + ": index " + std::to_string(i) + " is out of range for " +
                       std::to_string(size()) + " members");
    }
    return static_cast<std::size_t>(at);
  }
  static std::string name_() { return "LazyStackedTensorClass<" + std::string(T::schema().name) + ">"; }

  std::vector<T> members_;
  int64_t stack_dim_;
};

// tensordict's lazy_stack of tensorclass objects (see LazyStackedTensorClass).
template <class T>
  requires is_tensorclass_v<T>
LazyStackedTensorClass<T> lazy_stack(std::vector<T> members, int64_t dim = 0) {
  return LazyStackedTensorClass<T>(std::move(members), dim);
}

}  // namespace tensordict
