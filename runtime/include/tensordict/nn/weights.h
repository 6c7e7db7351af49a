// What to_module returns and takes, for every kind of module: the guard that
// puts the old weights back, the options, and the interface of modules that
// keep their weights elsewhere than in torch::nn parameters (an AOTInductor
// package's constant buffers). Light on purpose: aoti.h includes it without
// <torch/nn/module.h>.
#pragma once

#include <functional>
#include <vector>

#include "tensordict/base.h"

namespace tensordict::nn {

// Options of to_module, in the library's one style (op_options.h):
//   to_module(policy, params, {.partial = true}).release();
struct ToModuleOptions {
  // An exported module (AOTIModule) takes every one of its weights, so that
  // a forgotten key cannot leave old and new weights mixed: a missing one is
  // a KeyError. true: `params` may hold some of them, the others keep their
  // values. (A torch::nn module always takes any subset, as tensordict's
  // to_module does.)
  bool partial = false;
};

// Puts the module's former weights back when destroyed, unless release()d:
// tensordict's `with params.to_module(module):`. Movable, not copyable.
class ToModuleGuard {
 public:
  ToModuleGuard() = default;
  ~ToModuleGuard() { restore(); }
  ToModuleGuard(ToModuleGuard&& other) noexcept : restores_(std::move(other.restores_)) { other.restores_.clear(); }
  ToModuleGuard& operator=(ToModuleGuard&&) = delete;
  ToModuleGuard(const ToModuleGuard&) = delete;
  ToModuleGuard& operator=(const ToModuleGuard&) = delete;

  // Keeps the new values (the destructor restores nothing): a permanent
  // update.
  void release() noexcept { restores_.clear(); }

  // For module kinds: a step that puts one module's former values back. The
  // steps run newest first; a step must not throw.
  void on_restore(std::function<void()> step) { restores_.push_back(std::move(step)); }
  // Runs the steps now (the destructor's work).
  void restore() noexcept {
    for (auto it = restores_.rbegin(); it != restores_.rend(); ++it) (*it)();
    restores_.clear();
  }

 private:
  std::vector<std::function<void()>> restores_;
};

// A module whose weights are no torch::nn parameters (AOTIModule: constants
// of a compiled package). from_module and to_module ask it instead of
// walking its parameters, also when it sits inside a TensorDictSequential.
class WeightsHolder {
 public:
  virtual ~WeightsHolder() = default;
  // Its weights as a tensordict (batch size []), keyed as Python's
  // TensorDict.from_module keys the module it was made from.
  virtual TensorDict weights() const = 0;
  // Loads `params` (checked whole before anything changes); adds to `guard`
  // the step that puts the former values back.
  virtual void load_weights(const TensorDict& params, const ToModuleOptions& options, ToModuleGuard& guard) = 0;
};

}  // namespace tensordict::nn
