// Generated tensorclasses in the interop suite, for any class T, read off its
// schema::FieldTable<T>: a deterministic instance (make_instance) and the
// canonical JSON of one (typed_canonical), the same form canonical.h gives
// tensordicts and run_interop.py gives Python tensorclasses.
#pragma once

#include <tensordict/tensorclass.h>
#include <nlohmann/json.hpp>

#include <cstdint>
#include <map>
#include <string>
#include <tuple>
#include <type_traits>
#include <vector>

#include "canonical.h"
#include "cpp_cases.h"

namespace interop {

template <class T>
tensordict::Json typed_canonical(const T& obj);

namespace detail {

template <class M>
constexpr bool is_vector_v = false;
template <class E>
constexpr bool is_vector_v<std::vector<E>> = true;

// Sizes for the declared symbols of one instance: distinct per symbol.
using Symbols = std::map<std::string, int64_t, std::less<>>;

inline at::Tensor field_tensor(const tensordict::schema::FieldInfo& info, const std::vector<int64_t>& batch,
                               Symbols& symbols) {
  std::vector<int64_t> shape = batch;
  if (!info.has_shape) shape.push_back(3);  // any shape: one feature dim
  for (const auto& d : info.shape) {
    if (d.kind == tensordict::schema::DimKind::Fixed) shape.push_back(d.size);
    if (d.kind == tensordict::schema::DimKind::Symbol) {
      auto it = symbols.find(d.symbol);
      if (it == symbols.end()) it = symbols.emplace(std::string(d.symbol), int64_t(2 + symbols.size())).first;
      shape.push_back(it->second);
    }
  }
  const auto dtype = info.dtype.empty() ? at::kFloat : *tensordict::dtype_from_name(info.dtype);
  return values(shape, dtype);
}

// A non-tensor value that differs from the schema's default.
template <class M>
M field_value(std::string_view name) {
  if constexpr (std::is_same_v<M, std::string>) return "C++ \"" + std::string(name) + "\" ✓";
  else if constexpr (std::is_same_v<M, bool>) return true;
  else if constexpr (std::is_integral_v<M>) return static_cast<M>(-1000 - static_cast<int64_t>(name.size()));
  else if constexpr (std::is_floating_point_v<M>) return 0.25 + static_cast<double>(name.size());
  else if constexpr (is_vector_v<M>) return {field_value<typename M::value_type>(name), typename M::value_type{}};
}

template <class M>
tensordict::Json value_json(const M& v) {
  return {{"kind", "non_tensor"}, {"value", tensordict::Json(v)}};
}
// A Python tensorclass's field reads a NonTensorStack as its nested list (one
// value: the value itself), which is what data() gives.
template <class V>
tensordict::Json value_json(const tensordict::NonTensorStack<V>& v) {
  return {{"kind", "non_tensor"}, {"value", v.data().data()}};
}
// One value per element of `batch`: field_value and V{}, alternating (as
// run_schemas.py's python_stack).
template <class V>
tensordict::NonTensorStack<V> stack_value(std::string_view name, const std::vector<int64_t>& batch) {
  int64_t count = 1;
  for (int64_t s : batch) count *= s;
  std::vector<V> values;
  for (int64_t i = 0; i < count; ++i) values.push_back(i % 2 == 0 ? field_value<V>(name) : V{});
  return tensordict::NonTensorStack<V>::stack(values, batch);
}

}  // namespace detail

// An instance of T with batch size `batch`: every tensor field (optional ones
// too when `with_optional`) filled with values(), nested classes likewise,
// non-tensor fields set away from their defaults. Validated by init_().
template <class T>
T make_instance(const std::vector<int64_t>& batch, bool with_optional) {
  using Table = tensordict::schema::FieldTable<T>;
  T obj;
  detail::Symbols symbols;
  std::size_t i = 0;
  std::apply(
      [&](auto... members) {
        (
            [&](auto member) {
              const auto& info = Table::info.fields[i++];
              auto& m = obj.*member;
              using M = std::remove_cvref_t<decltype(m)>;
              if constexpr (std::is_same_v<M, at::Tensor>) {
                if (!info.optional || with_optional) m = detail::field_tensor(info, batch, symbols);
              } else if constexpr (tensordict::is_tensorclass_v<M>) {
                m = make_instance<M>(batch, with_optional);
              } else if constexpr (tensordict::is_optional_nested_v<M>) {
                if (with_optional) m = make_instance<tensordict::nested_class_t<M>>(batch, with_optional);
              } else if constexpr (tensordict::is_non_tensor_stack_v<M>) {
                m = detail::stack_value<typename M::value_type>(info.name, batch);
              } else {
                m = detail::field_value<M>(info.name);
              }
            }(members),
            ...);
      },
      Table::members);
  tensordict::methods(obj).init_(batch);
  return obj;
}

template <class T>
tensordict::Json typed_canonical(const T& obj) {
  using Table = tensordict::schema::FieldTable<T>;
  tensordict::Json entries = tensordict::Json::object();
  std::size_t i = 0;
  std::apply(
      [&](auto... members) {
        (
            [&](auto member) {
              const std::string name(Table::info.fields[i++].name);
              const auto& m = obj.*member;
              using M = std::remove_cvref_t<decltype(m)>;
              if constexpr (std::is_same_v<M, at::Tensor>) {
                if (m.defined()) entries[name] = canonical_tensor(m);
              } else if constexpr (tensordict::is_tensorclass_v<M>) {
                entries[name] = typed_canonical(m);
              } else if constexpr (tensordict::is_optional_nested_v<M>) {
                if (m) entries[name] = typed_canonical(*m);
              } else {
                entries[name] = detail::value_json(m);
              }
            }(members),
            ...);
      },
      Table::members);
  tensordict::Json names = nullptr;
  if (tensordict::methods(obj).has_names()) {
    names = tensordict::Json::array();
    for (const auto& n : tensordict::methods(obj).names()) names.push_back(n ? tensordict::Json(*n) : tensordict::Json(nullptr));
  }
  return {{"kind", "TensorDict"},
          {"batch_size", tensordict::methods(obj).batch_size().vec()},
          {"names", names},
          {"class", std::string(Table::info.python_type)},
          {"entries", entries}};
}

}  // namespace interop
