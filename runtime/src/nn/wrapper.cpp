// TensorDictModuleWrapper: forwards calls to the wrapped tensordict module.
#include "tensordict/nn/wrapper.h"

#include <fmt/format.h>
#include <torch/torch.h>

#include "nn/text.h"
#include "tensordict/errors.h"

namespace tensordict::nn {

namespace {

const TensorDictModuleBase& wrapped_module(const ModuleRef& td_module) {
  if (!td_module.ptr()) throw ValueError("TensorDictModuleWrapper: the module to wrap is null");
  return *td_module.ptr();
}

}  // namespace

TensorDictModuleWrapperImpl::TensorDictModuleWrapperImpl(ModuleRef td_module)
    : TensorDictModuleBase(wrapped_module(td_module).in_keys(), wrapped_module(td_module).out_keys()),
      td_module_(td_module.ptr()) {
  register_module("td_module", td_module_);
}

TensorDict TensorDictModuleWrapperImpl::run_impl(const TensorDict& td, const std::optional<TensorDict>& out) {
  return td_module_->run(td, out);
}

std::string TensorDictModuleWrapperImpl::repr() const {
  return text::fields_repr(type_name(), {"td_module=" + td_module_->repr(), "in_keys=" + text::keys_repr(in_keys_),
                                         "out_keys=" + text::keys_repr(out_keys())});
}

void TensorDictModuleWrapperImpl::throw_wrong_class() const {
  throw TypeError(fmt::format("{}: the wrapped module is a {}, not the class asked for", type_name(),
                              td_module_->type_name()));
}

}  // namespace tensordict::nn
