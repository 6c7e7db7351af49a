// TensorDictParams: a tensordict whose leaves are a module's parameters and
// buffers (tensordict.nn.TensorDictParams), so that parameters(), to(),
// torch::save/load and optimizers see them.
#pragma once

#include <torch/nn/module.h>
#include <torch/nn/pimpl.h>

#include <memory>
#include <optional>
#include <ostream>
#include <string>

#include "tensordict/base.h"

namespace tensordict::nn {

struct TensorDictParamsOptions {
  // false (tensordict's default): float16, float32 and float64 tensors become
  // parameters (requiring gradients), every other dtype a buffer. true: every
  // tensor becomes a buffer, except those that already are parameters. A
  // parameter is told here by what libtorch gives one: a leaf requiring
  // gradients.
  bool no_convert = false;
  // Lock the wrapped tensordict; writes through the TensorDictParams still
  // work.
  bool lock = false;
};

// Wraps `parameters` without a copy: its tensor leaves are replaced, in
// place, by the parameters and buffers they become (the same storage), and
// those are registered on this module. A nested tensordict is a submodule
// of the same class named by its key, so named_parameters() joins the keys
// with "." ("0.weight"), as tensordict's does. Reading a leaf returns the
// registered tensor itself: an optimizer's update, Module::to or
// torch::load is seen through tensordict().
//
// Write through set()/del_(): a write through tensordict() (or the
// tensordict given) changes the values but not what is registered, as in
// tensordict. Non-tensor data stays in the tensordict, unregistered.
class TensorDictParamsImpl : public torch::nn::Module {
 public:
  using Options = TensorDictParamsOptions;

  // ValueError when a key holds "." (libtorch's parameter names cannot).
  explicit TensorDictParamsImpl(TensorDict parameters, Options options = {});

  // The wrapped tensordict (a handle to the same object: its leaves are the
  // registered tensors; in-place ops on it reach the parameters).
  TensorDict tensordict() const { return td_; }
  at::Tensor get(const NestedKey& key) const { return td_.get(key); }
  bool contains(const NestedKey& key) const { return td_.contains(key); }
  bool no_convert() const { return no_convert_; }

  // Sets `key` (intermediate levels created) and registers the value as
  // the constructor does, replacing what was registered at `key`; a locked
  // tensordict takes the write (tensordict's _unlock_and_set). TypeError
  // when a buffer would become a parameter or a nested tensordict: libtorch
  // cannot unregister a buffer.
  TensorDictParamsImpl& set(const NestedKey& key, const at::Tensor& value);
  TensorDictParamsImpl& set(const NestedKey& key, const TensorDict& value);
  // Deletes `key` and what was registered for it. KeyError when absent;
  // TypeError for a buffer (see set).
  TensorDictParamsImpl& del_(const NestedKey& key);

  // TensorDictParams(params=TensorDict(...)).
  void pretty_print(std::ostream& stream) const override;

 private:
  struct Level {};
  // A nested level: `level`'s leaves are converted and registered.
  TensorDictParamsImpl(Level, TensorDict level, bool no_convert);

  // Converts and registers the first-level entries of td_.
  void register_entries();
  // Converts the leaf at `name` of td_ and registers it.
  void register_leaf(const std::string& name);
  // The tensor `value` becomes: a parameter (as_param) or a buffer.
  at::Tensor convert(const at::Tensor& value, bool& as_param) const;
  // Throws when the registered tensor at `key`'s last part (of this level)
  // cannot be replaced by a leaf (`as_param`) or a level or nothing
  // (nullopt): a buffer can only become another buffer.
  void check_replaceable(const NestedKey& key, std::optional<bool> as_param) const;
  // check_replaceable for everything a write at `key` replaces, before it.
  void check_write(const NestedKey& key, std::optional<bool> as_param);
  bool children_contains(const std::string& name) const;
  // The level holding `key`'s last part; levels the write created are
  // registered.
  TensorDictParamsImpl& level_of(const NestedKey& key);
  // The same, without creating: nullptr when a level is missing.
  TensorDictParamsImpl* existing_level_of(const NestedKey& key);
  // Runs `write` on td_ unlocked, restoring its lock.
  template <class F>
  void unlocked(F&& write);

  TensorDict td_;
  bool no_convert_;
};

class TensorDictParams : public torch::nn::ModuleHolder<TensorDictParamsImpl> {
 public:
  using torch::nn::ModuleHolder<TensorDictParamsImpl>::ModuleHolder;
  TensorDictParams(TensorDict parameters, TensorDictParamsOptions options = {})
      : ModuleHolder(std::make_shared<TensorDictParamsImpl>(std::move(parameters), options)) {}
};

}  // namespace tensordict::nn
