// The functions a TensorDictModule wraps: functions of tensors (positional,
// in in_keys order) and functions of keyword arguments (Kwargs), adapted to
// one calling convention.
#pragma once

#include <ATen/core/Tensor.h>
#include <torch/nn/modules/container/any.h>
#include <torch/nn/pimpl.h>

#include <cstddef>
#include <functional>
#include <string>
#include <string_view>
#include <tuple>
#include <type_traits>
#include <utility>
#include <vector>

namespace tensordict::nn {

// tensordict's keyword arguments (a dict in_keys): the tensors read from the
// tensordict, by argument name. A function taking `const Kwargs&` reads
// kw["x"]; a missing input (strict=false) is an undefined tensor.
class Kwargs {
 public:
  Kwargs(std::vector<std::string> names, std::vector<at::Tensor> values);

  // The argument `name`; TypeError naming the arguments given
  // when there is none (Python's TypeError for a missing argument).
  const at::Tensor& operator[](std::string_view name) const;
  bool contains(std::string_view name) const;
  std::size_t size() const { return names_.size(); }
  const std::vector<std::string>& names() const { return names_; }

 private:
  std::vector<std::string> names_;
  std::vector<at::Tensor> values_;
};

namespace detail {

// Results a wrapped function may return: a tensor, a vector, a tuple or pair
// of tensors.
inline std::vector<at::Tensor> to_tensor_list(at::Tensor t) { return {std::move(t)}; }
inline std::vector<at::Tensor> to_tensor_list(std::vector<at::Tensor> v) { return v; }
template <class... T>
std::vector<at::Tensor> to_tensor_list(std::tuple<T...> t) {
  static_assert((std::is_convertible_v<T, at::Tensor> && ...), "a tuple result must hold tensors");
  return std::apply([](auto&&... x) { return std::vector<at::Tensor>{at::Tensor(std::move(x))...}; }, std::move(t));
}
template <class A, class B>
std::vector<at::Tensor> to_tensor_list(std::pair<A, B> p) {
  return {at::Tensor(std::move(p.first)), at::Tensor(std::move(p.second))};
}

template <std::size_t>
using TensorArg = const at::Tensor&;

template <class F, std::size_t... I>
constexpr bool invocable_with(std::index_sequence<I...>) {
  return std::is_invocable_v<F&, TensorArg<I>...>;
}

inline constexpr std::size_t kMaxArity = 8;

// The number of tensors F takes (the smallest N for which it is invocable).
template <class F, std::size_t N = 0>
constexpr std::size_t tensor_arity() {
  if constexpr (N > kMaxArity) {
    return N;
  } else if constexpr (invocable_with<F>(std::make_index_sequence<N>{})) {
    return N;
  } else {
    return tensor_arity<F, N + 1>();
  }
}

template <class F>
concept TorchModuleLike = std::is_base_of_v<torch::detail::ModuleHolderIndicator, std::decay_t<F>> ||
    std::is_same_v<std::decay_t<F>, torch::nn::AnyModule>;

// A function of tensors (positional).
template <class F>
concept TensorFunction = !TorchModuleLike<F> && (tensor_arity<std::decay_t<F>>() <= kMaxArity ||
                                                 std::is_invocable_v<std::decay_t<F>&, const std::vector<at::Tensor>&>);

// A function of keyword arguments.
template <class F>
concept KwargsFunction = !TorchModuleLike<F> && std::is_invocable_v<std::decay_t<F>&, const Kwargs&>;

void check_arity(std::size_t expected, std::size_t got);

// The one calling convention: tensors in in_keys order, tensors out.
using Function = std::function<std::vector<at::Tensor>(const std::vector<at::Tensor>&)>;

template <class F, std::size_t... I>
Function adapt(F fn, std::index_sequence<I...>) {
  return [fn = std::move(fn)](const std::vector<at::Tensor>& in) mutable -> std::vector<at::Tensor> {
    check_arity(sizeof...(I), in.size());
    return to_tensor_list(std::invoke(fn, in[I]...));
  };
}

template <class F>
Function adapt(F fn) {
  using D = std::decay_t<F>;
  constexpr std::size_t n = tensor_arity<D>();
  if constexpr (n <= kMaxArity) {
    return adapt(std::move(fn), std::make_index_sequence<n>{});
  } else {
    return [fn = std::move(fn)](const std::vector<at::Tensor>& in) mutable -> std::vector<at::Tensor> {
      return to_tensor_list(std::invoke(fn, in));
    };
  }
}

// A function of keyword arguments: the inputs, in in_keys order, are named
// by `names`.
using KwargsFn = std::function<std::vector<at::Tensor>(const Kwargs&)>;

template <class F>
KwargsFn adapt_kwargs(F fn) {
  return [fn = std::move(fn)](const Kwargs& kw) mutable -> std::vector<at::Tensor> {
    return to_tensor_list(std::invoke(fn, kw));
  };
}

}  // namespace detail
}  // namespace tensordict::nn
