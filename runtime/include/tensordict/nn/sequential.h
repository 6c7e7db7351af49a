// TensorDictSequential: modules run one after the other on the same
// tensordict (tensordict.nn.TensorDictSequential).
#pragma once

#include <torch/nn/modules/container/modulelist.h>

#include <optional>

#include "tensordict/nn/module.h"

namespace tensordict::nn {

class TensorDictSequential;

// in_keys: the keys the chain needs from outside (a module's in_key produced
// by an earlier module is not one); out_keys: every key produced, each once
// (tensordict keeps a repeated key at its last position).
//
// partial_tolerant: a module whose inputs are missing is skipped instead of
// raising. tensordict also runs such a module on the members of a lazy stack
// that have its inputs; lazy stacks do not exist in this runtime yet, so only
// the dense rule (skip the module) is implemented.
class TensorDictSequentialImpl : public TensorDictModuleBase {
 public:
  explicit TensorDictSequentialImpl(std::vector<ModuleRef> modules, bool partial_tolerant = false);

  TensorDictBase run(const TensorDictBase& td, const std::optional<TensorDictBase>& out) override;
  std::string_view type_name() const override { return "TensorDictSequential"; }
  std::string repr() const override;

  std::size_t size() const { return modules_.size(); }
  const ModulePtr& operator[](std::size_t i) const { return modules_.at(i); }
  const std::vector<ModulePtr>& modules() const { return modules_; }
  bool partial_tolerant() const { return partial_tolerant_; }

  // The modules needed to compute `out_keys` from `in_keys` (defaults: this
  // sequence's). Forward: a module is kept when all its in_keys are available
  // (in_keys, then what kept modules produce). Backward: a kept module is
  // kept when one of its out_keys is wanted (out_keys, then the in_keys of
  // the modules kept after it). Nested TensorDictSequentials are pruned the
  // same way. std::invalid_argument when no module is left.
  TensorDictSequential select_subsequence(std::optional<Keys> in_keys = std::nullopt,
                                          std::optional<Keys> out_keys = std::nullopt) const;

  // in_keys and out_keys of a chain of modules, by the rule above.
  static std::pair<Keys, Keys> compute_in_and_out_keys(const std::vector<ModulePtr>& modules);

 protected:
  // Runs one module unless partial tolerance skips it.
  TensorDictBase run_module(TensorDictModuleBase& module, const TensorDictBase& td) const;
  // A sequence of the same kind holding `modules` (select_subsequence's result).
  virtual std::shared_ptr<TensorDictSequentialImpl> make_like(std::vector<ModuleRef> modules) const;

  std::vector<ModulePtr> modules_;
  torch::nn::ModuleList list_;
  bool partial_tolerant_;
};

class TensorDictSequential : public TensorDictModuleHolder<TensorDictSequentialImpl> {
 public:
  using Holder = TensorDictModuleHolder<TensorDictSequentialImpl>;
  TensorDictSequential(std::nullptr_t) : Holder(nullptr) {}
  TensorDictSequential(std::shared_ptr<TensorDictSequentialImpl> impl) : Holder(std::move(impl)) {}
  TensorDictSequential(std::vector<ModuleRef> modules, bool partial_tolerant = false)
      : Holder(std::make_shared<TensorDictSequentialImpl>(std::move(modules), partial_tolerant)) {}
};

}  // namespace tensordict::nn
