// TensorDictSequential: modules run one after the other on the same
// tensordict (tensordict.nn.TensorDictSequential).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "tensordict/nn/module_base.h"

namespace tensordict::nn {

class TensorDictSequential;

// tensordict's OrderedDict of modules: (name, module) pairs, in order.
using NamedModules = std::vector<std::pair<std::string, ModuleRef>>;

// in_keys: the keys the chain needs from outside (a module's in_key produced
// by an earlier module is not one); out_keys: every key produced, each once
// (tensordict keeps a repeated key at its last position).
//
// partial_tolerant: a module whose inputs are missing is skipped instead of
// raising. tensordict also runs such a module on the members of a lazy stack
// that have its inputs; only the dense rule (skip the module) is implemented.
//
// selected_out_keys: select_out_keys(selected_out_keys) at construction
// (empty: none, as in tensordict).
//
// inplace (sequence.py:632): without an output tensordict, the modules run on
// the input and the chain's out_keys are then written into the input (True),
// a new TensorDict (False) or input.empty() (Empty); None (the default)
// returns the tensordict the last module wrote into. With a selection the
// modules run on a shallow copy and only the selected keys reach that
// tensordict, which is returned (as with an output tensordict).
//
// Named modules (NamedModules, tensordict's OrderedDict) are registered under
// their names ("module.<name>"); seq["name"] reaches one. Integer indices work
// on every sequence.
// tensordict's TensorDictSequential keywords (also
// ProbabilisticTensorDictSequential's), in the library's one option style:
//   TensorDictSequential({m1, m2}, {.partial_tolerant = true, .selected_out_keys = {"key"}})
struct SequentialOptions {
  // Run what the input allows: a module whose in_keys are missing is skipped.
  bool partial_tolerant = false;
  // Only these keys reach the result (select_out_keys).
  Keys selected_out_keys = {};
  Inplace inplace = Inplace::None;
};

class TensorDictSequentialImpl : public TensorDictModuleBase {
 public:
  explicit TensorDictSequentialImpl(std::vector<ModuleRef> modules, const SequentialOptions& options = {});
  explicit TensorDictSequentialImpl(NamedModules modules, const SequentialOptions& options = {});

  std::string_view type_name() const override { return "TensorDictSequential"; }
  std::string repr() const override;

  std::size_t size() const { return modules_.size(); }
  // tensordict's seq[i]: the module itself; a negative index counts from the
  // end. IndexError outside [-size(), size()).
  const ModulePtr& operator[](int64_t index) const;
  // seq["name"] of a named sequence; KeyError when no module has that name.
  const ModulePtr& operator[](std::string_view name) const;
  // seq[start:stop:step]: a new sequence of the same kind (Python's slice
  // rules), its in_keys/out_keys computed from its modules; names and
  // partial_tolerant are kept, a selection is not.
  TensorDictSequential slice(std::optional<int64_t> start, std::optional<int64_t> stop = std::nullopt,
                             int64_t step = 1) const;
  // seq[i] = module, seq["name"] = module: replaces a module (a named one
  // keeps its name). del seq[i], del seq["name"]: removes one. in_keys and
  // out_keys are recomputed (tensordict leaves them stale); a selection whose
  // keys are no longer produced is a ValueError and nothing changes.
  void set(int64_t index, ModuleRef module);
  void set(std::string_view name, ModuleRef module);
  void erase(int64_t index);
  void erase(std::string_view name);

  const std::vector<ModulePtr>& modules() const { return modules_; }
  // The modules' names; empty for a sequence built from a list.
  const std::vector<std::string>& names() const { return names_; }
  bool partial_tolerant() const { return partial_tolerant_; }
  Inplace inplace() const { return inplace_; }

  // The modules needed to compute `out_keys` from `in_keys` (defaults: this
  // sequence's). Forward: a module is kept when all its in_keys are available
  // (in_keys, then what kept modules produce). Backward: a kept module is
  // kept when one of its out_keys is wanted (out_keys, then the in_keys of
  // the modules kept after it). Nested TensorDictSequentials are pruned the
  // same way; named modules keep their names. ValueError when no
  // module is left.
  TensorDictSequential select_subsequence(std::optional<Keys> in_keys = std::nullopt,
                                          std::optional<Keys> out_keys = std::nullopt) const;

  // in_keys and out_keys of a chain of modules, by the rule above.
  static std::pair<Keys, Keys> compute_in_and_out_keys(const std::vector<ModulePtr>& modules);

 protected:
  TensorDictSequentialImpl(std::vector<ModulePtr> modules, std::vector<std::string> names,
                           const SequentialOptions& options);
  static std::vector<ModulePtr> ptrs_of(const std::vector<ModuleRef>& refs);
  static std::vector<ModulePtr> ptrs_of(const NamedModules& named);
  static std::vector<std::string> names_of(const NamedModules& named);

  // With an output tensordict the chain runs on a shallow copy, so the input
  // keeps its keys, and only out_keys() reach `out` (sequence.py:625-657).
  TensorDict run_impl(const TensorDict& td, const std::optional<TensorDict>& out) override;
  // output_for(td, inplace) unless inplace is None.
  std::optional<TensorDict> inplace_output(const TensorDict& td) const override;
  // Runs the chain on `td`, writing into it.
  virtual TensorDict execute(const TensorDict& td);
  // Runs one module unless partial tolerance skips it.
  TensorDict run_module(TensorDictModuleBase& module, const TensorDict& td) const;
  // tensordict's sequence rule: ValueError("All keys in
  // selected_out_keys must be in out_keys.").
  void check_selection(const Keys& keys) const override;
  // Throws when `modules` may not form this kind of sequence (set/erase
  // check before changing anything).
  virtual void check_modules(const std::vector<ModulePtr>& modules) const;
  // Called once the modules changed.
  virtual void modules_changed() {}
  // A sequence of the same kind holding `modules` (named `names` unless
  // empty): select_subsequence's and slice's result.
  virtual std::shared_ptr<TensorDictSequentialImpl> make_like(std::vector<ModulePtr> modules,
                                                              std::vector<std::string> names) const;

  std::vector<ModulePtr> modules_;
  std::vector<std::string> names_;
  bool partial_tolerant_;
  Inplace inplace_;

 private:
  // Replaces the modules (and names), recomputing the keys and registering
  // the container ("module": a ModuleList, or a ModuleDict when named).
  void assign(std::vector<ModulePtr> modules, std::vector<std::string> names);
  std::size_t position(int64_t index) const;
  std::size_t position(std::string_view name) const;
};

class TensorDictSequential : public TensorDictModuleHolder<TensorDictSequentialImpl> {
 public:
  using Holder = TensorDictModuleHolder<TensorDictSequentialImpl>;
  TensorDictSequential(std::nullptr_t) : Holder(nullptr) {}
  TensorDictSequential(std::shared_ptr<TensorDictSequentialImpl> impl) : Holder(std::move(impl)) {}
  TensorDictSequential(std::vector<ModuleRef> modules, const SequentialOptions& options = {})
      : Holder(std::make_shared<TensorDictSequentialImpl>(std::move(modules), options)) {}
  TensorDictSequential(NamedModules modules, const SequentialOptions& options = {})
      : Holder(std::make_shared<TensorDictSequentialImpl>(std::move(modules), options)) {}
};

}  // namespace tensordict::nn
