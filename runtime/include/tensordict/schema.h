// The static description of a tensorclass: what tensorclass-gen emits and what
// the runtime's TensorClass<Derived> base visits.
//
// Everything here is constexpr data made of string_views and spans so that a
// generated header costs almost nothing to compile and the schema can be
// inspected both at compile time and at run time. This header deliberately
// includes no libtorch header.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <string_view>
#include <tuple>
#include <type_traits>

#include "tensordict/schema_kinds.h"

namespace tensordict::schema {

struct Dim {
  DimKind kind;
  std::int64_t size;        // for Fixed
  std::string_view symbol;  // for Symbol
};

struct FieldInfo {
  std::string_view name;
  FieldKind kind;
  // Tensor fields: the declared dtype as tensordict spells it ("float32"),
  // empty when any dtype is accepted.
  std::string_view dtype;
  // Tensor fields: whether a shape was declared, and its dims.
  bool has_shape;
  std::span<const Dim> shape;
  // TensorClass fields: the C++ type name of the nested class.
  std::string_view type_name;
  // NonTensor fields: the value type (and the element type for lists).
  ValueType value_type;
  ValueType element_type;
  bool optional;
  // Tensor fields: an UnbatchedTensor (schema `unbatched: true`): no batch
  // dims, `shape` is its whole shape; batch ops carry it unchanged.
  bool unbatched = false;
  // The default as written in the schema (YAML scalar text), empty if none.
  std::string_view default_value;
  bool has_default;
  std::string_view doc;
};

struct ClassInfo {
  std::string_view name;            // "Observation"
  std::string_view cpp_name;        // "rl::Observation"
  std::string_view python_type;     // "<class 'rl.types.Observation'>" (memmap _type)
  std::span<const std::string_view> batch_names;  // empty: any number of batch dims
  bool fixed_batch_dims;            // true when `batch:` was declared
  std::span<const FieldInfo> fields;
  std::string_view doc;
};

// Specialised by generated code for every tensorclass T:
//
//   template <> struct FieldTable<rl::Observation> {
//     static constexpr ClassInfo info = {...};
//     static constexpr auto members = std::make_tuple(&rl::Observation::pixels, ...);
//   };
//
// `members` lists the member pointers in the same order as `info.fields`.
template <class T>
struct FieldTable;

// The member type a member pointer points to: `M` for `M C::*`.
template <class MemberPointer>
struct pointee;
template <class C, class M>
struct pointee<M C::*> {
  using type = M;
};

// The type of field I of tensorclass T, read off the field table's member
// pointer type (no `.*` inside decltype: GCC 13 fails to compile that form).
// A class template, so that FieldTable<T> is looked at only once I is known:
// TensorClass<T> names it while T (and so its FieldTable) is incomplete.
template <class T, std::size_t I>
struct field_type {
  using type =
      typename pointee<std::remove_cv_t<std::tuple_element_t<I, std::remove_cv_t<decltype(FieldTable<T>::members)>>>>::type;
};
template <class T, std::size_t I>
using field_type_t = typename field_type<T, I>::type;

}  // namespace tensordict::schema
