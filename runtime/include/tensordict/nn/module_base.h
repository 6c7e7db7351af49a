// TensorDictModuleBase: what every tensordict module shares (in_keys,
// out_keys and their selection, the calling conventions), ModuleRef and the
// holder template (tensordict.nn.TensorDictModuleBase).
//
// Part of tensorclass::nn (<tensordict/nn.h>), the only place where
// torch/nn headers are included.
#pragma once

#include <torch/nn/module.h>
#include <torch/nn/pimpl.h>

#include <concepts>
#include <functional>
#include <memory>
#include <optional>
#include <ostream>
#include <stdexcept>
#include <string>
#include <string_view>
#include <type_traits>
#include <vector>

#include "tensordict/base.h"
#include "tensordict/errors.h"
#include "tensordict/key.h"

namespace tensordict::nn {

using Keys = std::vector<NestedKey>;

// A generated tensorclass (tensorclass-gen's structs): what the modules'
// typed calls need of it.
template <class T>
concept TensorClassObject = !std::derived_from<T, TensorDict> && requires(T& tc, const TensorDict& td) {
  { tc.tensordict() } -> std::same_as<TensorDict>;
  { T::from_tensordict(td, tc, FromTensorDictOptions{}) } -> std::same_as<T>;
  tc.update(tc);
  { T::schema().python_type } -> std::convertible_to<std::string_view>;
};

// tensordict's `inplace` argument of TensorDictModule and
// TensorDictSequential (and ProbabilisticTensorDictSequential): where
// forward() writes the outputs when it is given no output tensordict.
enum class Inplace {
  None,   // TensorDictModule: as False. TensorDictSequential (its default):
          // where the modules wrote, each by its own rule
  True,   // into the input (TensorDictModule's default)
  False,  // into a new TensorDict with no batch size and no device
  Empty,  // into input.empty(): the input's batch size and device, no keys
};

// Python's NotImplementedError (e.g. a distribution without a closed-form mean).
using tensordict::NotImplementedError;

// The base of every tensordict module: a torch::nn::Module (parameters(),
// to(), train()/eval(), torch::save work as for any module) with in_keys and
// out_keys. Call it with a tensordict (returns the tensordict written into) or
// with tensors in in_keys order (tensordict's dispatch: returns the out_keys'
// tensors, in order).
class TensorDictModuleBase : public torch::nn::Module {
 public:
  const Keys& in_keys() const { return in_keys_; }
  // The keys the module writes: the selected ones after select_out_keys.
  const Keys& out_keys() const { return selected_out_keys_ ? *selected_out_keys_ : out_keys_; }
  // Every key the module computes, whatever the selection (tensordict's
  // out_keys_source).
  const Keys& out_keys_source() const { return out_keys_; }

  // tensordict's select_out_keys(*keys): from now on only `keys` (a subset of
  // out_keys()) are written; the other outputs are computed and dropped. The
  // modules run on a shallow copy of the input, then the selected keys and
  // the input's own leaves are written back, so the input keeps every key it
  // had (tensordict's TensorDictModule also deletes the input's keys that are
  // neither in_keys nor selected). Returns this module.
  TensorDictModuleBase& select_out_keys(const Keys& keys);
  // Undoes select_out_keys. Returns this module.
  TensorDictModuleBase& reset_out_keys();

  // Runs the module on `td`, writing into `td` (or into `out` when given) and
  // returning the tensordict written into.
  TensorDict forward(const TensorDict& td) { return run(td, std::nullopt); }
  TensorDict forward(const TensorDict& td, const TensorDict& out) { return run(td, out); }
  // A generated tensorclass (tensordict's tensorclass support): in_keys and
  // out_keys name fields (nested ones by path). The module runs on the
  // object's tensordict form and the outputs that are fields are set with
  // the object's update(): validated against the schema, a locked object
  // refuses. Outputs that are no field of the class (a sequence's
  // intermediate keys, such as NormalParamExtractor's) are dropped: run the
  // module on tc.tensordict() to keep them. Returns the object.
  template <TensorClassObject T>
  T& forward(T& tc) {
    check_schema(T::schema().python_type);
    tc.update(T::from_tensordict(forward(tc.tensordict()), tc, FromTensorDictOptions{.strict = false}));
    return tc;
  }
  // Runs the module on `in` (a generated tensorclass, or a TensorDict, which
  // is written into as forward(td) does) and returns the fields of `Out`, a
  // generated class, from the result: `module.forward<PolicyOut>(obs)`.
  // Outputs that are no field of Out are dropped; a missing required field
  // or a value that breaks Out's schema throws as Out::from_tensordict does.
  template <TensorClassObject Out, class In>
  requires(TensorClassObject<In> || std::same_as<In, TensorDict>) Out forward(const In& in) {
    if constexpr (std::same_as<In, TensorDict>) {
      return Out::from_tensordict(forward(in), FromTensorDictOptions{.strict = false});
    } else {
      check_schema(In::schema().python_type);
      return Out::from_tensordict(forward(in.tensordict()), FromTensorDictOptions{.strict = false});
    }
  }
  // The tensor-call form: module(x, y) with one tensor per in_key returns the
  // tensors written at out_keys ("_" excluded), in order.
  template <class... T>
  requires(std::same_as<std::decay_t<T>, at::Tensor>&&...) std::vector<at::Tensor> forward(const T&... tensors) {
    return forward_tensors({tensors...});
  }
  std::vector<at::Tensor> forward_tensors(const std::vector<at::Tensor>& tensors);

  // forward() with the output tensordict optional; applies the selection
  // around run_impl.
  TensorDict run(const TensorDict& td, const std::optional<TensorDict>& out);

  // The class name tensordict prints ("TensorDictModule").
  virtual std::string_view type_name() const = 0;
  // tensordict's repr.
  virtual std::string repr() const;
  void pretty_print(std::ostream& stream) const override { stream << repr(); }

  // The device of the first parameter, cpu when there is none (tensordict's
  // `device` property).
  at::Device device() const;

 protected:
  // An implementation: writes into `out` when given, else into the
  // tensordict it runs on, and returns the tensordict written into.
  using Body = std::function<TensorDict(const TensorDict&, const std::optional<TensorDict>&)>;

  TensorDictModuleBase(Keys in_keys, Keys out_keys);

  // The implementation every kind provides: computes every key of
  // out_keys_source().
  virtual TensorDict run_impl(const TensorDict& td, const std::optional<TensorDict>& out) = 0;
  // Throws when `keys` may not be selected. tensordict's TensorDictModuleBase
  // rule: a single key must be one of out_keys() (ValueError,
  // "Can't select non existent key: ..."), several keys too
  // (RuntimeError, "Some keys are not part of the module out_keys.").
  virtual void check_selection(const Keys& keys) const;
  // Where forward() without an output tensordict sends the outputs when that
  // is not simply where the module writes them (a sequence's `inplace`);
  // nullopt (this default) when it is. The selection's rule treats it as an
  // output tensordict given by the caller.
  virtual std::optional<TensorDict> inplace_output(const TensorDict& td) const;
  // run() for any implementation: `body` as is without a selection; with
  // one, `body` runs on a shallow copy of `td` and the selected keys go to
  // `out`, else to inplace_output(td) (run_into), else back into `td` with
  // the values the modules gave `td`'s own leaves (tensordict's
  // sequence.py:625-673).
  TensorDict run_selecting(const TensorDict& td, const std::optional<TensorDict>& out, const Body& body);
  // tensordict's tensordict_out rule for a chain: with `out`, `body` runs on a
  // shallow copy of `td` (which keeps its keys) and only `keys` are written
  // into `out`; without, `body` runs on `td`.
  static TensorDict run_into(const TensorDict& td, const std::optional<TensorDict>& out, const Keys& keys,
                                 const Body& body);
  // The tensordict the outputs go to by the `inplace` rule, for input `td`
  // (None as False).
  static TensorDict output_for(const TensorDict& td, Inplace inplace);
  // Throws when the module may not run on an object of the generated class
  // whose Python type is `python_type` ("<class 'robot.PolicyStep'>"); this
  // default accepts every class.
  virtual void check_schema(std::string_view python_type) const;
  // Throws a KeyError naming this module and the in_keys `td` lacks.
  void check_inputs(const TensorDict& td, const Keys& keys) const;

  Keys in_keys_;
  // Every key computed (out_keys_source()).
  Keys out_keys_;
  // The keys select_out_keys kept, if it was called.
  std::optional<Keys> selected_out_keys_;
};

using ModulePtr = std::shared_ptr<TensorDictModuleBase>;

// Prints repr(): `std::cout << module` (or a holder) reads like tensordict.
std::ostream& operator<<(std::ostream& os, const TensorDictModuleBase& module);

// A reference to any tensordict module: a holder (TensorDictModule,
// TensorDictSequential, ...) or a shared_ptr to an implementation.
class ModuleRef {
 public:
  template <class T>
  requires std::derived_from<T, TensorDictModuleBase> ModuleRef(std::shared_ptr<T> module) : ptr_(std::move(module)) {}
  template <class T>
  requires std::derived_from<T, TensorDictModuleBase> ModuleRef(const torch::nn::ModuleHolder<T>& holder)
      : ptr_(holder.ptr()) {}

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

  TensorDict operator()(const TensorDict& td) { return this->get()->forward(td); }
  TensorDict operator()(const TensorDict& td, const TensorDict& out) {
    return this->get()->forward(td, out);
  }
  template <class... T>
  requires(std::same_as<std::decay_t<T>, at::Tensor>&&...) std::vector<at::Tensor>
  operator()(const T&... tensors) { return this->get()->forward_tensors({tensors...}); }
  // A generated tensorclass: module(step) is module->forward(step).
  template <TensorClassObject T>
  T& operator()(T& tc) { return this->get()->forward(tc); }
  // module.forward<PolicyOut>(obs): see TensorDictModuleBase::forward<Out>.
  template <TensorClassObject Out, class In>
  Out forward(const In& in) { return this->get()->template forward<Out>(in); }
};

}  // namespace tensordict::nn
