// EnsembleModule: one tensordict module run with num_copies sets of
// parameters, the outputs stacked along a new leading dim
// (tensordict.nn.EnsembleModule).
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>

#include "tensordict/nn/module_base.h"
#include "tensordict/nn/params.h"
#include "tensordict/nn/tensordict_params.h"

namespace tensordict::nn {

// Built from `module`: its in_keys and out_keys() become the ensemble's;
// its parameters and buffers (from_module) are copied num_copies times,
// each copy re-initialized by reset_parameters_recursive (see params.h),
// and kept, stacked, in params_td() (a TensorDictParams of batch size
// [num_copies], registered as "params_td"; the module is "module").
// parameters() returns the copies, which an optimizer trains, and the
// module's own, which a call does not use (as in tensordict).
//
// A call runs `module` once per copy with that copy's parameters swapped
// in (tensordict vmaps one call): with options.expand_input (the default)
// each copy reads the whole input, else copy i reads input[i] (the input's
// dim 0 is the copy dim: chained ensembles). It returns a new tensordict of batch size
// [num_copies, *batch]: the input's entries, expanded, and the outputs
// (into `out` when given); the input is left as it was. Gradients reach
// params_td() and the input: with gradients on, each copy's backward runs
// the copy again (as activation checkpointing does), under the random
// states of its forward (the CPU's, and those of the CUDA devices of its
// parameters and input), on copies of the module's buffers as the forward
// found them.
class EnsembleModuleImpl : public TensorDictModuleBase {
 public:
  // ValueError for a null module or num_copies < 1.
  EnsembleModuleImpl(ModuleRef module, int64_t num_copies, const EnsembleOptions& options = {});

  std::string_view type_name() const override { return "EnsembleModule"; }
  std::string repr() const override;

  const ModulePtr& module() const { return module_; }
  const TensorDictParams& params_td() const { return params_td_; }
  int64_t num_copies() const { return num_copies_; }
  bool expand_input() const { return expand_input_; }

  // tensordict's reset_parameters_recursive(parameters): re-initializes,
  // in place, one copy of the module's parameters per index of the batch
  // dims of `parameters` (laid out as from_module(module()); batch size []
  // is one copy) and returns `parameters`. Pass params_td()->tensordict()
  // to reset the ensemble.
  TensorDict reset_parameters_recursive(const TensorDict& parameters);

 protected:
  TensorDict run_impl(const TensorDict& td, const std::optional<TensorDict>& out) override;

 private:
  ModulePtr module_;
  TensorDictParams params_td_{nullptr};
  int64_t num_copies_;
  bool expand_input_;
};

class EnsembleModule : public TensorDictModuleHolder<EnsembleModuleImpl> {
 public:
  using Holder = TensorDictModuleHolder<EnsembleModuleImpl>;
  EnsembleModule(std::nullptr_t) : Holder(nullptr) {}
  EnsembleModule(std::shared_ptr<EnsembleModuleImpl> impl) : Holder(std::move(impl)) {}
  EnsembleModule(ModuleRef module, int64_t num_copies, const EnsembleOptions& options = {})
      : Holder(std::make_shared<EnsembleModuleImpl>(std::move(module), num_copies, options)) {}
};

}  // namespace tensordict::nn
