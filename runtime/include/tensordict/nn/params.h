// Parameters as a TensorDict (tensordict's TensorDict.from_module,
// to_module, from_modules): functional calls and ensembles.
#pragma once

#include <torch/nn/module.h>
#include <torch/nn/pimpl.h>

#include <memory>
#include <type_traits>
#include <utility>
#include <vector>

#include "tensordict/base.h"
#include "tensordict/nn/module.h"
#include "tensordict/nn/weights.h"

namespace tensordict::nn {

// A tensordict (batch size []) of the module's parameters and buffers, nested
// by submodule name: a Sequential's "0" -> {"weight", "bias"}. The tensors are
// the module's own (same storage, requires_grad kept). Submodules without
// parameters or buffers are left out. A WeightsHolder (an AOTIModule, also as
// a submodule) gives its weights() there.
TensorDict from_module(const torch::nn::Module& module);
template <class M>
TensorDict from_module(const torch::nn::ModuleHolder<M>& module) {
  return from_module(*module);
}

// Stacks the parameters of modules sharing one structure: batch dim 0 is the
// model index (for ensembles).
TensorDict from_modules(const std::vector<std::shared_ptr<torch::nn::Module>>& modules);
template <class H>
  requires std::is_base_of_v<torch::detail::ModuleHolderIndicator, H>
TensorDict from_modules(const std::vector<H>& modules) {
  std::vector<std::shared_ptr<torch::nn::Module>> ptrs;
  for (const auto& m : modules) ptrs.push_back(m.ptr());
  return from_modules(ptrs);
}

// Swaps `params` into `module` (every key must name a parameter or buffer of
// the module, nested by submodule) for the guard's lifetime; the destructor
// puts the originals back, release() keeps the new values. Like libtorch's
// Module::to, the module's parameter objects are kept and their data replaced
// (set_data): they alias the given tensors' storage, so the forward computes
// with the given values, and in-place updates reach them; autograd sees the
// module's parameters, so gradients land in their .grad. A submodule that is
// a WeightsHolder (an AOTIModule) loads its part itself, checked whole
// (see weights.h and aoti.h). Also spelled params.to_module(module), as in
// tensordict.
[[nodiscard]] ToModuleGuard to_module(torch::nn::Module& module, const TensorDict& params,
                                      const ToModuleOptions& options = {});
template <class M>
[[nodiscard]] ToModuleGuard to_module(const torch::nn::ModuleHolder<M>& module, const TensorDict& params,
                                      const ToModuleOptions& options = {}) {
  return to_module(*module.ptr(), params, options);
}

// The keywords of an ensemble call (EnsembleModule, ensemble_forward).
struct EnsembleOptions {
  // Each copy reads the whole input (tensordict's expand_input=True); else
  // copy i reads input[i], the input's dim 0 being the copy dim.
  bool expand_input = true;
};

// The ensemble forward, as a loop: for each model i of `params` (stacked by
// from_modules), swaps params[i] into `module`, runs it on a shallow copy of
// `input` (options.expand_input) or on input[i] (else: input's dim 0 is the model
// dim, ValueError when its size is not params') and stacks the results along
// a new dim 0 (batch [M, *input.batch]). Gradients land in `module`'s
// parameters (see ToModuleGuard).
TensorDict ensemble_forward(TensorDictModuleBase& module, const TensorDict& params, const TensorDict& input,
                            const EnsembleOptions& options = {});
template <class M>
TensorDict ensemble_forward(const torch::nn::ModuleHolder<M>& module, const TensorDict& params,
                            const TensorDict& input, const EnsembleOptions& options = {}) {
  return ensemble_forward(*module.ptr(), params, input, options);
}

// tensordict's `hasattr(module, "reset_parameters")` for a module of one's
// own: derive from it (besides torch::nn::Module) and
// reset_parameters_recursive calls it.
class ResetParameters {
 public:
  virtual ~ResetParameters() = default;
  virtual void reset_parameters() = 0;
};

// tensordict's TensorDictModuleBase.reset_parameters_recursive() on any
// module: the submodules of `module` (not `module` itself), deepest first,
// that have a reset_parameters re-initialize their parameters in place.
// Those are libtorch's layers whose Python twins have one (Linear,
// Bilinear, Conv1-3d, ConvTranspose1-3d, Embedding, EmbeddingBag,
// BatchNorm1-3d, InstanceNorm1-3d, LayerNorm, GroupNorm, RNN, LSTM, GRU and
// their cells) and the modules deriving from ResetParameters. Returns
// whether any was reset.
bool reset_parameters_recursive(torch::nn::Module& module);
template <class M>
bool reset_parameters_recursive(const torch::nn::ModuleHolder<M>& module) {
  return reset_parameters_recursive(*module.ptr());
}

}  // namespace tensordict::nn

namespace tensordict {
// tensordict's `params.to_module(module)`, the member form of to_module for
// every module kind (declared in base.h).
template <class Module>
nn::ToModuleGuard TensorDict::to_module(Module&& module) const {
  return nn::to_module(std::forward<Module>(module), *this);
}
template <class Module>
nn::ToModuleGuard TensorDict::to_module(Module&& module, const nn::ToModuleOptions& options) const {
  return nn::to_module(std::forward<Module>(module), *this, options);
}
}  // namespace tensordict
