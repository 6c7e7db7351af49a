// Distributions, interaction types, probabilistic modules.
#include <catch2/catch.hpp>
#include <torch/torch.h>

#include <tensordict/nn.h>
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <optional>
#include <string>
#include <thread>

using tensordict::KeyError;
using tensordict::TensorDict;
namespace tnn = tensordict::nn;
using tnn::InteractionType;
using Catch::Matchers::Contains;

namespace {
const double kLog2Pi = std::log(2.0 * M_PI);

double normal_lp(double x, double loc, double scale) {
  const double z = (x - loc) / scale;
  return -0.5 * z * z - std::log(scale) - 0.5 * kLog2Pi;
}
}  // namespace

TEST_CASE("Normal: log_prob, entropy, moments against closed forms", "[distributions]") {
  tnn::Normal d(torch::tensor({0.5, -1.0}, torch::kDouble), torch::tensor({2.0, 0.3}, torch::kDouble));
  CHECK(d.batch_shape() == std::vector<int64_t>{2});
  auto lp = d.log_prob(torch::tensor({1.3, -1.2}, torch::kDouble));
  CHECK(lp[0].item<double>() == Approx(normal_lp(1.3, 0.5, 2.0)).epsilon(1e-12));
  CHECK(lp[1].item<double>() == Approx(normal_lp(-1.2, -1.0, 0.3)).epsilon(1e-12));
  auto h = d.entropy();
  CHECK(h[0].item<double>() == Approx(0.5 + 0.5 * kLog2Pi + std::log(2.0)).epsilon(1e-12));
  CHECK(torch::equal(d.mode(), d.loc()));
  CHECK(d.sample({7}).sizes() == at::IntArrayRef{7, 2});
  CHECK(d.repr() == "Normal(loc: torch.Size([2]), scale: torch.Size([2]))");
}

TEST_CASE("TanhNormal: log_prob with the stable tanh correction", "[distributions]") {
  auto loc = torch::tensor({{0.3, -0.2}}, torch::kDouble);
  auto scale = torch::tensor({{0.7, 1.1}}, torch::kDouble);
  tnn::TanhNormal d(loc, scale);
  CHECK(d.batch_shape() == std::vector<int64_t>{1});
  CHECK(d.event_shape() == std::vector<int64_t>{2});
  const double y0 = 0.4, y1 = -0.9;
  // closed form: N(atanh y) / (1 - y^2), independent over the event dim
  const double expected = normal_lp(std::atanh(y0), 0.3, 0.7) - std::log(1 - y0 * y0) +
                          normal_lp(std::atanh(y1), -0.2, 1.1) - std::log(1 - y1 * y1);
  auto lp = d.log_prob(torch::tensor({{y0, y1}}, torch::kDouble));
  CHECK(lp.sizes() == at::IntArrayRef{1});
  CHECK(lp.item<double>() == Approx(expected).epsilon(1e-10));
  CHECK(std::isfinite(d.log_prob(torch::tensor({{1.0, -1.0}}, torch::kDouble)).item<double>()));

  // on (low, high) = (-2, 4): y = 1 + 3 tanh(x), density divided by 3
  tnn::TanhNormal wide(loc, scale, tnn::TanhNormal::Options{.low = -2.0, .high = 4.0});
  const double w0 = 1 + 3 * y0, w1 = 1 + 3 * y1;
  auto lpw = wide.log_prob(torch::tensor({{w0, w1}}, torch::kDouble));
  CHECK(lpw.item<double>() == Approx(expected - 2 * std::log(3.0)).epsilon(1e-10));
  CHECK(torch::allclose(wide.mode(), 1 + 3 * loc.tanh()));
  CHECK_THROWS_AS(d.mean(), tnn::NotImplementedError);
}

TEST_CASE("Categorical and OneHotCategorical: log_softmax log_prob, entropy, sampling", "[distributions]") {
  auto logits = torch::tensor({{1.0, 2.0, 0.5}, {0.0, 0.0, 3.0}}, torch::kDouble);
  tnn::Categorical c(logits);
  auto v = torch::tensor({1, 2});
  auto lp = c.log_prob(v);
  auto ls = torch::log_softmax(logits, -1);
  CHECK(lp[0].item<double>() == Approx(ls[0][1].item<double>()));
  CHECK(lp[1].item<double>() == Approx(ls[1][2].item<double>()));
  auto p = ls.exp();
  CHECK(torch::allclose(c.entropy(), -(p * ls).sum(-1)));
  CHECK(torch::equal(c.mode(), torch::tensor({1, 2})));
  CHECK(c.sample({4}).sizes() == at::IntArrayRef{4, 2});

  tnn::Categorical from_probs(torch::tensor({0.2, 0.8}), {.probs = true});
  CHECK(from_probs.log_prob(torch::tensor(1)).item<float>() == Approx(std::log(0.8)));

  tnn::OneHotCategorical oh(logits);
  CHECK(oh.event_shape() == std::vector<int64_t>{3});
  auto s = oh.sample({5});
  CHECK(s.sizes() == at::IntArrayRef{5, 2, 3});
  CHECK(torch::allclose(s.sum(-1), torch::ones({5, 2}, torch::kDouble)));
  CHECK(torch::allclose(oh.log_prob(torch::one_hot(v, 3)), lp));
  CHECK(torch::equal(oh.mode().argmax(-1), c.mode()));
  CHECK(torch::allclose(oh.mean(), p));
  // Each one-hot component is a Bernoulli(p): variance p (1 - p).
  CHECK(torch::allclose(oh.stddev(), (p - p * p).sqrt()));
  CHECK(torch::allclose(oh.entropy(), c.entropy()));
  // Categorical samples indices: its mean and stddev are not defined.
  CHECK_THROWS_WITH(c.stddev(), "Categorical.stddev is not implemented");

  // sampling frequencies: N = 20000, standard error sqrt(p(1-p)/N) <= 0.0036; 5 SE
  torch::manual_seed(1);
  tnn::Categorical freq(torch::tensor({0.2, 0.5, 0.3}), {.probs = true});
  auto draws = freq.sample({20000});
  auto counts = torch::bincount(draws, {}, 3).to(torch::kDouble) / 20000.0;
  CHECK(torch::allclose(counts, torch::tensor({0.2, 0.5, 0.3}, torch::kDouble), 0, 0.018));
}

TEST_CASE("Delta: point mass", "[distributions]") {
  tnn::Delta d(torch::tensor({{1.0, 2.0}, {3.0, 4.0}}));
  CHECK(d.batch_shape() == std::vector<int64_t>{2});
  auto lp = d.log_prob(torch::tensor({{1.0, 2.0}, {3.0, 5.0}}));
  CHECK(lp[0].item<float>() == 0.0f);
  CHECK(std::isinf(lp[1].item<float>()));
  CHECK(d.rsample({3}).sizes() == at::IntArrayRef{3, 2, 2});
}

TEST_CASE("rsample carries gradients to the parameters", "[distributions][autograd]") {
  auto loc = torch::zeros({3}, torch::requires_grad());
  auto scale = torch::ones({3}, torch::requires_grad());
  tnn::Normal d(loc, scale);
  d.rsample({100}).sum().backward();
  REQUIRE(loc.grad().defined());
  CHECK(torch::allclose(loc.grad(), torch::full({3}, 100.0f)));
  REQUIRE(scale.grad().defined());
  CHECK_FALSE(d.sample().requires_grad());

  auto loc2 = torch::zeros({2}, torch::requires_grad());
  tnn::TanhNormal t(loc2, torch::ones({2}));
  t.rsample({50}).sum().backward();
  REQUIRE(loc2.grad().defined());
  CHECK((loc2.grad() > 0).all().item<bool>());  // d tanh(x)/dx > 0

  // and through the module's log-prob (a policy-gradient style loss)
  auto lin = torch::nn::Linear(2, 4);
  tnn::ProbabilisticTensorDictSequential policy({
      tnn::TensorDictModule(lin, {"obs"}, {"params"}),
      tnn::TensorDictModule(tnn::NormalParamExtractor(), {"params"}, {"loc", "scale"}),
      tnn::ProbabilisticTensorDictModule(tnn::Keys{"loc", "scale"}, {"action"},
                                         tnn::ProbabilisticOptions{.distribution = tnn::Normal::cls(), .default_interaction_type = InteractionType::RANDOM, .return_log_prob = true}),
  });
  TensorDict td({{"obs", torch::randn({8, 2})}}, {8});
  policy(td);
  CHECK(td.get("action").requires_grad());
  (td.get("action").sum() + td.get("action_log_prob").sum()).backward();
  CHECK(lin->weight.grad().defined());
}

TEST_CASE("InteractionType guard is RAII, nestable and thread-local", "[interaction]") {
  CHECK_FALSE(tnn::interaction_type().has_value());
  {
    tnn::set_interaction_type outer(InteractionType::RANDOM);
    CHECK(tnn::interaction_type() == InteractionType::RANDOM);
    {
      tnn::InteractionTypeGuard inner(InteractionType::MEAN);
      CHECK(tnn::interaction_type() == InteractionType::MEAN);
      std::optional<InteractionType> seen = InteractionType::MODE;
      std::thread([&] { seen = tnn::interaction_type(); }).join();
      CHECK_FALSE(seen.has_value());
    }
    CHECK(tnn::interaction_type() == InteractionType::RANDOM);
  }
  CHECK_FALSE(tnn::interaction_type().has_value());
  CHECK(tnn::interaction_type_from_str("median") == InteractionType::MEDIAN);
  CHECK_THROWS_AS(tnn::interaction_type_from_str("foo"), std::invalid_argument);
}

TEST_CASE("ProbabilisticTensorDictModule under each interaction type", "[probabilistic]") {
  const int64_t n = 10000;
  const double mu = 1.5, sigma = 0.5;
  TensorDict td({{"loc", torch::full({n}, mu, torch::kDouble)}, {"scale", torch::full({n}, sigma, torch::kDouble)}},
                {n});
  tnn::ProbabilisticTensorDictModule module(tnn::Keys{"loc", "scale"}, {"x"},
                                            tnn::ProbabilisticOptions{.distribution = tnn::Normal::cls(), .return_log_prob = true});
  CHECK(module->out_keys() == tnn::Keys{"x", "x_log_prob"});

  // default: MODE
  module(td);
  CHECK(torch::allclose(td.get("x"), td.get("loc")));
  for (auto type : {InteractionType::MODE, InteractionType::MEDIAN, InteractionType::MEAN}) {
    tnn::InteractionTypeGuard guard(type);
    module(td);
    CHECK(torch::allclose(td.get("x"), td.get("loc")));
  }
  {
    torch::manual_seed(0);
    tnn::InteractionTypeGuard guard(InteractionType::RANDOM);
    module(td);
    auto x = td.get("x");
    // N = 10000: the mean's standard error is sigma/100 = 0.005, the std's about
    // sigma/sqrt(2N) = 0.0035; both checked at ~4 standard errors.
    CHECK(x.mean().item<double>() == Approx(mu).margin(0.02));
    CHECK(x.std().item<double>() == Approx(sigma).margin(0.015));
    // log-prob values are the closed form at the drawn samples
    auto expected = -0.5 * ((x - mu) / sigma).pow(2) - std::log(sigma) - 0.5 * kLog2Pi;
    CHECK(torch::allclose(td.get("x_log_prob"), expected));
  }

  // TanhNormal: MODE/MEDIAN = tanh(loc); MEAN has no closed form: estimated
  // from n_empirical_estimate samples.
  tnn::ProbabilisticTensorDictModule tanh_module(
      tnn::Keys{"loc", "scale"}, {"y"},
      tnn::ProbabilisticOptions{.distribution = tnn::TanhNormal::cls(), .n_empirical_estimate = 4000});
  TensorDict small({{"loc", torch::full({1, 1}, 0.5, torch::kDouble)}, {"scale", torch::full({1, 1}, 0.8, torch::kDouble)}},
                   {1});
  tanh_module(small);
  CHECK(small.get("y").item<double>() == Approx(std::tanh(0.5)));
  {
    tnn::InteractionTypeGuard guard(InteractionType::MEDIAN);
    tanh_module(small);
    CHECK(small.get("y").item<double>() == Approx(std::tanh(0.5)));
  }
  {
    torch::manual_seed(0);
    tnn::InteractionTypeGuard guard(InteractionType::MEAN);
    tanh_module(small);
    // reference: E[tanh(X)] from 400000 draws; the 4000-sample estimate has a
    // standard error below 0.6/sqrt(4000) ~ 0.01.
    auto ref = torch::tanh(0.5 + 0.8 * torch::randn({400000}, torch::kDouble)).mean().item<double>();
    CHECK(small.get("y").item<double>() == Approx(ref).margin(0.04));
    CHECK(ref < std::tanh(0.5));  // the mean is not the mode
  }
  {
    torch::manual_seed(0);
    tnn::InteractionTypeGuard guard(InteractionType::RANDOM);
    TensorDict many({{"loc", torch::zeros({n, 1}, torch::kDouble)}, {"scale", torch::ones({n, 1}, torch::kDouble)}},
                    {n});
    tanh_module(many);
    auto y = many.get("y");
    CHECK((y.abs() < 1).all().item<bool>());
    CHECK(y.mean().item<double>() == Approx(0.0).margin(0.03));  // symmetric; sd(tanh X) ~ 0.63
  }

  // Categorical under MEAN: no closed-form mean -> sample average (1000 draws)
  tnn::ProbabilisticTensorDictModule cat(tnn::Keys{"logits"}, {"a"}, tnn::ProbabilisticOptions{.distribution = tnn::Categorical::cls()});
  TensorDict logits({{"logits", torch::tensor({{std::log(0.2), std::log(0.5), std::log(0.3)}})}}, {1});
  cat(logits);
  CHECK(logits.get("a").item<int64_t>() == 1);
  {
    torch::manual_seed(0);
    tnn::InteractionTypeGuard guard(InteractionType::MEAN);
    cat(logits);
    // E = 1.1, var 0.49: the 1000-sample mean has standard error 0.022
    CHECK(logits.get("a").item<float>() == Approx(1.1).margin(0.09));
  }
}

TEST_CASE("ProbabilisticTensorDictModule errors", "[probabilistic][errors]") {
  tnn::ProbabilisticTensorDictModule module({{"loc", {"params", "loc"}}, {"scale", "scale"}}, {"x"},
                                            tnn::ProbabilisticOptions{.distribution = tnn::Normal::cls()});
  CHECK(module->in_keys() == tnn::Keys{{"params", "loc"}, "scale"});
  TensorDict td({{"scale", torch::ones({2})}}, {2});
  CHECK_THROWS_AS(module(td), KeyError);
  CHECK_THROWS_WITH(module(td), Contains("('params', 'loc')"));
  tnn::ProbabilisticTensorDictModule wrong(tnn::Keys{"mu", "scale"}, {"x"}, tnn::ProbabilisticOptions{.distribution = tnn::Normal::cls()});
  TensorDict td2({{"mu", torch::ones({2})}, {"scale", torch::ones({2})}}, {2});
  CHECK_THROWS_WITH(wrong(td2), Contains("Normal expects the parameter(s) loc, scale"));
  CHECK_THROWS_AS(tnn::ProbabilisticTensorDictSequential({tnn::TensorDictModule(
                      [](const at::Tensor& x) { return x; }, {"a"}, {"b"})}),
                  std::invalid_argument);
}

TEST_CASE("ProbabilisticTensorDictSequential with NormalParamExtractor", "[probabilistic]") {
  torch::manual_seed(0);
  tnn::ProbabilisticTensorDictSequential seq({
      tnn::TensorDictModule(torch::nn::Linear(4, 8), {"input"}, {"params"}),
      tnn::TensorDictModule(tnn::NormalParamExtractor(), {"params"}, {"loc", "scale"}),
      tnn::ProbabilisticTensorDictModule(tnn::Keys{"loc", "scale"}, {"hidden"},
                                         tnn::ProbabilisticOptions{.distribution = tnn::Normal::cls(), .return_log_prob = true}),
  });
  CHECK(seq->in_keys() == tnn::Keys{"input"});
  CHECK(seq->out_keys() == tnn::Keys{"params", "loc", "scale", "hidden", "hidden_log_prob"});
  TensorDict td({{"input", torch::randn({3, 4})}}, {3});
  seq(td);
  for (const char* key : {"params", "loc", "scale", "hidden", "hidden_log_prob"}) CHECK(td.contains(key));
  CHECK(torch::allclose(td.get("hidden"), td.get("loc")));  // default MODE
  auto dist = seq->get_dist(td);
  CHECK(dist->repr() == "Normal(loc: torch.Size([3, 4]), scale: torch.Size([3, 4]))");
  CHECK(seq->parameters().size() == 2);

  // the value already produced upstream is kept; only its log-prob is computed
  tnn::ProbabilisticTensorDictSequential given({
      tnn::TensorDictModule([](const at::Tensor& x) { return std::make_tuple(x, x.abs() + 1, x * 0 + 7); }, {"input"},
                            {"loc", "scale", "hidden"}),
      tnn::ProbabilisticTensorDictModule(tnn::Keys{"loc", "scale"}, {"hidden"},
                                         tnn::ProbabilisticOptions{.distribution = tnn::Normal::cls(), .return_log_prob = true}),
  });
  TensorDict td2({{"input", torch::randn({3, 4})}}, {3});
  given(td2);
  CHECK(torch::allclose(td2.get("hidden"), torch::full({3, 4}, 7.0f)));
  CHECK(torch::allclose(td2.get("hidden_log_prob"),
                        tnn::Normal(td2.get("loc"), td2.get("scale")).log_prob(td2.get("hidden"))));
}

TEST_CASE("NormalParamExtractor and biased_softplus", "[distributions]") {
  // biased_softplus maps 0 to the bias and stays above min_val
  auto y = tnn::biased_softplus(torch::tensor({0.0, -100.0}, torch::kDouble), 1.0, 0.01);
  CHECK(y[0].item<double>() == Approx(1.0));
  CHECK(y[1].item<double>() == Approx(0.01));
  CHECK(tnn::inv_softplus(std::log1p(std::exp(0.7))) == Approx(0.7));
  tnn::NormalParamExtractor ex;
  auto [loc, scale] = ex(torch::zeros({2, 6}));
  CHECK(loc.sizes() == at::IntArrayRef{2, 3});
  CHECK(torch::allclose(scale, torch::ones({2, 3})));
  tnn::NormalParamExtractor exp_ex("exp", 0.5);
  auto [l2, s2] = exp_ex(torch::full({4}, -10.0));
  CHECK(torch::allclose(s2, torch::full({2}, 0.5)));
  CHECK_THROWS_AS(tnn::NormalParamExtractor("nope"), std::invalid_argument);
  CHECK_THROWS_AS(ex(torch::zeros({3})), std::invalid_argument);
}

// ---- log-probability keys, composite_lp_aggregate, num_samples ----------------------

namespace {
using tensordict::NestedKey;
using tnn::CompositeLpAggregateGuard;
using tnn::LpAggregate;
using tnn::Keys;
using tnn::ProbabilisticOptions;
using tnn::ProbabilisticTensorDictModule;

// A Normal module of loc and scale (tensordict's tests pass scale as a
// distribution kwarg; here it is an input).
ProbabilisticTensorDictModule normal_module(Keys out_keys, ProbabilisticOptions options = {}) {
  options.distribution = tnn::Normal::cls();
  return ProbabilisticTensorDictModule(Keys{"loc", "scale"}, std::move(out_keys), std::move(options));
}

// The message of the RuntimeError that log_prob_key(s) raise once
// composite_lp_aggregate() changed (tensordict's, verbatim).
std::string changed_message(bool now, bool at_init, const char* property) {
  return std::string("composite_lp_aggregate is set to `") + (now ? "True" : "False") +
         "`, but the class was instantiated with `" + (at_init ? "True" : "False") + "` which may affect the " +
         property + " property.";
}

const char* const kClashPrefix =
    "A custom log-probability key cannot be a sample key, lie inside one or hold one, since writing the "
    "log-probability would overwrite the sample. Got ";
}  // namespace

TEST_CASE("composite_lp_aggregate is false by default, the guard sets it for the whole process and restores it",
          "[probabilistic][lp_aggregate]") {
  CHECK_FALSE(tnn::composite_lp_aggregate());
  {
    tnn::set_composite_lp_aggregate outer;  // true, as tensordict's default mode
    CHECK(tnn::composite_lp_aggregate());
    // process-wide, as in tensordict: another thread sees it
    bool seen = false;
    std::thread([&] { seen = tnn::composite_lp_aggregate(); }).join();
    CHECK(seen);
    {
      CompositeLpAggregateGuard inner(LpAggregate::PerComponent);
      CHECK_FALSE(tnn::composite_lp_aggregate());
    }
    CHECK(tnn::composite_lp_aggregate());
  }
  CHECK_FALSE(tnn::composite_lp_aggregate());
}

// Run by the next case in a child process with COMPOSITE_LP_AGGREGATE set:
// the variable is read once, the first time the value is needed.
TEST_CASE("COMPOSITE_LP_AGGREGATE in the environment (child process)", "[.][lp_aggregate_env]") {
  const char* env = std::getenv("COMPOSITE_LP_AGGREGATE");
  REQUIRE(env != nullptr);
  if (std::string(env) == "bogus") {
    CHECK_THROWS_AS(tnn::composite_lp_aggregate(), tensordict::ValueError);
    CHECK_THROWS_WITH(tnn::composite_lp_aggregate(), "invalid truth value 'bogus'");
    // A guard needs the current value too.
    CHECK_THROWS_WITH(CompositeLpAggregateGuard(LpAggregate::PerComponent), "invalid truth value 'bogus'");
  } else {
    CHECK(tnn::composite_lp_aggregate() == (std::string(env) == "On"));
    auto module = normal_module({"action"}, {.return_log_prob = true});
    CHECK(module->log_prob_key() == NestedKey(tnn::composite_lp_aggregate() ? "sample_log_prob" : "action_log_prob"));
  }
}

TEST_CASE("COMPOSITE_LP_AGGREGATE sets the default as tensordict's _strtobool reads it",
          "[probabilistic][lp_aggregate]") {
  // The suite's own executable, filtered to the case above.
  const std::string exe = std::filesystem::read_symlink("/proc/self/exe").string();
  for (const char* value : {"On", "0", "bogus"}) {
    INFO("COMPOSITE_LP_AGGREGATE=" << value);
    const std::string cmd =
        std::string("COMPOSITE_LP_AGGREGATE=") + value + " '" + exe + "' '[lp_aggregate_env]' > /dev/null 2>&1";
    CHECK(std::system(cmd.c_str()) == 0);
  }
}

TEST_CASE("The default log-probability key of a sampled key is <key>_log_prob, on a nested key's last part",
          "[probabilistic][lp_aggregate]") {
  auto module = ProbabilisticTensorDictModule(Keys{"loc", "scale"}, {{"agent", "action"}},
                                              {.distribution = tnn::Normal::cls(), .return_log_prob = true});
  CHECK(module->log_prob_key() == NestedKey{"agent", "action_log_prob"});
  CHECK(module->log_prob_keys() == Keys{{"agent", "action_log_prob"}});
  CHECK(module->out_keys() == Keys{{"agent", "action"}, {"agent", "action_log_prob"}});
  CHECK(module->dist_sample_keys() == Keys{{"agent", "action"}});
  CHECK(module->dist_params_keys() == Keys{"loc", "scale"});
  TensorDict td(
      {{"loc", torch::tensor({0.5, -1.0}, torch::kDouble)}, {"scale", torch::tensor({2.0, 0.5}, torch::kDouble)}}, {2});
  module(td);
  REQUIRE(td.contains({"agent", "action_log_prob"}));
  CHECK_FALSE(td.contains("sample_log_prob"));
  // MODE: the value is loc, its log-probability -log(scale) - log(2 pi)/2
  CHECK(td.get({"agent", "action_log_prob"})[0].item<double>() == Approx(normal_lp(0.5, 0.5, 2.0)));
  CHECK(td.get({"agent", "action_log_prob"})[1].item<double>() == Approx(normal_lp(-1.0, -1.0, 0.5)));

  // Without return_log_prob the key is known, but not written.
  auto quiet = normal_module({"action"});
  CHECK(quiet->log_prob_key() == NestedKey("action_log_prob"));
  CHECK(quiet->out_keys() == Keys{"action"});
}

TEST_CASE("With set_composite_lp_aggregate(true) the log-probability goes to sample_log_prob",
          "[probabilistic][lp_aggregate]") {
  CompositeLpAggregateGuard aggregate(LpAggregate::Aggregate);
  auto module = ProbabilisticTensorDictModule(Keys{"loc", "scale"}, {{"agent", "action"}},
                                              {.distribution = tnn::Normal::cls(), .return_log_prob = true});
  CHECK(module->log_prob_key() == NestedKey("sample_log_prob"));
  CHECK(module->log_prob_keys() == Keys{"sample_log_prob"});
  CHECK(module->out_keys() == Keys{{"agent", "action"}, "sample_log_prob"});
  TensorDict td({{"loc", torch::zeros({3})}, {"scale", torch::ones({3})}}, {3});
  module(td);
  REQUIRE(td.contains("sample_log_prob"));
  CHECK_FALSE(td.contains({"agent", "action_log_prob"}));
  CHECK(torch::allclose(td.get("sample_log_prob"), torch::full({3}, normal_lp(0, 0, 1), torch::kFloat)));

  // The same in a sequence: the sequence follows its last module.
  tnn::ProbabilisticTensorDictSequential seq({
      tnn::TensorDictModule([](const at::Tensor& x) { return std::make_tuple(x, torch::ones_like(x)); }, {"obs"},
                            {"loc", "scale"}),
      normal_module({"action"}, {.return_log_prob = true}),
  });
  CHECK(seq->log_prob_key() == NestedKey("sample_log_prob"));
  CHECK(seq->out_keys() == Keys{"loc", "scale", "action", "sample_log_prob"});
  TensorDict obs({{"obs", torch::zeros({2})}}, {2});
  seq(obs);
  CHECK(obs.contains("sample_log_prob"));
}

TEST_CASE(
    "log_prob_key, log_prob_keys and out_keys by composite_lp_aggregate at construction "
    "(test_nn.py::TestCompositeDist::test_set_composite_lp_aggregate_build_and_get)",
    "[probabilistic][lp_aggregate][test_nn.py]") {
  // The Python test builds a CompositeDistribution of two keys; the keys'
  // rules are those of any module with two sampled keys.
  const Keys samples{"cont", {"nested", "disc"}};
  for (const bool mode : {true, false}) {
    INFO("built with composite_lp_aggregate " << mode);
    std::optional<ProbabilisticTensorDictModule> p;
    {
      CompositeLpAggregateGuard build(mode ? LpAggregate::Aggregate : LpAggregate::PerComponent);
      p.emplace(normal_module(samples, {.return_log_prob = true}));
      if (mode) {
        CHECK((*p)->log_prob_key() == NestedKey("sample_log_prob"));
      } else {
        CHECK((*p)->log_prob_keys() == Keys{"cont_log_prob", {"nested", "disc_log_prob"}});
      }
    }
    const auto& m = **p;
    if (mode) {
      CompositeLpAggregateGuard same(LpAggregate::Aggregate);
      CHECK(m.out_keys() == Keys{"cont", {"nested", "disc"}, "sample_log_prob"});
      CHECK(m.log_prob_key() == NestedKey("sample_log_prob"));
      CHECK(m.log_prob_keys() == Keys{"sample_log_prob"});
      CompositeLpAggregateGuard changed(LpAggregate::PerComponent);
      CHECK_THROWS_AS(m.log_prob_key(), tensordict::RuntimeError);
      CHECK_THROWS_WITH(m.log_prob_key(), changed_message(false, true, "log_prob_key"));
      CHECK_THROWS_WITH(m.log_prob_keys(), changed_message(false, true, "log_prob_keys"));
    } else {
      CompositeLpAggregateGuard same(LpAggregate::PerComponent);
      CHECK(m.out_keys() == Keys{"cont", {"nested", "disc"}, "cont_log_prob", {"nested", "disc_log_prob"}});
      CHECK_THROWS_AS(m.log_prob_key(), tensordict::RuntimeError);
      CHECK_THROWS_WITH(m.log_prob_key(),
                        "composite_lp_aggregate is set to ``False``, hence ProbabilisticTensorDictModule.log_prob_key "
                        "cannot be accessed unless there is one and only one element in log_prob_keys (got "
                        "log_prob_keys=['cont_log_prob', ('nested', 'disc_log_prob')]). When composite_lp_aggregate() "
                        "returns ``False``, try to use ProbabilisticTensorDictModule.log_prob_keys instead.");
      CHECK(m.log_prob_keys() == Keys{"cont_log_prob", {"nested", "disc_log_prob"}});
      CompositeLpAggregateGuard changed(LpAggregate::Aggregate);
      CHECK_THROWS_WITH(m.log_prob_key(), changed_message(true, false, "log_prob_key"));
      CHECK_THROWS_WITH(m.log_prob_keys(), changed_message(true, false, "log_prob_keys"));
    }
  }
}

TEST_CASE("A call with return_log_prob after composite_lp_aggregate changed is a RuntimeError, nothing written",
          "[probabilistic][lp_aggregate][errors]") {
  auto module = normal_module({"action"}, {.return_log_prob = true});
  TensorDict td({{"loc", torch::zeros({2})}, {"scale", torch::ones({2})}}, {2});
  CompositeLpAggregateGuard changed(LpAggregate::Aggregate);
  CHECK_THROWS_AS(module(td), tensordict::RuntimeError);
  CHECK_THROWS_WITH(module(td), changed_message(true, false, "log_prob_key"));
  CHECK_FALSE(td.contains("action"));
  // Without the log-probability the keys do not matter.
  auto plain = normal_module({"action"});
  plain(td);
  CHECK(td.contains("action"));
}

TEST_CASE("log_prob_keys while composite_lp_aggregate is true, log_prob_key with several sampled keys while false",
          "[probabilistic][lp_aggregate][errors]") {
  {
    CompositeLpAggregateGuard aggregate(LpAggregate::Aggregate);
    CHECK_THROWS_AS(normal_module({"a"}, {.log_prob_keys = Keys{"lp"}}), tensordict::RuntimeError);
    CHECK_THROWS_WITH(normal_module({"a"}, {.log_prob_keys = Keys{"lp"}}),
                      "composite_lp_aggregate is set to True but log_prob_keys were passed. When "
                      "composite_lp_aggregate() returns ``True``, log_prob_key must be used instead.");
    // log_prob_key names the sum of several keys
    auto summed = normal_module({"a", "b"}, {.return_log_prob = true, .log_prob_key = "lp"});
    CHECK(summed->log_prob_key() == NestedKey("lp"));
    CHECK(summed->log_prob_keys() == Keys{"lp"});
    CHECK(summed->out_keys() == Keys{"a", "b", "lp"});
  }
  CHECK_THROWS_AS(normal_module({"a", "b"}, {.log_prob_key = "lp"}), tensordict::RuntimeError);
  CHECK_THROWS_WITH(normal_module({"a", "b"}, {.log_prob_key = "lp"}),
                    "composite_lp_aggregate is set to `False` but a `log_prob_key` was passed. When "
                    "composite_lp_aggregate() returns ``False``, log_prob_keys must be used instead.");
  // with one sampled key, log_prob_key is fine
  CHECK(normal_module({"a"}, {.log_prob_key = "lp"})->log_prob_keys() == Keys{"lp"});
}

TEST_CASE("Custom log_prob_keys: one per sampled key, written where asked", "[probabilistic][lp_aggregate]") {
  auto module = normal_module({"a", "b"}, {.return_log_prob = true, .log_prob_keys = Keys{"la", {"n", "lb"}}});
  CHECK(module->log_prob_keys() == Keys{"la", {"n", "lb"}});
  CHECK(module->out_keys() == Keys{"a", "b", "la", {"n", "lb"}});
  CHECK(module->dist_sample_keys() == Keys{"a", "b"});
  auto one = normal_module({"a"}, {.return_log_prob = true, .log_prob_keys = Keys{{"n", "lp"}}});
  CHECK(one->log_prob_key() == NestedKey{"n", "lp"});
  TensorDict td({{"loc", torch::full({2}, 1.0, torch::kDouble)}, {"scale", torch::full({2}, 3.0, torch::kDouble)}},
                {2});
  one(td);
  REQUIRE(td.contains({"n", "lp"}));
  CHECK_FALSE(td.contains("a_log_prob"));
  CHECK(td.get({"n", "lp"})[0].item<double>() == Approx(normal_lp(1.0, 1.0, 3.0)));
}

TEST_CASE("A custom log-probability key at, inside or holding a sampled key is a ValueError",
          "[probabilistic][lp_aggregate][errors]") {
  auto rejects = [](Keys out_keys, ProbabilisticOptions options, const std::string& got) {
    options.return_log_prob = true;
    CHECK_THROWS_AS(normal_module(out_keys, options), tensordict::ValueError);
    CHECK_THROWS_WITH(normal_module(out_keys, options), kClashPrefix + got + ".");
  };
  // Messages as tensordict 0.15.3 prints them.
  rejects({"a"}, {.log_prob_key = "a"}, "log-probability key 'a' for sample key 'a'");
  rejects({"a"}, {.log_prob_key = NestedKey{"a", "x"}}, "log-probability key ('a', 'x') for sample key 'a'");
  rejects({{"n", "s"}}, {.log_prob_key = "n"}, "log-probability key 'n' for sample key ('n', 's')");
  rejects({"a", {"b", "c"}}, {.log_prob_keys = Keys{"a", "b"}},
          "log-probability key 'a' for sample key 'a', log-probability key 'b' for sample key ('b', 'c')");
  rejects({"a", "b"}, {.log_prob_keys = Keys{"a_log_prob", {"b", "x"}}},
          "log-probability key ('b', 'x') for sample key 'b'");
  {
    CompositeLpAggregateGuard aggregate(LpAggregate::Aggregate);
    rejects({"a", "b"}, {.log_prob_key = "b"}, "log-probability key 'b' for sample key 'b'");
  }
  // Keys beside the samples are fine.
  CHECK(normal_module({{"n", "s"}}, {.return_log_prob = true, .log_prob_key = "a"})->out_keys() ==
        Keys{{"n", "s"}, "a"});
  CHECK(normal_module({"a"}, {.return_log_prob = true, .log_prob_key = NestedKey{"n", "lp"}})->out_keys() ==
        Keys{"a", {"n", "lp"}});
  // Not checked without return_log_prob (nothing is written).
  CHECK(normal_module({"a"}, {.log_prob_key = "a"})->log_prob_key() == NestedKey("a"));
  // The default keys are never a clash, as in tensordict.
  CHECK(normal_module({"sample"}, {.return_log_prob = true, .log_prob_key = "sample_log_prob"})->out_keys() ==
        Keys{"sample", "sample_log_prob"});
  CHECK(normal_module({"x_log_prob"}, {.return_log_prob = true})->out_keys() ==
        Keys{"x_log_prob", "x_log_prob_log_prob"});
}

// The log_prob_key values tensordict's nested-key tests are parametrized over.
static std::vector<std::optional<NestedKey>> nested_test_log_prob_keys() {
  return {std::nullopt, NestedKey("sample_log_prob"), NestedKey{"nested", "sample_log_prob"},
          NestedKey{"data", "sample_log_prob"}};
}

TEST_CASE(
    "Nested keys with a Delta and a log_prob_key "
    "(test_nn.py::TestProbabilisticTensorDictModule::test_nested_keys_probabilistic_delta)",
    "[probabilistic][lp_aggregate][test_nn.py]") {
  const auto lp_keys = nested_test_log_prob_keys();
  for (const auto& lp_key : lp_keys) {
    INFO("log_prob_key " << (lp_key ? lp_key->repr() : "None"));
    const ProbabilisticOptions options{.return_log_prob = true, .log_prob_key = lp_key};
    // the parameter from a list of keys, then from a map
    for (const tnn::DistributionKeys& in_keys :
         {tnn::DistributionKeys(Keys{{"data", "param"}}), tnn::DistributionKeys{{"param", {"data", "param"}}}}) {
      ProbabilisticTensorDictModule module(in_keys, {{"data", "action"}}, options);
      CHECK(module->dist_sample_keys() == Keys{{"data", "action"}});
      CHECK(module->dist_params_keys() == Keys{{"data", "param"}});
      TensorDict td({{"data", TensorDict({{"param", torch::zeros({3, 4, 1})}}, {3, 4})}}, {3});
      const TensorDict out = module(td);
      CHECK(out.get({"data", "action"}).sizes() == at::IntArrayRef{3, 4, 1});
      const NestedKey expected = lp_key.value_or(NestedKey{"data", "action_log_prob"});
      CHECK(module->log_prob_key() == expected);
      REQUIRE(out.contains(expected));
      CHECK(out.get(expected).sizes() == at::IntArrayRef{3, 4});
    }
  }
}

TEST_CASE(
    "Nested keys with a Normal and a log_prob_key "
    "(test_nn.py::TestProbabilisticTensorDictModule::test_nested_keys_probabilistic_normal)",
    "[probabilistic][lp_aggregate][test_nn.py]") {
  const auto lp_keys = nested_test_log_prob_keys();
  for (const auto& lp_key : lp_keys) {
    INFO("log_prob_key " << (lp_key ? lp_key->repr() : "None"));
    const ProbabilisticOptions options{
        .distribution = tnn::Normal::cls(), .return_log_prob = true, .log_prob_key = lp_key};
    for (const tnn::DistributionKeys& in_keys :
         {tnn::DistributionKeys(Keys{{"data", "loc"}, {"data", "scale"}}),
          tnn::DistributionKeys{{"loc", {"data", "loc"}}, {"scale", {"data", "scale"}}}}) {
      ProbabilisticTensorDictModule module(in_keys, {{"data", "action"}}, options);
      TensorDict td({{"data", TensorDict({{"loc", torch::full({3, 4, 1}, 0.25, torch::kDouble)},
                                          {"scale", torch::full({3, 4, 1}, 1.5, torch::kDouble)}},
                                         {3, 4})}},
                    {3});
      const TensorDict out = module(td);
      CHECK(out.get({"data", "action"}).sizes() == at::IntArrayRef{3, 4, 1});
      const NestedKey expected = lp_key.value_or(NestedKey{"data", "action_log_prob"});
      REQUIRE(out.contains(expected));
      CHECK(out.get(expected).sizes() == at::IntArrayRef{3, 4, 1});
      CHECK(torch::allclose(out.get(expected), torch::full({3, 4, 1}, normal_lp(0.25, 0.25, 1.5), torch::kDouble)));
    }
  }
}

TEST_CASE(
    "A single nested sampled key with log_prob_key=\"sample_log_prob\", and with the default "
    "(test_nn.py::TestProbabilisticTensorDictModule::test_no_warning_single_key)",
    "[probabilistic][lp_aggregate][test_nn.py]") {
  torch::manual_seed(0);
  TensorDict td({{"loc", torch::randn({})}, {"scale", torch::rand({}) + 0.1}}, {});
  auto mod = ProbabilisticTensorDictModule(
      Keys{"loc", "scale"}, {{"an", "action"}},
      {.distribution = tnn::Normal::cls(), .return_log_prob = true, .log_prob_key = "sample_log_prob"});
  TensorDict out = mod(TensorDict(td.clone({.recurse = false})));
  CHECK(torch::allclose(mod->log_prob(mod(TensorDict(td.clone({.recurse = false})))), out.get("sample_log_prob")));
  CHECK(mod->log_prob_key() == NestedKey("sample_log_prob"));

  auto plain = ProbabilisticTensorDictModule(Keys{"loc", "scale"}, {{"an", "action"}},
                                             {.distribution = tnn::Normal::cls(), .return_log_prob = true});
  out = plain(TensorDict(td.clone({.recurse = false})));
  CHECK(torch::allclose(plain->log_prob(out), out.get({"an", "action_log_prob"})));
  CHECK(plain->log_prob_key() == NestedKey{"an", "action_log_prob"});
}

TEST_CASE("ProbabilisticTensorDictModule::log_prob of a stored value", "[probabilistic]") {
  auto module = normal_module({"x"});
  TensorDict td({{"loc", torch::zeros({2}, torch::kDouble)},
                 {"scale", torch::full({2}, 2.0, torch::kDouble)},
                 {"x", torch::tensor({1.0, -0.5}, torch::kDouble)}},
                {2});
  const at::Tensor lp = module->log_prob(td);
  // tensordict 0.15.3 gives tensor([-1.7371, -1.6433]) here.
  CHECK(lp[0].item<double>() == Approx(normal_lp(1.0, 0.0, 2.0)));
  CHECK(lp[1].item<double>() == Approx(normal_lp(-0.5, 0.0, 2.0)));
  CHECK(lp[0].item<double>() == Approx(-1.7371).margin(1e-4));
  // with the distribution given
  tnn::Normal other(torch::ones({2}, torch::kDouble), torch::ones({2}, torch::kDouble));
  CHECK(module->log_prob(td, other)[0].item<double>() == Approx(normal_lp(1.0, 1.0, 1.0)));
  TensorDict missing({{"loc", torch::zeros({2})}, {"scale", torch::ones({2})}}, {2});
  CHECK_THROWS_AS(module->log_prob(missing), KeyError);
}

TEST_CASE(
    "num_samples adds leading dims to the output "
    "(test_nn.py::TestProbabilisticTensorDictModule::test_probabilistic_n_samples)",
    "[probabilistic][num_samples][test_nn.py]") {
  for (const bool return_log_prob : {true, false}) {
    for (const std::vector<int64_t>& num_samples : {std::vector<int64_t>{2}, std::vector<int64_t>{}}) {
      INFO("return_log_prob " << return_log_prob << ", num_samples " << num_samples.size());
      auto prob = normal_module({"sample"}, {.default_interaction_type = InteractionType::RANDOM,
                                             .return_log_prob = return_log_prob,
                                             .num_samples = num_samples});
      TensorDict td({{"loc", torch::randn({3, 4})}, {"scale", torch::ones({3, 4})}}, {3});
      td = prob(td);
      CHECK(td.contains("sample"));
      std::vector<int64_t> shape = num_samples;
      shape.push_back(3);
      CHECK(td.batch_size().vec() == shape);
      shape.push_back(4);
      CHECK(td.get("sample").sizes().vec() == shape);
      CHECK(td.contains("sample_log_prob") == return_log_prob);
      CHECK(prob->dist_sample_keys() == Keys{"sample"});
      CHECK(prob->dist_params_keys() == Keys{"loc", "scale"});
      CHECK(prob->num_samples() == num_samples);
    }
  }
}

TEST_CASE("num_samples: new draws under RANDOM, one repeated value otherwise, the input left alone",
          "[probabilistic][num_samples]") {
  torch::manual_seed(0);
  auto prob = normal_module(
      {"x"}, {.default_interaction_type = InteractionType::RANDOM, .return_log_prob = true, .num_samples = {2, 5}});
  TensorDict td({{"loc", torch::arange(3.0, torch::kDouble)}, {"scale", torch::full({3}, 0.5, torch::kDouble)}}, {3});
  const TensorDict out = prob(td);
  // a new tensordict of batch size num_samples + batch_size, the inputs expanded
  CHECK(out.impl() != td.impl());
  CHECK(out.batch_size().vec() == std::vector<int64_t>{2, 5, 3});
  CHECK(out.get("loc").sizes().vec() == std::vector<int64_t>{2, 5, 3});
  CHECK_FALSE(td.contains("x"));
  CHECK_FALSE(td.contains("x_log_prob"));
  const at::Tensor x = out.get("x");
  CHECK(x.sizes().vec() == std::vector<int64_t>{2, 5, 3});
  CHECK_FALSE(torch::equal(x[0][0], x[1][4]));  // ten draws, not one
  // the log-probability of each draw, in closed form
  const at::Tensor loc = torch::arange(3.0, torch::kDouble);
  CHECK(torch::allclose(out.get("x_log_prob"), -0.5 * ((x - loc) / 0.5).pow(2) - std::log(0.5) - 0.5 * kLog2Pi));

  // MODE: the mode, repeated (tensordict 0.15.3: x[1, 2] == [0., 1., 2.])
  {
    tnn::InteractionTypeGuard mode(InteractionType::MODE);
    const TensorDict m = prob(td);
    CHECK(torch::equal(m.get("x"), loc.expand({2, 5, 3})));
    CHECK(torch::allclose(m.get("x_log_prob"), torch::full({2, 5, 3}, normal_lp(0, 0, 0.5), torch::kDouble)));
  }
  // MEAN of a distribution without one: the estimate, repeated
  {
    tnn::InteractionTypeGuard mean(InteractionType::MEAN);
    auto tanh = ProbabilisticTensorDictModule(Keys{"loc", "scale"}, {"y"},
                                              {.distribution = tnn::TanhNormal::cls(), .num_samples = {4}});
    TensorDict t({{"loc", torch::zeros({3, 1})}, {"scale", torch::ones({3, 1})}}, {3});
    const at::Tensor y = tanh(t).get("y");
    CHECK(y.sizes().vec() == std::vector<int64_t>{4, 3, 1});
    CHECK(torch::equal(y[0], y[3]));
  }
  // an output tensordict is expanded too, and does not get the outputs
  TensorDict dest({}, {3});
  const TensorDict into = prob(td, dest);
  CHECK(into.impl() != dest.impl());
  CHECK(into.batch_size().vec() == std::vector<int64_t>{2, 5, 3});
  CHECK(into.contains("x"));
  CHECK_FALSE(dest.contains("x"));
  // a tensordict with no batch dims gets the num_samples dims only
  TensorDict scalar({{"loc", torch::zeros({3})}, {"scale", torch::ones({3})}}, {});
  const TensorDict s = prob(scalar);
  CHECK(s.batch_size().vec() == std::vector<int64_t>{2, 5});
  CHECK(s.get("x").sizes().vec() == std::vector<int64_t>{2, 5, 3});
}

TEST_CASE(
    "num_samples in a ProbabilisticTensorDictSequential "
    "(test_nn.py::TestProbabilisticTensorDictModule::test_probabilistic_seq_n_samples)",
    "[probabilistic][num_samples][sequential][test_nn.py]") {
  // return_composite=False only: the sequences here have one distribution.
  for (const bool return_log_prob : {true, false}) {
    INFO("return_log_prob " << return_log_prob);
    auto prob = normal_module(
        {"sample"},
        {.default_interaction_type = InteractionType::RANDOM, .return_log_prob = return_log_prob, .num_samples = {2}});
    tnn::ProbabilisticTensorDictSequential seq({
        tnn::TensorDictModule([](const at::Tensor& x) { return std::make_tuple(x + 1, torch::ones_like(x)); }, {"x"},
                              {"loc", "scale"}),
        prob,
    });
    TensorDict td({{"x", torch::randn({3, 4})}}, {3});
    CHECK(seq->get_dist(td)->name() == "Normal");
    td = seq(td);
    CHECK(td.contains("sample"));
    CHECK(td.batch_size().vec() == std::vector<int64_t>{2, 3});
    CHECK(td.get("sample").sizes().vec() == std::vector<int64_t>{2, 3, 4});
    CHECK(td.contains("sample_log_prob") == return_log_prob);

    // the log-probability from the sequence
    const at::Tensor log_prob = seq->log_prob(td);
    CHECK(log_prob.sizes().vec() == std::vector<int64_t>{2, 3, 4});
    CHECK(torch::allclose(log_prob, -0.5 * (td.get("sample") - td.get("loc")).pow(2) - 0.5 * kLog2Pi));
    if (return_log_prob) CHECK(torch::allclose(log_prob, td.get("sample_log_prob")));
    CHECK(seq->dist_sample_keys() == Keys{"sample"});
    CHECK(seq->dist_params_keys() == Keys{"loc", "scale"});
    CHECK(seq->num_samples() == std::vector<int64_t>{2});
  }
}

TEST_CASE("ProbabilisticTensorDictSequential follows its last module's log-probability key",
          "[probabilistic][sequential][lp_aggregate]") {
  auto make = [](ProbabilisticOptions options) {
    options.distribution = tnn::Normal::cls();
    options.return_log_prob = true;
    // the value is written upstream: the last module only scores it
    return tnn::ProbabilisticTensorDictSequential({
        tnn::TensorDictModule([](const at::Tensor& x) { return std::make_tuple(x, x.abs() + 1, x * 0 + 2); }, {"obs"},
                              {"loc", "scale", {"agent", "action"}}),
        ProbabilisticTensorDictModule(Keys{"loc", "scale"}, {{"agent", "action"}}, options),
    });
  };
  auto seq = make({});
  CHECK(seq->log_prob_key() == NestedKey{"agent", "action_log_prob"});
  CHECK(seq->log_prob_keys() == Keys{{"agent", "action_log_prob"}});
  CHECK(seq->out_keys() == Keys{"loc", "scale", {"agent", "action"}, {"agent", "action_log_prob"}});
  TensorDict td({{"obs", torch::tensor({0.5, -1.0}, torch::kDouble)}}, {2});
  seq(td);
  CHECK(torch::equal(td.get({"agent", "action"}), torch::full({2}, 2.0, torch::kDouble)));  // kept
  CHECK(td.get({"agent", "action_log_prob"})[0].item<double>() == Approx(normal_lp(2.0, 0.5, 1.5)));
  CHECK(td.get({"agent", "action_log_prob"})[1].item<double>() == Approx(normal_lp(2.0, -1.0, 2.0)));

  auto custom = make({.log_prob_key = NestedKey{"stats", "lp"}});
  CHECK(custom->log_prob_key() == NestedKey{"stats", "lp"});
  TensorDict td2({{"obs", torch::tensor({0.5, -1.0}, torch::kDouble)}}, {2});
  custom(td2);
  CHECK(td2.contains({"stats", "lp"}));
  CHECK_FALSE(td2.contains({"agent", "action_log_prob"}));
  CHECK(torch::allclose(custom->log_prob(td2), td2.get({"stats", "lp"})));
}

TEST_CASE("ProbabilisticTensorDictSequential gathers the keys of its probabilistic modules, the last first",
          "[probabilistic][sequential][lp_aggregate][errors]") {
  tnn::ProbabilisticTensorDictSequential seq({
      normal_module({"a"}, {.num_samples = {3}}),
      tnn::TensorDictModule([](const at::Tensor& a) { return std::make_tuple(a, torch::ones_like(a)); }, {"a"},
                            {"loc2", "scale2"}),
      ProbabilisticTensorDictModule(tnn::DistributionKeys{{"loc", "loc2"}, {"scale", "scale2"}}, {{"n", "b"}},
                                    {.distribution = tnn::Normal::cls(), .return_log_prob = true, .num_samples = {2}}),
  });
  // tensordict 0.15.3 gives these lists for the same modules
  CHECK(seq->log_prob_keys() == Keys{{"n", "b_log_prob"}, "a_log_prob"});
  CHECK(seq->dist_sample_keys() == Keys{{"n", "b"}, "a"});
  CHECK(seq->dist_params_keys() == Keys{"loc2", "scale2", "loc", "scale"});
  CHECK(seq->num_samples() == std::vector<int64_t>{2, 3});
  CHECK_THROWS_AS(seq->log_prob_key(), tensordict::RuntimeError);
  CHECK_THROWS_WITH(seq->log_prob_key(),
                    "log_prob_key needs exactly one log-probability key, got [('n', 'b_log_prob'), 'a_log_prob']. "
                    "Use log_prob_keys instead.");
  // the output's leading dims, the last module's first
  TensorDict td({{"loc", torch::zeros({4})}, {"scale", torch::ones({4})}}, {4});
  const TensorDict out = seq(td);
  CHECK(out.batch_size().vec() == std::vector<int64_t>{2, 3, 4});
  CHECK(out.get({"n", "b"}).sizes().vec() == std::vector<int64_t>{2, 3, 4});
}
