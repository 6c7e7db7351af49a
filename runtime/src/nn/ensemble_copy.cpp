// One copy of an ensemble call: a recomputing backward node makes the copy
// differentiable although every copy runs on the same module parameters.
//
// Why a node: the copies share the module's parameter tensors (ToModuleGuard
// swaps their data), and autograd saves those tensors themselves for the
// backward; by then they hold another copy's data. So the forward runs
// without a graph, and the backward runs the copy again with its own data
// (as activation checkpointing does) and differentiates that.
#include "nn/ensemble_copy.h"

#include <ATen/Context.h>
#include <fmt/format.h>
#include <fmt/ranges.h>
#include <torch/csrc/autograd/function.h>
#include <torch/csrc/autograd/functions/utils.h>
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

struct CopyBackward : torch::autograd::Node {
  ModulePtr module;
  TensorDict params;  // snapshot()
  Keys grad_params;
  TensorDict input;  // leaves detached
  Keys grad_inputs;
  Keys outputs;  // one per input of this node
  std::vector<std::pair<at::Generator, at::Tensor>> rng;  // the forward's random states

  std::string name() const override { return "EnsembleModuleBackward"; }

  variable_list apply(variable_list&& grads) override {
    at::AutoGradMode grad_mode(true);
    RandomStateGuard replay(rng);
    ToModuleGuard guard(*module, params);
    // The differentiated tensors: the module's parameters (which now hold
    // this copy's data) and fresh leaves for the inputs.
    const TensorDict own = from_module(*module);
    std::vector<at::Tensor> leaves;
    std::vector<std::optional<std::size_t>> slot;  // this node's output i -> leaves[j]
    for (const auto& key : grad_params) {
      const at::Tensor p = own.get(key);
      slot.push_back(p.requires_grad() ? std::optional(leaves.size()) : std::nullopt);
      if (p.requires_grad()) leaves.push_back(p);
    }
    TensorDict in(input.clone({.recurse = false}));
    for (const auto& key : grad_inputs) {
      at::Tensor x = input.get(key).detach().requires_grad_(true);
      in.set(key, x);
      slot.push_back(leaves.size());
      leaves.push_back(x);
    }
    const TensorDict result = module->run(in, std::nullopt);
    std::vector<at::Tensor> outs, out_grads;
    for (std::size_t j = 0; j < outputs.size(); ++j) {
      const at::Tensor o = result.get(outputs[j]);
      if (!o.requires_grad() || !grads[j].defined()) continue;
      outs.push_back(o);
      out_grads.push_back(grads[j]);
    }
    variable_list computed(leaves.size());
    if (!outs.empty() && !leaves.empty()) {
      computed = torch::autograd::grad(outs, leaves, out_grads, /*retain_graph=*/false, /*create_graph=*/false,
                                       /*allow_unused=*/true);
    }
    variable_list grads_in(slot.size());
    for (std::size_t j = 0; j < slot.size(); ++j) {
      if (slot[j]) grads_in[j] = computed[*slot[j]];
    }
    return grads_in;
  }
};

}  // namespace

TensorDict run_copy(const ModulePtr& module, const TensorDict& params, const TensorDict& input) {
  if (!at::GradMode::is_enabled() || (!any_requires_grad(params) && !any_requires_grad(input))) {
    ToModuleGuard guard(*module, params);
    return module->run(input, std::nullopt);
  }
  auto node = std::make_shared<CopyBackward>();
  node->module = module;
  auto [param_keys, param_tensors] = grad_leaves(params);
  auto [input_keys, input_tensors] = grad_leaves(input);
  std::vector<at::Tensor> edges = param_tensors;
  edges.insert(edges.end(), input_tensors.begin(), input_tensors.end());
  node->set_next_edges(torch::autograd::collect_next_edges(edges));
  node->grad_params = std::move(param_keys);
  node->grad_inputs = std::move(input_keys);
  node->params = snapshot(*module, params);
  node->input = input.apply([](const at::Tensor& t) { return t.detach(); });
  node->rng = random_states(params, input);

  TensorDict result;
  {
    at::NoGradGuard no_grad;
    ToModuleGuard guard(*module, params);
    // On a copy: `input` keeps its own tensors, to tell the outputs by.
    result = module->run(TensorDict(input.clone({.recurse = false})), std::nullopt);
  }
  for (const auto& [key, value] : result.items({.include_nested = true, .leaves_only = true})) {
    if (!value.is_tensor()) continue;
    const at::Tensor& t = value.tensor();
    // The input's own tensors keep their history.
    if (const auto own = input.get_value(key); own && own->is_tensor() && own->tensor().is_same(t)) continue;
    if (!t.defined() || !torch::autograd::isDifferentiableType(t.scalar_type())) continue;
    at::Tensor out = t.detach();
    torch::autograd::set_history(out, node);
    result.set(key, out);
    node->outputs.push_back(key);
  }
  return result;
}

}  // namespace tensordict::nn::detail
