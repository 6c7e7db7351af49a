// Parameters as a TensorDict: from_module, to_module, from_modules, ensembles.
#include <fmt/format.h>
#include <torch/torch.h>

#include "tensordict/errors.h"
#include "tensordict/nn/params.h"

namespace tensordict::nn {

TensorDict from_module(const torch::nn::Module& module) {
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

void swap_in(torch::nn::Module& module, const TensorDict& params, const std::string& prefix,
             std::vector<std::pair<at::Tensor, at::Tensor>>& saved) {
  auto parameters = module.named_parameters(/*recurse=*/false);
  auto buffers = module.named_buffers(/*recurse=*/false);
  auto children = module.named_children();
  for (const auto& [key, value] : params.items()) {
    const std::string& name = key.front();
    const std::string path = prefix.empty() ? name : prefix + "." + name;
    if (value.is_tensordict()) {
      auto* child = children.find(name);
      if (!child) throw KeyError(fmt::format("to_module: the module has no submodule '{}'", path));
      swap_in(**child, value.tensordict(), path, saved);
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

ToModuleGuard::ToModuleGuard(torch::nn::Module& module, const TensorDict& params) {
  try {
    swap_in(module, params, "", saved_);
  } catch (...) {
    restore();
    throw;
  }
}

ToModuleGuard::ToModuleGuard(ToModuleGuard&& other) noexcept : saved_(std::move(other.saved_)) { other.saved_.clear(); }

ToModuleGuard::~ToModuleGuard() { restore(); }

void ToModuleGuard::restore() noexcept {
  for (auto it = saved_.rbegin(); it != saved_.rend(); ++it) {
    try {
      it->first.set_data(it->second);
    } catch (...) {
      // set_data of the module's own former data cannot fail in practice.
    }
  }
  saved_.clear();
}

ToModuleGuard to_module(torch::nn::Module& module, const TensorDict& params) { return ToModuleGuard(module, params); }

TensorDict ensemble_forward(TensorDictModuleBase& module, const TensorDict& params, const TensorDict& input) {
  if (params.batch_dims() < 1) {
    throw ValueError("ensemble_forward: params need a leading model dim (stack them with from_modules)");
  }
  std::vector<TensorDict> outs;
  const int64_t n = params.batch_size()[0];
  outs.reserve(static_cast<std::size_t>(n));
  for (int64_t i = 0; i < n; ++i) {
    ToModuleGuard guard(module, params.index({i}));
    outs.push_back(module.run(input.clone(/*recurse=*/{.recurse = false}), std::nullopt));
  }
  return stack(outs, 0);
}

}  // namespace tensordict::nn
