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
#include <string>
#include <string_view>
#include <type_traits>
#include <utility>
#include <vector>

#include "tensordict/nn/function.h"
#include "tensordict/nn/module_base.h"

namespace tensordict::nn {

// tensordict's dict in_keys. With out_to_in_map true (the default) each pair
// is {keyword argument name, tensordict key}; with false, {tensordict key,
// keyword argument name}.
using KeyMap = std::vector<std::pair<NestedKey, NestedKey>>;

// Options in the library's one style (op_options.h):
//   TensorDictModuleOptions{.strict = true}
struct TensorDictModuleOptions {
  // A missing in_key raises a KeyError before the call. Without (tensordict's
  // default), the input is passed as an undefined tensor, and a call that
  // then throws is reported as a KeyError naming the missing keys.
  bool strict = false;
  // How a KeyMap reads (see KeyMap; unset: true). Only for KeyMap in_keys:
  // given with a list of keys it is a ValueError.
  std::optional<bool> out_to_in_map = std::nullopt;
  // Where the outputs go without an output tensordict (common.py:1110): the
  // input (the default), a new TensorDict (False, or None), input.empty().
  Inplace inplace = Inplace::True;
};

// Wraps a torch module (AnyModule, or a holder / shared_ptr such as
// torch::nn::Linear, registered as the submodule "module") or a function
// taking tensors and returning a tensor, a tuple/pair or a vector of tensors.
// Inputs are read from `in_keys` in order; the results are written at
// `out_keys` ("_" discards one). A function of keyword arguments (`const
// Kwargs&`) takes a KeyMap: its inputs are named.
class TensorDictModuleImpl : public TensorDictModuleBase {
 public:
  using Function = detail::Function;

  TensorDictModuleImpl(torch::nn::AnyModule module, Keys in_keys, Keys out_keys, TensorDictModuleOptions options = {});
  TensorDictModuleImpl(Function fn, Keys in_keys, Keys out_keys, std::string name = "<function>",
                       TensorDictModuleOptions options = {});
  // A torch module AnyModule cannot hold (a templated forward, e.g.
  // torch::nn::Sequential): registered as "module", called through `fn`.
  TensorDictModuleImpl(std::shared_ptr<torch::nn::Module> module, Function fn, Keys in_keys, Keys out_keys,
                       TensorDictModuleOptions options = {});
  // A function of keyword arguments.
  TensorDictModuleImpl(detail::KwargsFn fn, const KeyMap& in_keys, Keys out_keys, std::string name = "<function>",
                       TensorDictModuleOptions options = {});

  std::string_view type_name() const override { return "TensorDictModule"; }
  std::string repr() const override;

  // The wrapped torch module; empty when a function is wrapped.
  const torch::nn::AnyModule& module() const { return module_; }
  bool strict() const { return options_.strict; }
  // The keyword argument names, in in_keys order (tensordict's _kwargs);
  // nullopt for positional inputs.
  const std::optional<std::vector<std::string>>& kwargs() const { return kwargs_; }

 protected:
  TensorDict run_impl(const TensorDict& td, const std::optional<TensorDict>& out) override;

 private:
  std::vector<at::Tensor> call(const std::vector<at::Tensor>& inputs);
  // Calls the module; with inputs missing, a failure becomes tensordict's
  // KeyError naming them.
  std::vector<at::Tensor> call_reporting(const std::vector<at::Tensor>& inputs, const Keys& missing);

  torch::nn::AnyModule module_;
  std::shared_ptr<torch::nn::Module> owner_;
  Function fn_;
  std::string fn_name_;
  TensorDictModuleOptions options_;
  std::optional<std::vector<std::string>> kwargs_;
};

// The holder, used like torch::nn::Linear:
//   TensorDictModule m(torch::nn::Linear(3, 4), {"x"}, {"y"});
//   m(td); m->parameters(); m->to(torch::kCUDA);
class TensorDictModule : public TensorDictModuleHolder<TensorDictModuleImpl> {
 public:
  using Holder = TensorDictModuleHolder<TensorDictModuleImpl>;
  using Options = TensorDictModuleOptions;
  TensorDictModule(std::nullptr_t) : Holder(nullptr) {}
  TensorDictModule(std::shared_ptr<TensorDictModuleImpl> impl) : Holder(std::move(impl)) {}

  TensorDictModule(torch::nn::AnyModule module, Keys in_keys, Keys out_keys, Options options = {})
      : Holder(std::make_shared<TensorDictModuleImpl>(std::move(module), std::move(in_keys), std::move(out_keys),
                                                      std::move(options))) {}
  template <class M>
  TensorDictModule(const torch::nn::ModuleHolder<M>& module, Keys in_keys, Keys out_keys, Options options = {})
      : TensorDictModule(torch::nn::AnyModule(module), std::move(in_keys), std::move(out_keys), std::move(options)) {}
  template <class M>
  requires std::derived_from<M, torch::nn::Module> TensorDictModule(std::shared_ptr<M> module, Keys in_keys,
                                                                    Keys out_keys, Options options = {})
      : TensorDictModule(torch::nn::AnyModule(std::move(module)), std::move(in_keys), std::move(out_keys),
                         std::move(options)) {}
  // torch::nn::Sequential: one input, one output.
  TensorDictModule(const torch::nn::Sequential& module, Keys in_keys, Keys out_keys, Options options = {})
      : Holder(std::make_shared<TensorDictModuleImpl>(
            module.ptr(),
            [m = module.ptr()](const std::vector<at::Tensor>& in) -> std::vector<at::Tensor> {
              detail::check_arity(1, in.size());
              return {m->forward(in[0])};
            },
            std::move(in_keys), std::move(out_keys), std::move(options))) {}
  // A function of tensors; `name` is what the repr prints for it.
  template <class F>
  requires detail::TensorFunction<F> TensorDictModule(F fn, Keys in_keys, Keys out_keys,
                                                      std::string name = "<function>", Options options = {})
      : Holder(std::make_shared<TensorDictModuleImpl>(detail::adapt(std::move(fn)), std::move(in_keys),
                                                      std::move(out_keys), std::move(name), std::move(options))) {}
  template <class F>
  requires detail::TensorFunction<F> TensorDictModule(F fn, Keys in_keys, Keys out_keys, Options options)
      : TensorDictModule(std::move(fn), std::move(in_keys), std::move(out_keys), "<function>", std::move(options)) {}
  // A function of keyword arguments, its in_keys a KeyMap:
  //   TensorDictModule([](const Kwargs& kw) { return kw["x"] + kw["y"]; }, {{"x", "a"}, {"y", "b"}}, {"z"})
  template <class F>
  requires detail::KwargsFunction<F> TensorDictModule(F fn, const KeyMap& in_keys, Keys out_keys,
                                                      std::string name = "<function>", Options options = {})
      : Holder(std::make_shared<TensorDictModuleImpl>(detail::adapt_kwargs(std::move(fn)), in_keys, std::move(out_keys),
                                                      std::move(name), std::move(options))) {}
  template <class F>
  requires detail::KwargsFunction<F> TensorDictModule(F fn, const KeyMap& in_keys, Keys out_keys, Options options)
      : TensorDictModule(std::move(fn), in_keys, std::move(out_keys), "<function>", std::move(options)) {}
};

// tensordict's WrapModule: any function of a whole tensordict as a module
// of a sequence (a reshape, a transform that needs every key). in_keys and
// out_keys only inform the sequence; they are not checked.
struct WrapModuleOptions {
  // Write the function's result into the input (update) and return the
  // input, unless the function returned the input itself.
  bool inplace = false;
  Keys in_keys = {};
  Keys out_keys = {};
};

class WrapModuleImpl : public TensorDictModuleBase {
 public:
  using Function = std::function<TensorDict(const TensorDict&)>;
  explicit WrapModuleImpl(Function fn, WrapModuleOptions options = {});

  std::string_view type_name() const override { return "WrapModule"; }
  bool inplace() const { return inplace_; }

 protected:
  // With an output tensordict, the result is written into it (update).
  TensorDict run_impl(const TensorDict& td, const std::optional<TensorDict>& out) override;

 private:
  Function fn_;
  bool inplace_;
};

//   WrapModule([](const TensorDict& td) { return td.reshape({-1}); })
class WrapModule : public TensorDictModuleHolder<WrapModuleImpl> {
 public:
  using Holder = TensorDictModuleHolder<WrapModuleImpl>;
  using Options = WrapModuleOptions;
  WrapModule(std::nullptr_t) : Holder(nullptr) {}
  WrapModule(std::shared_ptr<WrapModuleImpl> impl) : Holder(std::move(impl)) {}
  template <class F>
  requires std::is_invocable_r_v<TensorDict, F, const TensorDict&>
  explicit WrapModule(F fn, Options options = {})
      : Holder(std::make_shared<WrapModuleImpl>(WrapModuleImpl::Function(std::move(fn)), std::move(options))) {}
};

}  // namespace tensordict::nn
