// EnsembleModule: copies of a module's parameters, run one after the other.
#include "tensordict/nn/ensemble.h"

#include <fmt/format.h>
#include <torch/torch.h>

#include <sstream>
#include <vector>

#include "nn/ensemble_copy.h"
#include "nn/text.h"
#include "tensordict/errors.h"
#include "tensordict/nn/params.h"
#include "tensordict/repr.h"

namespace tensordict::nn {

namespace {

const TensorDictModuleBase& ensembled_module(const ModuleRef& module, int64_t num_copies) {
  if (!module.ptr()) throw ValueError("EnsembleModule: the module is null");
  if (num_copies < 1) throw ValueError(fmt::format("EnsembleModule: num_copies must be at least 1, got {}", num_copies));
  return *module.ptr();
}

}  // namespace

EnsembleModuleImpl::EnsembleModuleImpl(ModuleRef module, int64_t num_copies, const EnsembleOptions& options)
    : TensorDictModuleBase(ensembled_module(module, num_copies).in_keys(),
                           ensembled_module(module, num_copies).out_keys()),
      module_(module.ptr()),
      num_copies_(num_copies),
      expand_input_(options.expand_input) {
  register_module("module", module_);
  TensorDict stacked;
  {
    // New leaves, one contiguous copy per index, for TensorDictParams to
    // make parameters of.
    at::NoGradGuard no_grad;
    stacked = TensorDict(from_module(*module_).expand({num_copies}).clone());
  }
  reset_parameters_recursive(stacked);
  params_td_ = register_module("params_td", TensorDictParams(stacked));
}

TensorDict EnsembleModuleImpl::reset_parameters_recursive(const TensorDict& parameters) {
  if (parameters.batch_dims() == 0) {
    ToModuleGuard guard = to_module(*module_, parameters);
    nn::reset_parameters_recursive(*module_);
    return parameters;
  }
  // Indexing, not unbind: each copy a view of its own.
  for (int64_t i = 0; i < parameters.batch_size()[0]; ++i) reset_parameters_recursive(parameters.index({i}));
  return parameters;
}

TensorDict EnsembleModuleImpl::run_impl(const TensorDict& td, const std::optional<TensorDict>& out) {
  detail::check_ensemble_input(td, num_copies_, expand_input_, type_name());
  const TensorDict params = params_td_->tensordict();
  std::vector<TensorDict> copies;
  copies.reserve(static_cast<std::size_t>(num_copies_));
  for (int64_t i = 0; i < num_copies_; ++i) {
    copies.push_back(detail::run_copy(module_, params.index({i}), detail::ensemble_input(td, i, expand_input_)));
  }
  TensorDict result = stack(copies, 0);
  if (!out) return result;
  TensorDict dest = *out;
  dest.update(result);
  return dest;
}

std::string EnsembleModuleImpl::repr() const {
  std::ostringstream params;
  params_td_->pretty_print(params);
  return text::fields_repr(type_name(), {"module=" + module_->repr(), "params_td=" + params.str(),
                                         "in_keys=" + text::keys_repr(in_keys_),
                                         "out_keys=" + text::keys_repr(out_keys())});
}

}  // namespace tensordict::nn
