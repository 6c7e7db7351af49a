// One copy of an ensemble call: a custom autograd function, whose backward
// runs the copy again, makes the copy differentiable although every copy
// runs on the same module parameters.
//
// Why: the copies share the module's parameter tensors (ToModuleGuard
// swaps their data), and autograd saves those tensors themselves for the
// backward; by then they hold another copy's data. So the forward runs
// without a graph, and the backward runs the copy again with its own data
// (as activation checkpointing does) and differentiates that.
#include "nn/ensemble_copy.h"

#include <ATen/Context.h>
#include <fmt/format.h>
#include <fmt/ranges.h>
#include <torch/csrc/autograd/custom_function.h>
#include <torch/torch.h>

#include <algorithm>
#include <optional>
#include <string>
#include <unordered_set>
#include <utility>
#include <vector>

#include "tensordict/errors.h"
#include "tensordict/nn/params.h"

namespace tensordict::nn::detail {

void check_ensemble_input(const TensorDict& input, int64_t copies, bool expand_input, std::string_view who) {
  if (expand_input || (input.batch_dims() >= 1 && input.batch_size()[0] == copies)) return;
  throw ValueError(
      fmt::format("{}: without expand_input the input's first batch dim is the copy dim: it must be {}, got batch "
                  "size [{}]",
                  who, copies, fmt::join(input.batch_size(), ", ")));
}

TensorDict ensemble_input(const TensorDict& input, int64_t i, bool expand_input) {
  return expand_input ? TensorDict(input.clone({.recurse = false})) : input.index({i});
}

namespace {

using torch::autograd::variable_list;

bool any_requires_grad(const TensorDict& td) {
  for (const auto& value : td.values({.include_nested = true, .leaves_only = true})) {
    if (value.is_tensor() && value.tensor().requires_grad()) return true;
  }
  return false;
}

// The tensors of `td` requiring gradients, with their keys.
std::pair<Keys, std::vector<at::Tensor>> grad_leaves(const TensorDict& td) {
  std::pair<Keys, std::vector<at::Tensor>> found;
  for (const auto& [key, value] : td.items({.include_nested = true, .leaves_only = true})) {
    if (value.is_tensor() && value.tensor().requires_grad()) {
      found.first.push_back(key);
      found.second.push_back(value.tensor());
    }
  }
  return found;
}

// The copy's parameters for the run again: detached, and the module's
// buffers (BatchNorm's running statistics) copied as they are before the
// forward, so that the run again sees what the forward saw and updates
// the copies, not the real buffers a second time.
TensorDict snapshot(const torch::nn::Module& module, const TensorDict& params) {
  std::unordered_set<std::string> buffers;
  for (const auto& item : module.named_buffers()) buffers.insert(item.key());
  TensorDict taken = params.apply([](const at::Tensor& t) { return t.detach(); });
  for (const auto& [key, value] : taken.items({.include_nested = true, .leaves_only = true})) {
    std::string name;
    for (const auto& part : key.path()) name += (name.empty() ? "" : ".") + part;
    if (value.is_tensor() && buffers.contains(name)) taken.set(key, value.tensor().clone());
  }
  return taken;
}

// The states of the generators the copy may draw from: the CPU's and those
// of the CUDA devices its parameters and input are on.
std::vector<std::pair<at::Generator, at::Tensor>> random_states(const TensorDict& params, const TensorDict& input) {
  std::vector<at::Device> devices{at::Device(at::kCPU)};
  for (const TensorDict* td : {&params, &input}) {
    for (const auto& value : td->values({.include_nested = true, .leaves_only = true})) {
      if (!value.is_tensor()) continue;
      const at::Device device = value.tensor().device();
      if (device.is_cuda() && std::find(devices.begin(), devices.end(), device) == devices.end()) {
        devices.push_back(device);
      }
    }
  }
  std::vector<std::pair<at::Generator, at::Tensor>> states;
  for (const auto& device : devices) {
    const at::Generator& generator = at::globalContext().defaultGenerator(device);
    states.emplace_back(generator, generator.get_state());
  }
  return states;
}

// Sets the generators to `states` for its lifetime, then puts back the
// states they had.
class RandomStateGuard {
 public:
  explicit RandomStateGuard(const std::vector<std::pair<at::Generator, at::Tensor>>& states) {
    for (const auto& [generator, state] : states) {
      at::Generator g = generator;
      saved_.emplace_back(g, g.get_state());
      g.set_state(state);
    }
  }
  ~RandomStateGuard() {
    for (auto& [generator, state] : saved_) generator.set_state(state);
  }
  RandomStateGuard(const RandomStateGuard&) = delete;
  RandomStateGuard& operator=(const RandomStateGuard&) = delete;

 private:
  std::vector<std::pair<at::Generator, at::Tensor>> saved_;
};

// What a copy's forward leaves to its backward.
struct CopyState : torch::CustomClassHolder {
  ModulePtr module;
  TensorDict params;    // as given: the forward runs on them
  TensorDict snapshot;  // snapshot(): the backward runs on them
  Keys grad_params;     // the keys of `params` requiring gradients
  TensorDict input;
  Keys grad_inputs;  // the keys of `input` requiring gradients
  TensorDict result;
  Keys outputs;  // the keys of the outputs the function returns, in order
  std::vector<std::pair<at::Generator, at::Tensor>> rng;
};

// A custom autograd function over the tensors of grad_params and
// grad_inputs; its outputs are the module's differentiable outputs.
struct CopyFunction : torch::autograd::Function<CopyFunction> {
  static variable_list forward(torch::autograd::AutogradContext* ctx, const c10::intrusive_ptr<CopyState>& state,
                               at::TensorList /*differentiated: params then inputs*/) {
    ctx->saved_data["state"] = c10::IValue::make_capsule(state);
    {
      ToModuleGuard guard = to_module(*state->module, state->params);
      // On a copy: `input` keeps its own tensors, to tell the outputs by.
      state->result = state->module->run(TensorDict(state->input.clone({.recurse = false})), std::nullopt);
    }
    variable_list outs;
    for (const auto& [key, value] : state->result.items({.include_nested = true, .leaves_only = true})) {
      if (!value.is_tensor()) continue;
      const at::Tensor& t = value.tensor();
      // The input's own tensors keep their history.
      if (const auto own = state->input.get_value(key); own && own->is_tensor() && own->tensor().is_same(t)) continue;
      if (!t.defined() || !torch::autograd::isDifferentiableType(t.scalar_type())) continue;
      state->outputs.push_back(key);
      outs.push_back(t);
    }
    return outs;
  }

  static variable_list backward(torch::autograd::AutogradContext* ctx, variable_list grads) {
    const auto state = c10::static_intrusive_pointer_cast<CopyState>(ctx->saved_data["state"].toCapsule());
    at::AutoGradMode grad_mode(true);
    RandomStateGuard replay(state->rng);
    ToModuleGuard guard = to_module(*state->module, state->snapshot);
    // The differentiated tensors: the module's parameters (which now hold
    // this copy's data) and fresh leaves for the inputs.
    const TensorDict own = from_module(*state->module);
    std::vector<at::Tensor> leaves;
    std::vector<std::optional<std::size_t>> slot;  // differentiated tensor i -> leaves[j]
    for (const auto& key : state->grad_params) {
      const at::Tensor p = own.get(key);
      slot.push_back(p.requires_grad() ? std::optional(leaves.size()) : std::nullopt);
      if (p.requires_grad()) leaves.push_back(p);
    }
    TensorDict in(state->input.clone({.recurse = false}));
    for (const auto& key : state->grad_inputs) {
      at::Tensor x = state->input.get(key).detach().requires_grad_(true);
      in.set(key, x);
      slot.push_back(leaves.size());
      leaves.push_back(x);
    }
    const TensorDict result = state->module->run(in, std::nullopt);
    std::vector<at::Tensor> outs, out_grads;
    for (std::size_t j = 0; j < state->outputs.size(); ++j) {
      const at::Tensor o = result.get(state->outputs[j]);
      if (!o.requires_grad() || !grads[j].defined()) continue;
      outs.push_back(o);
      out_grads.push_back(grads[j]);
    }
    variable_list computed(leaves.size());
    if (!outs.empty() && !leaves.empty()) {
      computed = torch::autograd::grad(outs, leaves, out_grads, /*retain_graph=*/false, /*create_graph=*/false,
                                       /*allow_unused=*/true);
    }
    variable_list grads_in{at::Tensor()};  // for the state
    for (const auto& j : slot) grads_in.push_back(j ? computed[*j] : at::Tensor());
    return grads_in;
  }
};

}  // namespace

TensorDict run_copy(const ModulePtr& module, const TensorDict& params, const TensorDict& input) {
  if (!at::GradMode::is_enabled() || (!any_requires_grad(params) && !any_requires_grad(input))) {
    ToModuleGuard guard = to_module(*module, params);
    return module->run(input, std::nullopt);
  }
  auto state = c10::make_intrusive<CopyState>();
  state->module = module;
  state->params = params;
  state->input = input;
  auto [param_keys, param_tensors] = grad_leaves(params);
  auto [input_keys, input_tensors] = grad_leaves(input);
  std::vector<at::Tensor> differentiated = std::move(param_tensors);
  differentiated.insert(differentiated.end(), input_tensors.begin(), input_tensors.end());
  state->grad_params = std::move(param_keys);
  state->grad_inputs = std::move(input_keys);
  state->snapshot = snapshot(*module, params);
  state->rng = random_states(params, input);

  const variable_list outs = CopyFunction::apply(state, at::TensorList(differentiated));
  // The backward reads the input detached; the state keeps no graph alive.
  state->input = input.apply([](const at::Tensor& t) { return t.detach(); });
  state->params = TensorDict();
  TensorDict result = state->result;
  state->result = TensorDict();
  for (std::size_t j = 0; j < outs.size(); ++j) result.set(state->outputs[j], outs[j]);
  return result;
}

}  // namespace tensordict::nn::detail
