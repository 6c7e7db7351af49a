// TensorDictModule: a torch::nn::Module that reads `in_keys` from a
// tensordict, calls a wrapped module or function, and writes `out_keys`
// (tensordict.nn.TensorDictModule).
//
// Part of tensorclass::nn (<tensordict/nn.h>), the only place where
// torch/nn headers are included.
#pragma once

#include <torch/arg.h>
#include <torch/nn/module.h>
#include <torch/nn/modules/container/any.h>
#include <torch/nn/modules/container/sequential.h>
#include <torch/nn/pimpl.h>

#include <concepts>
#include <cstddef>
#include <functional>
#include <memory>
#include <optional>
#include <ostream>
#include <stdexcept>
#include <string>
#include <string_view>
#include <tuple>
#include <type_traits>
#include <utility>
#include <vector>

#include "tensordict/base.h"
#include "tensordict/dense.h"
#include "tensordict/key.h"

namespace tensordict::nn {

using Keys = std::vector<NestedKey>;

// Python's NotImplementedError (e.g. a distribution without a closed-form mean).
class NotImplementedError : public std::logic_error {
 public:
  using std::logic_error::logic_error;
};

// The base of every tensordict module: a torch::nn::Module (parameters(),
// to(), train()/eval(), torch::save work as for any module) with in_keys and
// out_keys. Call it with a tensordict (returns the tensordict written into) or
// with tensors in in_keys order (tensordict's dispatch: returns the out_keys'
// tensors, in order).
class TensorDictModuleBase : public torch::nn::Module {
 public:
  const Keys& in_keys() const { return in_keys_; }
  const Keys& out_keys() const { return out_keys_; }

  // Runs the module on `td`, writing into `td` (or into `out` when given) and
  // returning the tensordict written into.
  TensorDictBase forward(const TensorDictBase& td) { return run(td, std::nullopt); }
  TensorDictBase forward(const TensorDictBase& td, const TensorDictBase& out) { return run(td, out); }
  // The tensor-call form: module(x, y) with one tensor per in_key returns the
  // tensors written at out_keys ("_" excluded), in order.
  template <class... T>
    requires(std::same_as<std::decay_t<T>, at::Tensor> && ...)
  std::vector<at::Tensor> forward(const T&... tensors) {
    return forward_tensors({tensors...});
  }
  std::vector<at::Tensor> forward_tensors(const std::vector<at::Tensor>& tensors);

  // The implementation every kind provides.
  virtual TensorDictBase run(const TensorDictBase& td, const std::optional<TensorDictBase>& out) = 0;

  // The class name tensordict prints ("TensorDictModule").
  virtual std::string_view type_name() const = 0;
  // tensordict's repr.
  virtual std::string repr() const;
  void pretty_print(std::ostream& stream) const override { stream << repr(); }

  // The device of the first parameter, cpu when there is none (tensordict's
  // `device` property).
  at::Device device() const;

 protected:
  TensorDictModuleBase(Keys in_keys, Keys out_keys);
  // Throws a KeyError naming this module and the in_keys `td` lacks.
  void check_inputs(const TensorDictBase& td, const Keys& keys) const;

  Keys in_keys_;
  Keys out_keys_;
};

using ModulePtr = std::shared_ptr<TensorDictModuleBase>;

// Prints repr(): `std::cout << module` (or a holder) reads like tensordict.
std::ostream& operator<<(std::ostream& os, const TensorDictModuleBase& module);

// A reference to any tensordict module: a holder (TensorDictModule,
// TensorDictSequential, ...) or a shared_ptr to an implementation.
class ModuleRef {
 public:
  template <class T>
    requires std::derived_from<T, TensorDictModuleBase>
  ModuleRef(std::shared_ptr<T> module) : ptr_(std::move(module)) {}
  template <class T>
    requires std::derived_from<T, TensorDictModuleBase>
  ModuleRef(const torch::nn::ModuleHolder<T>& holder) : ptr_(holder.ptr()) {}

  const ModulePtr& ptr() const { return ptr_; }

 private:
  ModulePtr ptr_;
};

// The holder of a tensordict module (like torch::nn::Linear for LinearImpl):
// module(td), module(td, out), module(x, y) call forward; module->... reaches
// the implementation.
template <class Impl>
class TensorDictModuleHolder : public torch::nn::ModuleHolder<Impl> {
 public:
  using torch::nn::ModuleHolder<Impl>::ModuleHolder;

  TensorDictBase operator()(const TensorDictBase& td) { return this->get()->forward(td); }
  TensorDictBase operator()(const TensorDictBase& td, const TensorDictBase& out) { return this->get()->forward(td, out); }
  template <class... T>
    requires(std::same_as<std::decay_t<T>, at::Tensor> && ...)
  std::vector<at::Tensor> operator()(const T&... tensors) {
    return this->get()->forward_tensors({tensors...});
  }
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
concept TensorFunction = !std::is_base_of_v<torch::detail::ModuleHolderIndicator, std::decay_t<F>> &&
                         !std::is_same_v<std::decay_t<F>, torch::nn::AnyModule> &&
                         (tensor_arity<std::decay_t<F>>() <= kMaxArity ||
                          std::is_invocable_v<std::decay_t<F>&, const std::vector<at::Tensor>&>);

void check_arity(std::size_t expected, std::size_t got);

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

}  // namespace detail

// Wraps a torch module (AnyModule, or a holder / shared_ptr such as
// torch::nn::Linear, registered as the submodule "module") or a function
// taking tensors and returning a tensor, a tuple/pair or a vector of tensors.
// Inputs are read from `in_keys` in order; the results are written at
// `out_keys` ("_" discards one).
class TensorDictModuleImpl : public TensorDictModuleBase {
 public:
  using Function = detail::Function;

  TensorDictModuleImpl(torch::nn::AnyModule module, Keys in_keys, Keys out_keys);
  TensorDictModuleImpl(Function fn, Keys in_keys, Keys out_keys, std::string name = "<function>");
  // A torch module AnyModule cannot hold (a templated forward, e.g.
  // torch::nn::Sequential): registered as "module", called through `fn`.
  TensorDictModuleImpl(std::shared_ptr<torch::nn::Module> module, Function fn, Keys in_keys, Keys out_keys);

  TensorDictBase run(const TensorDictBase& td, const std::optional<TensorDictBase>& out) override;
  std::string_view type_name() const override { return "TensorDictModule"; }
  std::string repr() const override;

  // The wrapped torch module; empty when a function is wrapped.
  const torch::nn::AnyModule& module() const { return module_; }

 private:
  std::vector<at::Tensor> call(const std::vector<at::Tensor>& inputs);

  torch::nn::AnyModule module_;
  std::shared_ptr<torch::nn::Module> owner_;
  Function fn_;
  std::string fn_name_;
};

// The holder, used like torch::nn::Linear:
//   TensorDictModule m(torch::nn::Linear(3, 4), {"x"}, {"y"});
//   m(td); m->parameters(); m->to(torch::kCUDA);
class TensorDictModule : public TensorDictModuleHolder<TensorDictModuleImpl> {
 public:
  using Holder = TensorDictModuleHolder<TensorDictModuleImpl>;
  TensorDictModule(std::nullptr_t) : Holder(nullptr) {}
  TensorDictModule(std::shared_ptr<TensorDictModuleImpl> impl) : Holder(std::move(impl)) {}

  TensorDictModule(torch::nn::AnyModule module, Keys in_keys, Keys out_keys)
      : Holder(std::make_shared<TensorDictModuleImpl>(std::move(module), std::move(in_keys), std::move(out_keys))) {}
  template <class M>
  TensorDictModule(const torch::nn::ModuleHolder<M>& module, Keys in_keys, Keys out_keys)
      : TensorDictModule(torch::nn::AnyModule(module), std::move(in_keys), std::move(out_keys)) {}
  template <class M>
    requires std::derived_from<M, torch::nn::Module>
  TensorDictModule(std::shared_ptr<M> module, Keys in_keys, Keys out_keys)
      : TensorDictModule(torch::nn::AnyModule(std::move(module)), std::move(in_keys), std::move(out_keys)) {}
  // torch::nn::Sequential: one input, one output.
  TensorDictModule(const torch::nn::Sequential& module, Keys in_keys, Keys out_keys)
      : Holder(std::make_shared<TensorDictModuleImpl>(
            module.ptr(),
            [m = module.ptr()](const std::vector<at::Tensor>& in) -> std::vector<at::Tensor> {
              detail::check_arity(1, in.size());
              return {m->forward(in[0])};
            },
            std::move(in_keys), std::move(out_keys))) {}
  // A function; `name` is what the repr prints for it.
  template <class F>
    requires detail::TensorFunction<F>
  TensorDictModule(F fn, Keys in_keys, Keys out_keys, std::string name = "<function>")
      : Holder(std::make_shared<TensorDictModuleImpl>(detail::adapt(std::move(fn)), std::move(in_keys),
                                                            std::move(out_keys), std::move(name))) {}
};

}  // namespace tensordict::nn
