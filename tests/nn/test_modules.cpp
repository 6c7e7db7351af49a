// TensorDictModule, TensorDictSequential, parameters as a TensorDict.
#include <catch2/catch.hpp>
#include <torch/torch.h>

#include <cstdio>
#include <filesystem>
#include <tensordict/nn.h>

#include "../message_of.h"

using tensordict::KeyError;
using tensordict::NestedKey;
using tensordict::TensorDict;
using tensordict::TensorDict;
namespace tnn = tensordict::nn;
using Catch::Matchers::Contains;
using td_test::message_of;

namespace {
at::Tensor identity(const at::Tensor& x) { return x; }

}  // namespace

TEST_CASE("TensorDictModule wraps a torch module and writes out_keys", "[module]") {
  torch::manual_seed(0);
  torch::nn::Linear linear(3, 4);
  tnn::TensorDictModule module(linear, {"x"}, {"y"});
  TensorDict td({{"x", torch::randn({5, 3})}}, {5});
  TensorDict out = module(td);
  CHECK(out.impl() == td.impl());  // written into the input
  REQUIRE(td.contains("y"));
  CHECK(td.get("y").sizes() == at::IntArrayRef{5, 4});
  CHECK(torch::allclose(td.get("y"), linear(td.get("x"))));

  // a proper torch::nn::Module: parameters are the Linear's, named under "module"
  auto named = module->named_parameters();
  CHECK(named.size() == 2);
  CHECK(named.contains("module.weight"));
  CHECK(named["module.weight"].is_same(linear->weight));
  module->eval();
  CHECK_FALSE(linear->is_training());
  module->train();
  CHECK(linear->is_training());
  module->to(torch::kDouble);
  CHECK(linear->weight.scalar_type() == torch::kDouble);
}

TEST_CASE("TensorDictModule writes into a given output tensordict", "[module]") {
  tnn::TensorDictModule module([](const at::Tensor& x) { return x + 1; }, {"x"}, {"y"});
  TensorDict td({{"x", torch::zeros({2})}}, {2});
  TensorDict dest({}, {2});
  TensorDict out = module->forward(td, dest);
  CHECK(out.impl() == dest.impl());
  CHECK(dest.contains("y"));
  CHECK_FALSE(td.contains("y"));
}

TEST_CASE("TensorDictModule wraps functions with several inputs and outputs, nested keys", "[module]") {
  tnn::TensorDictModule module([](const at::Tensor& x) { return std::make_tuple(x - 1, x + 1); }, {{"input", "x"}},
                               {{"output", "x-1"}, {"output", "x+1"}});
  TensorDict td({{{"input", "x"}, torch::zeros({})}}, {});
  module(td);
  CHECK(td.get({"output", "x-1"}).item<float>() == -1.0f);
  CHECK(td.get({"output", "x+1"}).item<float>() == 1.0f);

  tnn::TensorDictModule add([](const at::Tensor& a, const at::Tensor& b) { return a + b; }, {"a", "b"}, {"c"});
  TensorDict td2({{"a", torch::ones({3})}, {"b", torch::ones({3})}}, {3});
  add(td2);
  CHECK(td2.get("c").sum().item<float>() == 6.0f);

  // "_" discards an output; a function of no input populates a tensordict
  tnn::TensorDictModule drop([](const at::Tensor& a) { return std::vector<at::Tensor>{a, a * 2}; }, {"a"}, {"_", "d"});
  drop(td2);
  CHECK_FALSE(td2.contains("_"));
  CHECK(td2.contains("d"));
  tnn::TensorDictModule make([] { return torch::randn({3}); }, {}, {"x"});
  TensorDict empty;
  make(empty);
  CHECK(empty.get("x").sizes() == at::IntArrayRef{3});
}

TEST_CASE("TensorDictModule wraps an AnyModule and a module returning a tuple", "[module]") {
  tnn::TensorDictModule module(torch::nn::AnyModule(tnn::NormalParamExtractor()), {"p"}, {"loc", "scale"});
  TensorDict td({{"p", torch::randn({4, 6})}}, {4});
  module(td);
  CHECK(td.get("loc").sizes() == at::IntArrayRef{4, 3});
  CHECK((td.get("scale") > 0).all().item<bool>());

  torch::nn::GRUCell gru(4, 8);
  tnn::TensorDictModule cell(gru, {"input", "hidden"}, {"output"});
  TensorDict td2({{"input", torch::randn({3, 4})}, {"hidden", torch::randn({3, 8})}}, {3});
  cell(td2);
  CHECK(td2.get("output").sizes() == at::IntArrayRef{3, 8});
}

TEST_CASE("TensorDictModule errors name the module and the keys", "[module][errors]") {
  // strict: the missing key is reported before the call. The default
  // (strict=false, tensordict's) passes an undefined tensor and reports the
  // failed call (test_module_inputs.cpp).
  tnn::TensorDictModule module([](const at::Tensor& a, const at::Tensor& b) { return a + b; },
                               {"a", {"nested", "b"}}, {"c"}, tnn::TensorDictModuleOptions{.strict = true});
  TensorDict td({{"a", torch::ones({3})}}, {3});
  CHECK_THROWS_AS(module(td), KeyError);
  const std::string msg = message_of([&] { module(td); });
  CHECK_THAT(msg, Contains("TensorDictModule"));
  CHECK_THAT(msg, Contains("input key(s) [('nested', 'b')] not found"));

  tnn::TensorDictModule two([](const at::Tensor& a) { return a; }, {"a"}, {"x", "y"});
  const std::string count = message_of([&] { two(td); });
  CHECK_THAT(count, Contains("returned 1 tensor(s)"));
  CHECK_THAT(count, Contains("expects 2"));
  CHECK_THROWS_AS(two(td), std::runtime_error);
}

TEST_CASE("TensorDictModule tensor-call form (dispatch)", "[module]") {
  tnn::TensorDictModule module([](const at::Tensor& a, const at::Tensor& b) { return std::make_pair(a + 2, b + 2); },
                               {"a", "b"}, {"c", "d"});
  std::vector<at::Tensor> out = module(torch::zeros({}), torch::ones({}));
  REQUIRE(out.size() == 2);
  CHECK(out[0].item<float>() == 2.0f);
  CHECK(out[1].item<float>() == 3.0f);
  CHECK_THROWS_AS(module(torch::zeros({})), std::invalid_argument);
}

TEST_CASE("TensorDictSequential chains modules - in_keys from outside, out_keys all produced", "[sequential]") {
  torch::manual_seed(0);
  tnn::TensorDictSequential seq({
      tnn::TensorDictModule([](const at::Tensor& x) { return x + 1; }, {"x"}, {"x+1"}),
      tnn::TensorDictModule(torch::nn::Linear(3, 4), {"x+1"}, {"w*(x+1)+b"}),
  });
  CHECK(seq->in_keys() == tnn::Keys{"x"});
  CHECK(seq->out_keys() == tnn::Keys{"x+1", "w*(x+1)+b"});
  TensorDict td({{"x", torch::zeros({3})}}, {});
  seq(td);
  CHECK(td.contains("w*(x+1)+b"));
  CHECK(seq->parameters().size() == 2);
  CHECK(seq->named_parameters().contains("module.1.module.weight"));

  auto out = seq(torch::zeros({3}));
  REQUIRE(out.size() == 2);
  CHECK(torch::allclose(out[0], torch::ones({3})));
}

TEST_CASE("TensorDictSequential: missing keys and partial tolerance", "[sequential][errors]") {
  auto make = [](bool tolerant) {
    return tnn::TensorDictSequential({tnn::TensorDictModule(identity, {"a"}, {"b"}),
                                      tnn::TensorDictModule(identity, {"z"}, {"y"}),
                                      tnn::TensorDictModule(identity, {"b"}, {"c"})},
                                     {.partial_tolerant = tolerant});
  };
  TensorDict td({{"a", torch::ones({2})}}, {2});
  const std::string msg = message_of([&] { make(false)(td.clone()); });
  CHECK(msg ==
        "Some tensors that are necessary for the module call may not have not been found in the input tensordict: "
        "the following inputs are None: {'z'}.\n"
        "Failed while executing module '1'.");
  auto tolerant = make(true);
  TensorDict copy(td.clone());
  tolerant(copy);
  CHECK(copy.contains("c"));
  CHECK_FALSE(copy.contains("y"));
}

TEST_CASE("TensorDictSequential notes which module failed and keeps the error's kind",
          "[sequential][errors][sequence.py:TensorDictSequential.forward add_note]") {
  auto bad_value = [](const at::Tensor&) -> at::Tensor { throw std::invalid_argument("bad value"); };
  TensorDict td({{"a", torch::ones({2})}}, {2});
  tnn::TensorDictSequential seq({tnn::TensorDictModule(identity, {"a"}, {"b"}), tnn::TensorDictModule(bad_value, {"b"}, {"c"})});
  CHECK(message_of([&] { seq(td.clone()); }) == "bad value\nFailed while executing module '1'.");
  CHECK_THROWS_AS(seq(td.clone()), std::invalid_argument);
  // A named sequence names the module.
  tnn::TensorDictSequential named(tnn::NamedModules{{"first", tnn::TensorDictModule(identity, {"a"}, {"b"})},
                                                    {"second", tnn::TensorDictModule(bad_value, {"b"}, {"c"})}});
  CHECK(message_of([&] { named(td.clone()); }) == "bad value\nFailed while executing module 'second'.");
  // libtorch's error: a std::runtime_error without libtorch's backtrace.
  tnn::TensorDictSequential shapes({tnn::TensorDictModule(torch::nn::Linear(3, 4), {"a"}, {"b"})});
  CHECK_THROWS_AS(shapes(td.clone()), std::runtime_error);
  const std::string msg = message_of([&] { shapes(td.clone()); });
  CHECK_THAT(msg, Contains("Failed while executing module '0'."));
  CHECK_THAT(msg, !Contains("Exception raised from"));
  // Nested sequences: each level adds its note, inner first (as Python's notes).
  tnn::TensorDictSequential outer({tnn::TensorDictModule(identity, {"a"}, {"z"}), seq});
  CHECK(message_of([&] { outer(td.clone()); }) ==
        "bad value\nFailed while executing module '1'.\nFailed while executing module '1'.");
}

TEST_CASE("select_subsequence on the branching example", "[sequential]") {
  tnn::TensorDictSequential module({
      tnn::TensorDictModule(identity, {"a"}, {"b"}),
      tnn::TensorDictModule(identity, {"b"}, {"c"}),
      tnn::TensorDictModule(identity, {"c"}, {"d"}),
      tnn::TensorDictModule(identity, {"a"}, {"e"}),
  });
  CHECK(module->in_keys() == tnn::Keys{"a"});
  CHECK(module->out_keys() == tnn::Keys{"b", "c", "d", "e"});

  auto all = module->select_subsequence(tnn::Keys{"a"});
  CHECK(all->size() == 4);
  CHECK(all->out_keys() == tnn::Keys{"b", "c", "d", "e"});

  auto from_c = module->select_subsequence(tnn::Keys{"c"});
  REQUIRE(from_c->size() == 1);
  CHECK(from_c->in_keys() == tnn::Keys{"c"});
  CHECK(from_c->out_keys() == tnn::Keys{"d"});

  auto to_c = module->select_subsequence(std::nullopt, tnn::Keys{"c"});
  REQUIRE(to_c->size() == 2);
  CHECK(to_c->in_keys() == tnn::Keys{"a"});
  CHECK(to_c->out_keys() == tnn::Keys{"b", "c"});
  CHECK((*to_c)[0].get() == module[0].get());  // the same module objects

  auto to_e = module->select_subsequence(std::nullopt, tnn::Keys{"e"});
  REQUIRE(to_e->size() == 1);
  CHECK(to_e->in_keys() == tnn::Keys{"a"});
  CHECK(to_e->out_keys() == tnn::Keys{"e"});

  CHECK_THROWS_WITH(module->select_subsequence(tnn::Keys{"e"}), Contains("No modules left after selection"));
  CHECK_THROWS_AS(module->select_subsequence(tnn::Keys{"c"}, tnn::Keys{"b"}), std::invalid_argument);

  TensorDict td({{"c", torch::ones({})}}, {});
  from_c(td);
  CHECK(td.contains("d"));
}

TEST_CASE("select_subsequence propagates to nested sequences", "[sequential]") {
  tnn::TensorDictSequential module({
      tnn::TensorDictSequential({tnn::TensorDictModule(identity, {"a"}, {"b"}),
                                 tnn::TensorDictModule(identity, {"b"}, {"c"})}),
      tnn::TensorDictSequential({tnn::TensorDictModule(identity, {"b"}, {"d"}),
                                 tnn::TensorDictModule(identity, {"d"}, {"e"})}),
  });
  auto sub = module->select_subsequence(tnn::Keys{"b", "d"}, tnn::Keys{"e"});
  REQUIRE(sub->size() == 1);
  CHECK(sub->in_keys() == tnn::Keys{"b"});
  CHECK(sub->out_keys() == tnn::Keys{"d", "e"});
  auto inner = std::dynamic_pointer_cast<tnn::TensorDictSequentialImpl>((*sub)[0]);
  REQUIRE(inner);
  CHECK(inner->size() == 2);
}

TEST_CASE("Reprs read like tensordict's", "[repr]") {
  tnn::TensorDictModule mod(identity, {"a"}, {{"b", "c"}}, "identity");
  CHECK(mod->repr() ==
        "TensorDictModule(\n"
        "    module=identity,\n"
        "    device=cpu,\n"
        "    in_keys=['a'],\n"
        "    out_keys=[('b', 'c')])");
  tnn::TensorDictSequential seq({mod});
  CHECK(seq->repr() ==
        "TensorDictSequential(\n"
        "    module=ModuleList(\n"
        "      (0): TensorDictModule(\n"
        "          module=identity,\n"
        "          device=cpu,\n"
        "          in_keys=['a'],\n"
        "          out_keys=[('b', 'c')])\n"
        "    ),\n"
        "    device=cpu,\n"
        "    in_keys=['a'],\n"
        "    out_keys=[('b', 'c')])");
  tnn::TensorDictModule lin(torch::nn::Linear(3, 4), {"x"}, {"y"});
  std::ostringstream os;
  os << lin;
  CHECK_THAT(os.str(), Contains("module=Linear(in_features=3, out_features=4, bias=true)"));
}

TEST_CASE("from_module / to_module round trip", "[params]") {
  torch::manual_seed(0);
  torch::nn::Sequential net(torch::nn::Linear(3, 4), torch::nn::ReLU(), torch::nn::BatchNorm1d(4));
  TensorDict params = tnn::from_module(net);
  CHECK(params.batch_size().empty());
  CHECK(params.contains({"0", "weight"}));
  CHECK(params.contains({"0", "bias"}));
  CHECK_FALSE(params.contains("1"));  // ReLU has none
  CHECK(params.contains({"2", "running_mean"}));  // buffers too
  CHECK(params.get({"0", "weight"}).is_same(net[0]->as<torch::nn::Linear>()->weight));

  tnn::TensorDictModule module(net, {"x"}, {"y"});
  TensorDict mp = tnn::from_module(module);
  CHECK(mp.contains({"module", "0", "weight"}));

  net->eval();
  auto x = torch::randn({5, 3});
  const auto before = net->forward(x).clone();
  TensorDict zeros(params.clone());
  zeros.zero_();
  const auto original_weight = net[0]->as<torch::nn::Linear>()->weight.clone();
  {
    auto guard = tnn::to_module(net, zeros);
    CHECK(net[0]->as<torch::nn::Linear>()->weight.abs().sum().item<float>() == 0.0f);
    // zero weights, zero bias -> relu(0) = 0 -> batchnorm with zero mean/var stats
    const auto y = net->forward(x);
    CHECK_FALSE(torch::allclose(y, before));
  }
  CHECK(torch::equal(net[0]->as<torch::nn::Linear>()->weight, original_weight));
  CHECK(torch::allclose(net->forward(x), before));
  // the td's own tensors were not touched by the swap
  CHECK(params.get({"0", "weight"}).is_same(net[0]->as<torch::nn::Linear>()->weight));

  // round trip: the values from one module swapped into another reproduce it
  torch::nn::Sequential other(torch::nn::Linear(3, 4), torch::nn::ReLU(), torch::nn::BatchNorm1d(4));
  other->eval();
  {
    auto guard = tnn::to_module(other, params);
    CHECK(torch::allclose(other->forward(x), before));
  }
  CHECK_FALSE(torch::allclose(other->forward(x), before));

  TensorDict bad({{"nope", torch::zeros({1})}}, {});
  CHECK_THROWS_AS(tnn::to_module(net, bad), KeyError);
  CHECK_THROWS_WITH(tnn::to_module(net, bad), Contains("nope"));
}

TEST_CASE("from_modules stacks parameters - ensemble_forward loops over models", "[params]") {
  torch::manual_seed(0);
  std::vector<torch::nn::Linear> models{torch::nn::Linear(3, 2), torch::nn::Linear(3, 2), torch::nn::Linear(3, 2)};
  TensorDict stacked = tnn::from_modules(models);
  CHECK(stacked.batch_size() == at::IntArrayRef{3});
  CHECK(stacked.get("weight").sizes() == at::IntArrayRef{3, 2, 3});
  CHECK(stacked.get("weight").is_leaf());
  CHECK(stacked.get("weight").requires_grad());

  tnn::TensorDictModule module(torch::nn::Linear(3, 2), {"x"}, {"y"});
  TensorDict input({{"x", torch::randn({5, 3})}}, {5});
  TensorDict params(stacked.clone());
  TensorDict module_params({{"module", params}}, {3});
  TensorDict out = tnn::ensemble_forward(module, module_params, input);
  CHECK(out.batch_size() == at::IntArrayRef{3, 5});
  for (int i = 0; i < 3; ++i) {
    CHECK(torch::allclose(out.get("y")[i], models[static_cast<std::size_t>(i)](input.get("x"))));
  }
  CHECK_FALSE(input.contains("y"));
}

TEST_CASE("torch::save of a TensorDictModule's parameters", "[module]") {
  torch::manual_seed(0);
  tnn::TensorDictSequential seq({tnn::TensorDictModule(torch::nn::Linear(3, 4), {"x"}, {"h"}),
                                 tnn::TensorDictModule(torch::nn::Linear(4, 1), {"h"}, {"y"})});
  const auto path = (std::filesystem::temp_directory_path() / "tensorclass_nn_save.pt").string();
  torch::save(seq, path);
  tnn::TensorDictSequential other({tnn::TensorDictModule(torch::nn::Linear(3, 4), {"x"}, {"h"}),
                                   tnn::TensorDictModule(torch::nn::Linear(4, 1), {"h"}, {"y"})});
  torch::load(other, path);
  std::remove(path.c_str());
  CHECK(tnn::from_module(other).allclose(tnn::from_module(seq)));
}

TEST_CASE("A short training loop decreases the loss", "[training]") {
  torch::manual_seed(0);
  tnn::TensorDictSequential model({
      tnn::TensorDictModule(torch::nn::Linear(2, 16), {"x"}, {"h"}),
      tnn::TensorDictModule([](const at::Tensor& h) { return torch::tanh(h); }, {"h"}, {"h"}),
      tnn::TensorDictModule(torch::nn::Linear(16, 1), {"h"}, {"pred"}),
  });
  auto x = torch::randn({64, 2});
  auto target = (x.select(1, 0) * 2 - x.select(1, 1)).unsqueeze(-1);
  TensorDict data({{"x", x}, {"target", target}}, {64});
  torch::optim::Adam opt(model->parameters(), torch::optim::AdamOptions(0.05));
  auto loss_of = [&] {
    TensorDict td(data.clone({.recurse = false}));
    model(td);
    return torch::mse_loss(td.get("pred"), td.get("target"));
  };
  const float first = loss_of().item<float>();
  for (int step = 0; step < 100; ++step) {
    opt.zero_grad();
    auto loss = loss_of();
    loss.backward();
    opt.step();
  }
  const float last = loss_of().item<float>();
  CHECK(last < 0.1f * first);
}

// The nn tour of docs/nn.md, compiled and run here (and by the doc-block test).
TEST_CASE("README nn tour", "[readme]") {
  namespace nn = tensordict::nn;
  torch::manual_seed(0);
  nn::ProbabilisticTensorDictSequential policy({
      nn::TensorDictModule(torch::nn::Linear(4, 6), {"obs"}, {"params"}),
      nn::TensorDictModule(nn::NormalParamExtractor(), {"params"}, {"loc", "scale"}),
      nn::ProbabilisticTensorDictModule(nn::Keys{"loc", "scale"}, {"action"},
                                        nn::ProbabilisticOptions{.distribution = nn::TanhNormal::cls(), .return_log_prob = true}),
  });
  TensorDict td({{"obs", torch::randn({8, 4})}}, {8});
  {
    nn::InteractionTypeGuard random(nn::InteractionType::RANDOM);  // with set_interaction_type(RANDOM):
    policy(td);  // writes params, loc, scale, action, action_log_prob
  }
  auto dist = policy->get_dist(td);                                       // TanhNormal(loc: ..., scale: ...)
  auto only_loc = policy->select_subsequence(std::nullopt, nn::Keys{"loc"});  // Linear + extractor
  TensorDict params = nn::from_module(policy);                            // {"module": {"0": {"module": {...}}}}
  {
    auto swapped = nn::to_module(policy, params.clone().apply([](const at::Tensor& t) { return t.detach() * 0; }));
    policy(td);  // runs with zeroed weights; the originals come back at scope exit
  }
  std::cout << policy << "\n";  // tensordict's repr

  CHECK(td.contains("action_log_prob"));
  CHECK(only_loc->size() == 2);
  CHECK(params.contains({"module", "0", "module", "weight"}));
  CHECK(dist->name() == "TanhNormal");
}
