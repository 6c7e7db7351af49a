// Parameters as a TensorDict: from_module, to_module, from_modules, ensembles.
#include <fmt/format.h>
#include <torch/torch.h>

#include "nn/ensemble_copy.h"
#include "tensordict/errors.h"
#include "tensordict/nn/params.h"

namespace tensordict::nn {

TensorDict from_module(const torch::nn::Module& module) {
  if (const auto* holder = dynamic_cast<const WeightsHolder*>(&module)) return holder->weights();
  TensorDict td;
  for (const auto& item : module.named_parameters(/*recurse=*/false)) {
    if (item.value().defined()) td.set(item.key(), item.value());
  }
  for (const auto& item : module.named_buffers(/*recurse=*/false)) {
    if (item.value().defined()) td.set(item.key(), item.value());
  }
  for (const auto& child : module.named_children()) {
    TensorDict sub = from_module(*child.value());
    if (!sub.is_empty()) td.set(child.key(), sub);
  }
  return td;
}

TensorDict from_modules(const std::vector<std::shared_ptr<torch::nn::Module>>& modules) {
  if (modules.empty()) throw ValueError("from_modules: no modules");
  std::vector<TensorDict> tds;
  tds.reserve(modules.size());
  for (const auto& m : modules) {
    if (!m) throw ValueError("from_modules: a module is null");
    tds.push_back(from_module(*m));
  }
  // The stacked parameters are new leaves (as tensordict's from_modules makes
  // them parameters): trainable where the originals were.
  return TensorDict(stack(tds, 0).apply([](const at::Tensor& t) { return t.detach().requires_grad_(t.requires_grad()); }));  // dense: a dense stack
}

namespace {

// (a module's tensor, its former data)
using Saved = std::vector<std::pair<at::Tensor, at::Tensor>>;

void swap_in(torch::nn::Module& module, const TensorDict& params, const std::string& prefix,
             const ToModuleOptions& options, Saved& saved, ToModuleGuard& guard) {
  if (auto* holder = dynamic_cast<WeightsHolder*>(&module)) {
    holder->load_weights(params, options, guard);
    return;
  }
  auto parameters = module.named_parameters(/*recurse=*/false);
  auto buffers = module.named_buffers(/*recurse=*/false);
  auto children = module.named_children();
  for (const auto& [key, value] : params.items()) {
    const std::string& name = key.front();
    const std::string path = prefix.empty() ? name : prefix + "." + name;
    if (value.is_tensordict()) {
      auto* child = children.find(name);
      if (!child) throw KeyError(fmt::format("to_module: the module has no submodule '{}'", path));
      swap_in(**child, value.tensordict(), path, options, saved, guard);
      continue;
    }
    if (!value.is_tensor()) throw TypeError(fmt::format("to_module: '{}' is not a tensor", path));
    at::Tensor* target = parameters.find(name);
    if (!target) target = buffers.find(name);
    if (!target || !target->defined()) {
      throw KeyError(fmt::format("to_module: the module has no parameter or buffer '{}'", path));
    }
    saved.emplace_back(*target, target->variable_data());
    target->set_data(value.tensor());
  }
}

}  // namespace

ToModuleGuard to_module(torch::nn::Module& module, const TensorDict& params, const ToModuleOptions& options) {
  ToModuleGuard guard;
  auto saved = std::make_shared<Saved>();
  guard.on_restore([saved] {
    for (auto it = saved->rbegin(); it != saved->rend(); ++it) {
      try {
        it->first.set_data(it->second);
      } catch (...) {
        // set_data of the module's own former data cannot fail in practice.
      }
    }
  });
  // On an error the guard, destroyed, puts back what was swapped in so far.
  swap_in(module, params, "", options, *saved, guard);
  return guard;
}

TensorDict ensemble_forward(TensorDictModuleBase& module, const TensorDict& params, const TensorDict& input,
                            const EnsembleOptions& options) {
  if (params.batch_dims() < 1) {
    throw ValueError("ensemble_forward: params need a leading model dim (stack them with from_modules)");
  }
  const int64_t n = params.batch_size()[0];
  detail::check_ensemble_input(input, n, options.expand_input, "ensemble_forward");
  std::vector<TensorDict> outs;
  outs.reserve(static_cast<std::size_t>(n));
  for (int64_t i = 0; i < n; ++i) {
    ToModuleGuard guard = to_module(module, params.index({i}));
    outs.push_back(module.run(detail::ensemble_input(input, i, options.expand_input), std::nullopt));
  }
  return stack(outs, 0);
}

namespace {

// The libtorch layers whose Python twins have reset_parameters.
template <class... Layers>
bool reset_layer(torch::nn::Module& module) {
  return ([&] {
    auto* layer = dynamic_cast<Layers*>(&module);
    if (layer) layer->reset_parameters();
    return layer != nullptr;
  }() || ...);
}

bool reset_one(torch::nn::Module& module) {
  if (auto* own = dynamic_cast<ResetParameters*>(&module)) {
    own->reset_parameters();
    return true;
  }
  namespace tn = torch::nn;
  return reset_layer<tn::LinearImpl, tn::BilinearImpl, tn::Conv1dImpl, tn::Conv2dImpl, tn::Conv3dImpl,
                     tn::ConvTranspose1dImpl, tn::ConvTranspose2dImpl, tn::ConvTranspose3dImpl, tn::EmbeddingImpl,
                     tn::EmbeddingBagImpl, tn::BatchNorm1dImpl, tn::BatchNorm2dImpl, tn::BatchNorm3dImpl,
                     tn::InstanceNorm1dImpl, tn::InstanceNorm2dImpl, tn::InstanceNorm3dImpl, tn::LayerNormImpl,
                     tn::GroupNormImpl, tn::RNNImpl, tn::LSTMImpl, tn::GRUImpl, tn::RNNCellImpl, tn::LSTMCellImpl,
                     tn::GRUCellImpl>(module);
}

}  // namespace

bool reset_parameters_recursive(torch::nn::Module& module) {
  // tensordict's _reset_parameters: each child's descendants first, then
  // the child.
  bool any = false;
  for (const auto& child : module.children()) {
    any |= reset_parameters_recursive(*child);
    any |= reset_one(*child);
  }
  return any;
}

}  // namespace tensordict::nn
