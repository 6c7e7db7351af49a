// The field visitor of generated tensorclasses: every walk that
// TensorClass<Derived> makes over its fields (ops, checks, conversions,
// persistence) is one call of detail::visit_fields with one handler per
// field kind, so that the kinds and the member pointers are told apart here
// and nowhere else.
//
// A field's kind is read from its member type: at::Tensor members are
// tensors, members deriving from TensorClass<M> (or std::optional of one, a
// field the schema marks optional) are nested tensorclasses, NonTensorStack<T>
// members hold one value per batch element, anything else is non-tensor data
// (one value for the whole batch).
#pragma once

#include <ATen/core/Tensor.h>

#include <cstddef>
#include <optional>
#include <string_view>
#include <tuple>
#include <type_traits>
#include <utility>

#include "tensordict/non_tensor_stack.h"
#include "tensordict/schema.h"

namespace tensordict {

template <class Derived>
class TensorClass;

// True for generated tensorclasses (types deriving from TensorClass<T>).
template <class T>
inline constexpr bool is_tensorclass_v = std::is_base_of_v<TensorClass<T>, T>;

// A tensorclass seen as its TensorClass<T> base: the way to call a
// TensorClass method whose name a field of T took. A field named `index`
// hides TensorClass::index in T (C++ hides a base member behind a derived
// member of the same name), so `obj.index` is the field and
// `tensordict::methods(obj).index(...)` the method; members no field hides
// stay callable on obj itself. `obj.TensorClass::index(...)` says the same
// where no field is named TensorClass. A free function, so no field can hide it.
template <class T>
  requires is_tensorclass_v<T>
constexpr TensorClass<T>& methods(T& obj) noexcept {
  return obj;
}
template <class T>
  requires is_tensorclass_v<T>
constexpr const TensorClass<T>& methods(const T& obj) noexcept {
  return obj;
}

// The class of a nested tensorclass field: the member's type itself, or T for
// a std::optional<T> member (a field the schema marks optional: absent is
// nullopt, as tensordict stores None); void for other members.
template <class M, class = void>
struct nested_class {
  using type = void;
};
template <class M>
struct nested_class<M, std::enable_if_t<is_tensorclass_v<M>>> {
  using type = M;
};
template <class M>
struct nested_class<std::optional<M>, std::enable_if_t<is_tensorclass_v<M>>> {
  using type = M;
};
template <class M>
using nested_class_t = typename nested_class<M>::type;
template <class M>
inline constexpr bool is_nested_v = !std::is_void_v<nested_class_t<M>>;
template <class M>
inline constexpr bool is_optional_nested_v = is_nested_v<M> && !is_tensorclass_v<M>;

namespace detail {

// methods() for TensorClass's own code, which reaches every member of an
// instance (its own members, private ones included, and those of nested
// tensorclasses) through it and never through the derived class, where a
// field of any name may hide a member. Hence no field name is reserved.
template <class T>
constexpr TensorClass<T>& tc(T& obj) noexcept {
  return obj;
}
template <class T>
constexpr const TensorClass<T>& tc(const T& obj) noexcept {
  return obj;
}

// The kinds of field the visitor tells apart.
struct TensorField {};
struct NestedField {};
struct DataField {};
struct StackField {};  // NonTensorStack<T>: moved by batch ops like a tensor
template <class M>
using field_kind_t = std::conditional_t<
    std::is_same_v<M, at::Tensor>, TensorField,
    std::conditional_t<is_nested_v<M>, NestedField, std::conditional_t<is_non_tensor_stack_v<M>, StackField, DataField>>>;

// One handler made of several lambdas, one per field kind.
template <class... Fs>
struct Overloaded : Fs... {
  using Fs::operator()...;
};
template <class... Fs>
Overloaded(Fs...) -> Overloaded<Fs...>;

// The number of fields of class T (its FieldTable's member pointers).
template <class T>
inline constexpr std::size_t num_fields_v =
    std::tuple_size_v<std::remove_cvref_t<decltype(schema::FieldTable<T>::members)>>;

// Field I of tensorclass T as a handler sees it: its schema entry, and its
// member in any instance (of(x), e.g. in each of a list of pieces).
template <class T, std::size_t I>
struct Field {
  using member_type = schema::field_type_t<T, I>;
  static constexpr const schema::FieldInfo& info() { return schema::FieldTable<T>::info.fields[I]; }
  template <class Obj>
  static auto& of(Obj& obj) {
    static constexpr auto member = std::get<I>(schema::FieldTable<T>::members);
    return obj.*member;
  }
};

template <class H, class T, std::size_t I, class... Members>
void call_for_kind(H& handler, Field<T, I> field, Members&... members) {
  using Kind = field_kind_t<typename Field<T, I>::member_type>;
  if constexpr (std::is_invocable_v<H&, Kind, Field<T, I>, Members&...>) handler(Kind{}, field, members...);
}
template <class T, std::size_t I, class H, class... Objs>
void visit_field(H& handler, Objs&... objs) {
  call_for_kind(handler, Field<T, I>{}, Field<T, I>::of(objs)...);
}

// For each field of T, in schema order, the handler's overload for the
// field's kind runs with the field (a Field<T, I>) and its member in each of
// `objs` (instances of T), const where the object is:
//   handler(TensorField, field, at::Tensor&...)
//   handler(NestedField, field, M&...)   M: the class, or std::optional of it (see present)
//   handler(DataField, field, M&...)     non-tensor data, one value
//   handler(StackField, field, NonTensorStack<T>&...)  one value per element
// A kind the handler has no overload for is skipped (so members are taken as
// `auto&`: an overload whose member types do not match is skipped too).
// Recursing into a nested member is the handler's choice.
template <class T, class H, class... Objs>
void visit_fields(H&& handler, Objs&... objs) {
  [&]<std::size_t... I>(std::index_sequence<I...>) { (visit_field<T, I>(handler, objs...), ...); }
  (std::make_index_sequence<num_fields_v<T>>{});
}
// The handler for the field named `name` only; false when T has none.
template <class T, class H, class... Objs>
bool visit_field_named(std::string_view name, H&& handler, Objs&... objs) {
  bool found = false;
  visit_fields<T>(
      [&](auto, auto field, auto&... members) {
        if (found || field.info().name != name) return;
        found = true;
        call_for_kind(handler, field, members...);
      },
      objs...);
  return found;
}

// The object of a nested tensorclass field, or null for an absent optional one.
template <class M>
auto* present(M& m) {
  if constexpr (is_optional_nested_v<std::remove_const_t<M>>) {
    return m ? &*m : nullptr;
  } else {
    return &m;
  }
}
// The object of a nested field, an absent optional one made present (empty).
template <class M>
auto& emplaced(M& m) {
  if constexpr (is_optional_nested_v<M>) {
    if (!m) m.emplace();
  }
  return *present(m);
}
// Makes an optional nested field absent (true); false for a required one.
template <class M>
bool reset_if_optional(M& m) {
  if constexpr (is_optional_nested_v<M>) {
    m.reset();
    return true;
  } else {
    return false;
  }
}

}  // namespace detail
}  // namespace tensordict
