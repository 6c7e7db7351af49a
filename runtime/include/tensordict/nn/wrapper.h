// TensorDictModuleWrapper: a module that behaves as the tensordict module it
// wraps (tensordict.nn.TensorDictModuleWrapper); subclasses override run_impl
// to change the call.
#pragma once

#include <memory>
#include <optional>
#include <string>
#include <string_view>

#include "tensordict/nn/module_base.h"

namespace tensordict::nn {

// Registers the wrapped module as "td_module" (its parameters are the
// wrapper's) and takes its in_keys and its out_keys() (after its
// selection) when built. A call runs the wrapped module; a subclass
// overrides run_impl and reaches the wrapped module with td_module():
//
//   class TimesTen : public TensorDictModuleWrapperImpl {
//     using TensorDictModuleWrapperImpl::TensorDictModuleWrapperImpl;
//     TensorDict run_impl(const TensorDict& td, const std::optional<TensorDict>& out) override {
//       TensorDict r = td_module()->run(td, out);
//       return r.set("y", r.get("y") * 10);
//     }
//   };
//
// tensordict forwards any attribute the wrapper lacks to the wrapped
// module; here td_module() (or td_module_as<T>()) reaches it.
class TensorDictModuleWrapperImpl : public TensorDictModuleBase {
 public:
  // ValueError for a null module.
  explicit TensorDictModuleWrapperImpl(ModuleRef td_module);

  const ModulePtr& td_module() const { return td_module_; }
  // The wrapped module as its class (TensorDictModuleImpl, ...); TypeError
  // naming the wrapped module's class when it is another.
  template <class T>
  requires std::derived_from<T, TensorDictModuleBase> std::shared_ptr<T> td_module_as() const {
    if (auto typed = std::dynamic_pointer_cast<T>(td_module_)) return typed;
    throw_wrong_class();
  }

  std::string_view type_name() const override { return "TensorDictModuleWrapper"; }
  // TensorDictModuleWrapper(td_module=..., in_keys=[...], out_keys=[...]).
  std::string repr() const override;

 protected:
  // Runs td_module() on `td` (into `out` when given).
  TensorDict run_impl(const TensorDict& td, const std::optional<TensorDict>& out) override;

 private:
  [[noreturn]] void throw_wrong_class() const;

  ModulePtr td_module_;
};

class TensorDictModuleWrapper : public TensorDictModuleHolder<TensorDictModuleWrapperImpl> {
 public:
  using Holder = TensorDictModuleHolder<TensorDictModuleWrapperImpl>;
  TensorDictModuleWrapper(std::nullptr_t) : Holder(nullptr) {}
  TensorDictModuleWrapper(std::shared_ptr<TensorDictModuleWrapperImpl> impl) : Holder(std::move(impl)) {}
  explicit TensorDictModuleWrapper(ModuleRef td_module)
      : Holder(std::make_shared<TensorDictModuleWrapperImpl>(std::move(td_module))) {}
};

}  // namespace tensordict::nn
