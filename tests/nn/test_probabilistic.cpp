// Distributions, interaction types, probabilistic modules.
#include <catch2/catch.hpp>
#include <torch/torch.h>

#include <cmath>
#include <tensordict/nn.h>
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
