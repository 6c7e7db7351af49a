// EnsembleModule: copies of a module's parameters, outputs stacked.
#include <sstream>

#include "nn_test.h"

namespace {

// A module of one's own with reset_parameters (tensordict's
// `hasattr(child, "reset_parameters")`), counting the calls.
struct CountingLinearImpl : torch::nn::Module, tnn::ResetParameters {
  CountingLinearImpl() : weight(register_parameter("weight", torch::zeros({1, 1}))) {}
  at::Tensor forward(const at::Tensor& x) { return x * weight.squeeze(); }
  void reset_parameters() override {
    ++calls;
    torch::NoGradGuard no_grad;
    weight.normal_();
  }
  at::Tensor weight;
  int calls = 0;
};
TORCH_MODULE(CountingLinear);

bool all_differ(const at::Tensor& stacked) {
  const auto copies = stacked.unbind(0);
  for (std::size_t i = 0; i < copies.size(); ++i) {
    for (std::size_t j = i + 1; j < copies.size(); ++j) {
      if (torch::isclose(copies[i], copies[j]).any().item<bool>()) return false;
    }
  }
  return true;
}

}  // namespace

// ports test_nn.py::TestEnsembleModule::test_init
TEST_CASE("EnsembleModule resets each copy of the parameters", "[ensemble]") {
  torch::manual_seed(0);
  tnn::TensorDictModule module(
      torch::nn::Sequential(torch::nn::Linear(2, 3), torch::nn::ReLU(), torch::nn::Linear(3, 1)), {"a"}, {"b"});
  const TensorDict original = tnn::from_module(module).clone();
  tnn::EnsembleModule mod(module, 2);
  const TensorDict params = mod->params_td()->tensordict();
  CHECK(params.batch_size() == std::vector<int64_t>{2});
  for (const auto& [key, value] : params.items({.include_nested = true, .leaves_only = true})) {
    const auto copies = value.tensor().unbind(0);
    CHECK_FALSE(torch::allclose(copies[0], copies[1]));
    CHECK_FALSE(torch::allclose(copies[0], original.get(key)));
  }
  // the module keeps its own parameters
  CHECK(tnn::from_module(module).allclose(original));
  // parameters(): the module's and the copies (as tensordict's)
  CHECK(mod->named_parameters().keys() ==
        std::vector<std::string>{"module.module.0.weight", "module.module.0.bias", "module.module.2.weight",
                                 "module.module.2.bias", "params_td.module.0.weight", "params_td.module.0.bias",
                                 "params_td.module.2.weight", "params_td.module.2.bias"});
}

// ports test_nn.py::TestEnsembleModule::test_siso_forward
TEST_CASE("EnsembleModule runs every copy on the input", "[ensemble]") {
  tnn::TensorDictModule module(torch::nn::Linear(1, 1), {"bork"}, {"dork"});
  tnn::EnsembleModule mod(module, 2);
  CHECK(mod->in_keys() == tnn::Keys{"bork"});
  CHECK(mod->out_keys() == tnn::Keys{"dork"});
  TensorDict td({{"bork", torch::randn({5, 1})}}, {5});
  TensorDict out = mod(td);
  CHECK(out.batch_size() == std::vector<int64_t>{2, 5});
  CHECK(out.get("dork").sizes() == at::IntArrayRef({2, 5, 1}));
  CHECK(out.get("bork").sizes() == at::IntArrayRef({2, 5, 1}));
  CHECK_FALSE(td.contains("dork"));  // a new tensordict
  CHECK(all_differ(out.get("dork")));
  // each copy is the Linear with its own weights: x W_i^T + b_i
  const TensorDict params = mod->params_td()->tensordict();
  for (int64_t i = 0; i < 2; ++i) {
    const at::Tensor expected =
        torch::matmul(td.get("bork"), params.get({"module", "weight"})[i].t()) + params.get({"module", "bias"})[i];
    CHECK(torch::allclose(out.get("dork")[i], expected));
  }
}

// ports test_nn.py::TestEnsembleModule::test_chained_ensembles
TEST_CASE("EnsembleModule without expand_input reads one input per copy", "[ensemble]") {
  torch::nn::Sequential net(torch::nn::Linear(1, 1), torch::nn::ReLU(), torch::nn::Linear(1, 1));
  tnn::TensorDictModule module(net, {"bork"}, {"dork"});
  tnn::TensorDictModule next_module(
      torch::nn::Sequential(torch::nn::Linear(1, 1), torch::nn::ReLU(), torch::nn::Linear(1, 1)), {"dork"}, {"spork"});
  tnn::EnsembleModule e0(module, 4, {.expand_input = true});
  tnn::EnsembleModule e1(next_module, 4, {.expand_input = false});
  CHECK_FALSE(e1->expand_input());
  tnn::TensorDictSequential seq({e0, e1});
  torch::manual_seed(1);
  TensorDict td({{"bork", torch::randn({5, 1})}}, {5});
  TensorDict out = seq(td);
  for (const char* key : {"dork", "spork"}) {
    CHECK(out.get(key).sizes() == at::IntArrayRef({4, 5, 1}));
  }
  CHECK(all_differ(out.get("dork")));
  // copy i of e1 reads copy i of e0's output
  const TensorDict params = e1->params_td()->tensordict();
  for (int64_t i = 0; i < 4; ++i) {
    TensorDict one({{"dork", out.get("dork")[i]}}, {5});
    auto guard = tnn::to_module(next_module, params.index({i}));
    CHECK(torch::allclose(next_module(one).get("spork"), out.get("spork")[i]));
  }
  // a first dim that is not the copy dim
  CHECK(message_of([&] { e1(TensorDict({{"dork", torch::zeros({5, 1})}}, {5})); }) ==
        "EnsembleModule: without expand_input the input's first batch dim is the copy dim: it must be 4, got batch "
        "size [5]");
  CHECK_THROWS_AS(e1(TensorDict({{"dork", torch::zeros({5, 1})}}, {5})), tensordict::ValueError);
}

// ports test_nn.py::TestEnsembleModule::test_reset_once
TEST_CASE("EnsembleModule calls reset_parameters once per copy", "[ensemble]") {
  CountingLinear lin;
  tnn::TensorDictModule module(torch::nn::Sequential(lin), {"a"}, {"b"});
  tnn::EnsembleModule mod(module, 2);
  CHECK(lin->calls == 2);
  CHECK(lin->weight.item<float>() == 0.0f);  // the module's own weight is left alone
  CHECK(all_differ(mod->params_td()->get({"module", "0", "weight"})));
  // reset_parameters_recursive on the ensemble's parameters: once more per copy
  const at::Tensor before = mod->params_td()->get({"module", "0", "weight"}).clone();
  mod->reset_parameters_recursive(mod->params_td()->tensordict());
  CHECK(lin->calls == 4);
  CHECK(all_differ(torch::cat({before, mod->params_td()->get({"module", "0", "weight"})})));
}

TEST_CASE("reset_parameters_recursive resets libtorch layers, deepest first", "[ensemble][params]") {
  auto net = std::make_shared<torch::nn::Module>();
  net->register_module("linear", torch::nn::Linear(2, 2));
  auto inner = net->register_module("inner", std::make_shared<torch::nn::Module>());
  inner->register_module("conv", torch::nn::Conv1d(1, 1, 2));
  inner->register_module("norm", torch::nn::LayerNorm(torch::nn::LayerNormOptions({2})));
  torch::NoGradGuard no_grad;
  for (auto& p : net->parameters()) p.fill_(3.0);
  CHECK(tnn::reset_parameters_recursive(*net));
  const auto named = net->named_parameters();
  CHECK_FALSE(named["linear.weight"].eq(3.0).all().item<bool>());
  CHECK_FALSE(named["inner.conv.weight"].eq(3.0).all().item<bool>());
  CHECK(named["inner.norm.weight"].eq(1.0).all().item<bool>());  // LayerNorm: ones, zeros
  CHECK(named["inner.norm.bias"].eq(0.0).all().item<bool>());
  CHECK_FALSE(tnn::reset_parameters_recursive(torch::nn::Sequential(torch::nn::ReLU())));
}

TEST_CASE("EnsembleModule: gradients reach the copies and the input", "[ensemble][training]") {
  torch::manual_seed(2);
  tnn::TensorDictModule module(torch::nn::Linear(3, 2), {"x"}, {"y"});
  tnn::EnsembleModule mod(module, 3);
  const at::Tensor x = torch::randn({4, 3}, torch::requires_grad());
  TensorDict out = mod(TensorDict({{"x", x}}, {4}));
  (out.get("y") * out.get("y")).sum().backward();

  // the same computation, one tensor per copy
  const at::Tensor w = mod->params_td()->get({"module", "weight"}).detach().clone().requires_grad_();
  const at::Tensor b = mod->params_td()->get({"module", "bias"}).detach().clone().requires_grad_();
  const at::Tensor x2 = x.detach().clone().requires_grad_();
  at::Tensor loss = torch::zeros({});
  for (int64_t i = 0; i < 3; ++i) {
    const at::Tensor y = torch::matmul(x2, w[i].t()) + b[i];
    loss = loss + (y * y).sum();
  }
  loss.backward();
  CHECK(torch::allclose(mod->params_td()->get({"module", "weight"}).grad(), w.grad()));
  CHECK(torch::allclose(mod->params_td()->get({"module", "bias"}).grad(), b.grad()));
  CHECK(torch::allclose(x.grad(), x2.grad()));
  CHECK_FALSE(module->parameters()[0].grad().defined());  // the module's own get none

  // an optimizer over parameters() trains the copies
  const at::Tensor before = mod->params_td()->get({"module", "weight"}).detach().clone();
  torch::optim::SGD opt(mod->parameters(), torch::optim::SGDOptions(0.1));
  opt.step();
  CHECK(torch::allclose(mod->params_td()->get({"module", "weight"}), before - 0.1 * w.grad()));
}

// The copies draw dropout masks in the forward; the backward must see the
// same masks (the copies replay the generators' states, CUDA's included).
void check_ensemble_dropout_backward(const at::Device& device) {
  torch::manual_seed(3);
  torch::nn::Sequential layers(torch::nn::Linear(3, 8), torch::nn::Dropout(0.5));
  layers->to(device);
  tnn::TensorDictModule module(layers, {"x"}, {"y"});
  tnn::EnsembleModule mod(module, 2);
  const at::Tensor x = torch::randn({6, 3}).to(device);
  TensorDict out = mod(TensorDict({{"x", x}}, {6}));
  out.get("y").sum().backward();
  const TensorDict params = mod->params_td()->tensordict();
  for (int64_t i = 0; i < 2; ++i) {
    // d sum(dropout(h)) / dh = mask / (1 - p), the mask where the output is not 0
    const at::Tensor scale = out.get("y")[i].detach().ne(0).to(torch::kFloat) * 2;
    CHECK(scale.eq(0).any().item<bool>());
    CHECK(torch::allclose(params.get({"module", "0", "weight"}).grad()[i], torch::matmul(scale.t(), x)));
    CHECK(torch::allclose(params.get({"module", "0", "bias"}).grad()[i], scale.sum(0)));
  }
}

TEST_CASE("EnsembleModule: the backward sees the forward's random draws", "[ensemble][training]") {
  check_ensemble_dropout_backward(at::Device(at::kCPU));
  if (at::hasCUDA()) check_ensemble_dropout_backward(at::Device(at::kCUDA, 0));
}

TEST_CASE("EnsembleModule: the backward leaves the buffers as the forward left them", "[ensemble][training]") {
  torch::manual_seed(4);
  tnn::TensorDictModule module(torch::nn::Sequential(torch::nn::Linear(3, 4), torch::nn::BatchNorm1d(4)), {"x"},
                               {"y"});
  tnn::EnsembleModule mod(module, 2);
  const at::Tensor x = torch::randn({6, 3});
  TensorDict out = mod(TensorDict({{"x", x}}, {6}));
  const TensorDict params = mod->params_td()->tensordict();
  // BatchNorm's update of each copy: 0.9 * 0 + 0.1 * the batch mean of its Linear's output
  for (int64_t i = 0; i < 2; ++i) {
    const at::Tensor h = torch::matmul(x, params.get({"module", "0", "weight"})[i].t()) +
                         params.get({"module", "0", "bias"})[i];
    CHECK(torch::allclose(params.get({"module", "1", "running_mean"})[i], 0.1 * h.mean(0)));
  }
  const at::Tensor running_mean = params.get({"module", "1", "running_mean"}).detach().clone();
  const at::Tensor tracked = params.get({"module", "1", "num_batches_tracked"}).clone();
  CHECK(torch::equal(tracked, torch::ones({2}, torch::kLong)));
  out.get("y").pow(2).sum().backward();
  CHECK(torch::equal(params.get({"module", "1", "running_mean"}), running_mean));
  CHECK(torch::equal(params.get({"module", "1", "num_batches_tracked"}), tracked));
  CHECK(params.get({"module", "0", "weight"}).grad().defined());
}

TEST_CASE("EnsembleModule without gradients, into an output tensordict, repr", "[ensemble]") {
  tnn::TensorDictModule module(torch::nn::Linear(2, 1), {"x"}, {"y"});
  tnn::EnsembleModule mod(module, 2);
  CHECK(mod->num_copies() == 2);
  CHECK(mod->module() == module.ptr());
  TensorDict input({{"x", torch::ones({3, 2})}}, {3});
  TensorDict out;
  {
    torch::NoGradGuard no_grad;
    const TensorDict returned = mod->forward(input, out);
    CHECK(returned.impl() == out.impl());
  }
  CHECK(out.get("y").sizes() == at::IntArrayRef({2, 3, 1}));
  CHECK_FALSE(out.get("y").requires_grad());
  std::ostringstream os;
  os << *mod;
  CHECK(os.str().rfind("EnsembleModule(\n    module=TensorDictModule(", 0) == 0);
  CHECK(os.str().find("    params_td=TensorDictParams(params=TensorDict(") != std::string::npos);
  CHECK(os.str().find("    in_keys=['x'],\n    out_keys=['y'])") != std::string::npos);
}

TEST_CASE("EnsembleModule errors", "[ensemble][errors]") {
  tnn::TensorDictModule module(torch::nn::Linear(2, 1), {"x"}, {"y"});
  CHECK(message_of([&] { tnn::EnsembleModule(module, 0); }) == "EnsembleModule: num_copies must be at least 1, got 0");
  CHECK_THROWS_AS(tnn::EnsembleModule(module, 0), tensordict::ValueError);
  const std::shared_ptr<tnn::TensorDictModuleImpl> null;
  CHECK(message_of([&] { tnn::EnsembleModule(null, 2); }) == "EnsembleModule: the module is null");
  // the module's own errors come through
  tnn::EnsembleModule mod(module, 2);
  CHECK_THROWS_AS(mod(TensorDict({{"z", torch::ones({3, 2})}}, {3})), KeyError);
}
