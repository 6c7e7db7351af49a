// TensorDictParams: a tensordict's leaves as a module's parameters and
// buffers.
#include <sstream>

#include "nn_test.h"

namespace {

// tensordict's TestTensorDictParams._get_params: Sequential(Linear(3, 4),
// Linear(4, 4)), its parameters locked.
std::pair<torch::nn::Sequential, TensorDict> linear_params() {
  torch::nn::Sequential module(torch::nn::Linear(3, 4), torch::nn::Linear(4, 4));
  TensorDict params = tnn::from_module(module);
  params.lock_();
  return {module, params};
}

// tensordict's CustomModule: holds the TensorDictParams as "params".
struct CustomModuleImpl : torch::nn::Module {
  explicit CustomModuleImpl(tnn::TensorDictParams p) : params(register_module("params", std::move(p))) {}
  tnn::TensorDictParams params;
};
TORCH_MODULE(CustomModule);

// tensordict's MyModule of test_constructors.
struct ParamsAndBuffersImpl : torch::nn::Module {
  ParamsAndBuffersImpl() {
    register_parameter("param", torch::randn({3}));
    register_buffer("buf", torch::randn({3}));
    register_buffer("buf_int", torch::randint(3, {}));
  }
};
TORCH_MODULE(ParamsAndBuffers);

std::vector<std::string> param_names(const torch::nn::Module& m) { return m.named_parameters().keys(); }
std::vector<std::string> buffer_names(const torch::nn::Module& m) { return m.named_buffers().keys(); }

}  // namespace

// ports test_nn.py::TestTensorDictParams::test_td_params
TEST_CASE("TensorDictParams registers the leaves, nested keys joined with '.'", "[tdparams]") {
  auto [net, params] = linear_params();
  tnn::TensorDictParams p(params);
  CustomModule m(p);
  CHECK(param_names(*m) ==
        std::vector<std::string>{"params.0.weight", "params.0.bias", "params.1.weight", "params.1.bias"});
  // the registered tensors are the tensordict's leaves, which are the module's
  const auto named = m->named_parameters();
  CHECK(named["params.0.weight"].is_same(params.get({"0", "weight"})));
  CHECK(named["params.1.bias"].is_same(params.get({"1", "bias"})));
  CHECK(p->get({"0", "weight"}).is_same(net[0]->as<torch::nn::Linear>()->weight));
  CHECK(p->tensordict().impl() == params.impl());
  CHECK(p->tensordict().is_locked());

  // assignment: the value becomes a parameter, the lock stays
  m->params->set("other", torch::randn({3}));
  CHECK(m->params->get("other").requires_grad());
  CHECK(m->named_parameters()["params.other"].is_same(m->params->get("other")));
  CHECK(params.is_locked());
  m->params->del_("other");
  CHECK_FALSE(params.contains("other"));
  CHECK(param_names(*m).size() == 4);
  CHECK(m->params->get({"0", "weight"}).requires_grad());
}

// ports test_nn.py::TestTensorDictParams::test_constructors
TEST_CASE("TensorDictParams: float tensors become parameters, the rest buffers, no_convert keeps buffers",
          "[tdparams]") {
  tnn::TensorDictParams td(tnn::from_module(ParamsAndBuffers()));
  CHECK(param_names(*td) == std::vector<std::string>{"param", "buf"});
  CHECK(buffer_names(*td) == std::vector<std::string>{"buf_int"});
  CHECK(td->get("buf").requires_grad());
  CHECK(td->get("buf").is_leaf());

  tnn::TensorDictParams kept(tnn::from_module(ParamsAndBuffers()), {.no_convert = true});
  CHECK(kept->no_convert());
  CHECK(param_names(*kept) == std::vector<std::string>{"param"});
  CHECK(buffer_names(*kept) == std::vector<std::string>{"buf", "buf_int"});
  CHECK_FALSE(kept->get("buf").requires_grad());

  // TensorDictParams({"a": 0, "b": 1.0})
  tnn::TensorDictParams scalars(TensorDict({{"a", torch::tensor(0)}, {"b", torch::tensor(1.0)}}, {}));
  CHECK(buffer_names(*scalars) == std::vector<std::string>{"a"});
  CHECK(param_names(*scalars) == std::vector<std::string>{"b"});
}

TEST_CASE("TensorDictParams converts a float buffer on its storage", "[tdparams]") {
  ParamsAndBuffers module;
  tnn::TensorDictParams td(tnn::from_module(module));
  // nn.Parameter(t): a new leaf on the same storage
  const at::Tensor buf = module->named_buffers()["buf"];
  CHECK_FALSE(td->get("buf").is_same(buf));
  CHECK(td->get("buf").data_ptr() == buf.data_ptr());
  CHECK_FALSE(buf.requires_grad());
}

// ports test_nn.py::TestTensorDictParams::test_td_params_cast
TEST_CASE("TensorDictParams: Module::to changes the tensordict's leaves", "[tdparams]") {
  auto [net, params] = linear_params();
  CustomModule m{tnn::TensorDictParams(params)};
  for (const auto dtype : {torch::kHalf, torch::kDouble, torch::kFloat}) {
    m->to(dtype);
    for (const auto& value : params.values({.include_nested = true, .leaves_only = true})) {
      CHECK(value.tensor().scalar_type() == dtype);
    }
  }
}

// ports test_nn.py::TestTensorDictParams::test_load_state_dict
TEST_CASE("TensorDictParams: torch::load writes into the same tensors", "[tdparams]") {
  auto [net, params] = linear_params();
  CustomModule module{tnn::TensorDictParams(params)};
  std::vector<at::Tensor> before;
  for (const auto& v : params.values({.include_nested = true, .leaves_only = true})) before.push_back(v.tensor());

  CustomModule zeros{tnn::TensorDictParams(linear_params().second)};
  {
    torch::NoGradGuard no_grad;
    zeros->params->tensordict().zero_();
  }
  std::stringstream stream;
  torch::save(zeros, stream);
  torch::load(module, stream);
  std::size_t i = 0;
  for (const auto& v : params.values({.include_nested = true, .leaves_only = true})) {
    CHECK(v.tensor().is_same(before[i++]));
    CHECK(v.tensor().eq(0).all().item<bool>());
  }
}

// ports test_nn.py::TestTensorDictParams::test_inplace_ops
TEST_CASE("TensorDictParams: in-place ops on the tensordict reach the parameters", "[tdparams]") {
  TensorDict td({{"a", TensorDict({{"b", TensorDict({{"c", torch::zeros({}).requires_grad_()}}, {})},
                                   {"d", torch::zeros({}).requires_grad_()}},
                                  {})},
                 {"e", torch::zeros({}).requires_grad_()}},
                {});
  tnn::TensorDictParams param_td(td);
  CHECK(param_names(*param_td) == std::vector<std::string>{"e", "a.d", "a.b.c"});
  torch::NoGradGuard no_grad;
  param_td->tensordict().apply_([](const at::Tensor& t) { return t + 1; });
  for (const auto& p : param_td->parameters()) CHECK(p.item<float>() == 1.0f);
  param_td->tensordict().zero_();
  for (const auto& p : param_td->parameters()) CHECK(p.item<float>() == 0.0f);
}

TEST_CASE("TensorDictParams: an optimizer over parameters() updates the tensordict", "[tdparams][training]") {
  TensorDict td({{"w", torch::ones({2})}, {"n", TensorDict({{"v", torch::full({3}, 2.0)}}, {})}}, {});
  tnn::TensorDictParams p(td);
  torch::optim::SGD opt(p->parameters(), torch::optim::SGDOptions(0.5));
  const at::Tensor loss = p->get("w").sum() + (p->get({"n", "v"}) * p->get({"n", "v"})).sum();
  loss.backward();
  opt.step();
  // w - 0.5 * 1, v - 0.5 * 2 v
  CHECK(torch::equal(td.get("w"), torch::full({2}, 0.5)));
  CHECK(torch::equal(td.get({"n", "v"}), torch::full({3}, 0.0)));
}

TEST_CASE("TensorDictParams: set and del_ keep the registration in step", "[tdparams]") {
  tnn::TensorDictParams p(TensorDict({{"a", torch::zeros({2})}, {"i", torch::zeros({2}, torch::kLong)}}, {}));
  // a new nested level
  p->set({"x", "y"}, torch::ones({1}));
  CHECK(param_names(*p) == std::vector<std::string>{"a", "x.y"});
  // a parameter replaced by a buffer and back by a new parameter
  p->set("a", torch::ones({2}, torch::kLong));
  CHECK(param_names(*p) == std::vector<std::string>{"x.y"});
  CHECK(buffer_names(*p) == std::vector<std::string>{"i", "a"});
  // a buffer replaced by a buffer: the registered tensor takes the values
  const at::Tensor registered = p->named_buffers()["i"];
  p->set("i", torch::full({2}, 7, torch::kLong));
  CHECK(p->get("i").is_same(registered));
  CHECK(torch::equal(registered, torch::full({2}, 7, torch::kLong)));
  // a level replaced by a tensor, a tensor by a level
  p->set("x", torch::zeros({4}));
  CHECK(param_names(*p) == std::vector<std::string>{"x"});
  p->set("x", TensorDict({{"z", torch::zeros({1})}, {"k", torch::zeros({1}, torch::kInt)}}, {}));
  CHECK(param_names(*p) == std::vector<std::string>{"x.z"});
  CHECK(buffer_names(*p) == std::vector<std::string>{"i", "a", "x.k"});
  p->del_("x");
  CHECK(param_names(*p).empty());
  CHECK(buffer_names(*p) == std::vector<std::string>{"i", "a"});
  // the lock option locks the tensordict; writes through the module still work
  tnn::TensorDictParams locked(TensorDict({{"a", torch::zeros({2})}}, {}), {.lock = true});
  CHECK(locked->tensordict().is_locked());
  locked->set({"b", "c"}, torch::ones({1}));
  CHECK(locked->tensordict().is_locked());
  CHECK(param_names(*locked) == std::vector<std::string>{"a", "b.c"});
  std::ostringstream os;
  os << *locked;
  CHECK(os.str().rfind("TensorDictParams(params=TensorDict(", 0) == 0);
}

TEST_CASE("TensorDictParams errors", "[tdparams][errors]") {
  CHECK(message_of([] { tnn::TensorDictParams(TensorDict({{"a.b", torch::zeros({1})}}, {})); }) ==
        "TensorDictParams: key a.b cannot name a parameter: libtorch's parameter names are not empty and hold no '.'");
  CHECK_THROWS_AS(tnn::TensorDictParams(TensorDict({{"a.b", torch::zeros({1})}}, {})), tensordict::ValueError);
  const TensorDict stack = tensordict::lazy_stack({TensorDict({{"a", torch::zeros({1})}}, {}),
                                                   TensorDict({{"a", torch::zeros({1})}}, {})});
  CHECK(message_of([&] { tnn::TensorDictParams{stack}; }) ==
        "TensorDictParams wraps a TensorDict, got a LazyStackedTensorDict (convert it with to_tensordict())");
  CHECK_THROWS_AS(tnn::TensorDictParams{stack}, tensordict::TypeError);

  TensorDict td({{"i", torch::zeros({2}, torch::kLong)}, {"n", TensorDict({{"j", torch::zeros({1}, torch::kLong)}}, {})}},
                {});
  tnn::TensorDictParams p(td);
  const auto buffer_message = [](const std::string& key) {
    return "TensorDictParams: " + key +
           " is registered as a buffer, which a libtorch module cannot unregister: it can only be set to another "
           "buffer";
  };
  CHECK(message_of([&] { p->set("i", torch::zeros({2})); }) == buffer_message("i"));
  CHECK_THROWS_AS(p->set("i", torch::zeros({2})), tensordict::TypeError);
  CHECK(message_of([&] { p->del_({"n", "j"}); }) == buffer_message("('n', 'j')"));
  CHECK(message_of([&] { p->set({"i", "x"}, torch::zeros({2})); }) == buffer_message("i"));
  CHECK(message_of([&] { p->set("i", TensorDict()); }) == buffer_message("i"));
  // nothing changed
  CHECK(td.get("i").scalar_type() == torch::kLong);
  CHECK(td.contains({"n", "j"}));
  CHECK(buffer_names(*p) == std::vector<std::string>{"i", "n.j"});
  CHECK(message_of([&] { p->del_("missing"); }) == "TensorDictParams: key missing not found");
  CHECK_THROWS_AS(p->del_("missing"), KeyError);
  CHECK(message_of([&] { p->set({"q", "a.b"}, torch::zeros({2})); }) ==
        "TensorDictParams: key ('q', 'a.b') cannot name a parameter: libtorch's parameter names are not empty and "
        "hold no '.'");
  CHECK_FALSE(td.contains("q"));
}
