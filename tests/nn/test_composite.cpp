// CompositeDistribution: sampling and scoring tensordicts.
#include <cmath>

#include "nn_test.h"

using tnn::InteractionType;
using tnn::LpAggregate;

namespace {

// tensordict's TestCompositeDist params: a Normal at "cont", a Categorical
// at ("nested", "disc").
TensorDict cont_disc_params(bool requires_grad = false) {
  return TensorDict({{"cont", TensorDict({{"loc", torch::randn({3, 4}).requires_grad_(requires_grad)},
                                          {"scale", torch::rand({3, 4}).add(0.1).requires_grad_(requires_grad)}},
                                         {3})},
                     {"nested", TensorDict({{"disc", TensorDict({{"logits", torch::randn({3, 10}).requires_grad_(
                                                                                  requires_grad)}},
                                                                {3})}},
                                           {3})}},
                    {3});
}

tnn::DistributionMap cont_disc_map() {
  return {{"cont", tnn::Normal::cls()}, {{"nested", "disc"}, tnn::Categorical::cls()}};
}

// Per-tensor log-densities, computed here.
at::Tensor normal_lp(const at::Tensor& x, const at::Tensor& loc, const at::Tensor& scale) {
  const at::Tensor z = (x - loc) / scale;
  return -0.5 * z * z - scale.log() - 0.5 * std::log(2 * M_PI);
}
at::Tensor categorical_lp(const at::Tensor& idx, const at::Tensor& logits) {
  return torch::log_softmax(logits, -1).gather(-1, idx.unsqueeze(-1)).squeeze(-1);
}

}  // namespace

// ports test_nn.py::TestCompositeDist::test_const
TEST_CASE("CompositeDistribution builds one component per key", "[composite]") {
  const TensorDict params = cont_disc_params();
  tnn::CompositeDistribution dist(params, cont_disc_map());
  CHECK(dist.batch_shape() == std::vector<int64_t>{3});
  CHECK(dist.size() == 2);
  CHECK(dist.sample_keys() == tnn::Keys{"cont", {"nested", "disc"}});
  CHECK(dist["cont"].name() == "Normal");
  CHECK(dist[{"nested", "disc"}].name() == "Categorical");
  CHECK(dist.repr() ==
        "CompositeDistribution({'cont': Normal(loc: torch.Size([3, 4]), scale: torch.Size([3, 4])), ('nested', "
        "'disc'): Categorical(logits: torch.Size([3, 10]))})");
}

// ports test_nn.py::TestCompositeDist::test_sample and test_sample_named
TEST_CASE("CompositeDistribution samples tensordicts, at the name_map keys", "[composite]") {
  const TensorDict params = cont_disc_params();
  tnn::CompositeDistribution dist(params, cont_disc_map());
  TensorDict sample = dist.sample();
  CHECK(sample.batch_size() == std::vector<int64_t>{3});
  sample = dist.sample({4});
  CHECK(sample.batch_size() == std::vector<int64_t>{4, 3});
  CHECK(sample.get("cont").sizes() == at::IntArrayRef({4, 3, 4}));
  CHECK(sample.get({"nested", "disc"}).sizes() == at::IntArrayRef({4, 3}));

  tnn::CompositeDistribution named(
      params, cont_disc_map(), {.name_map = {{"cont", {"sample", "cont"}}, {{"nested", "disc"}, {"sample", "disc"}}}});
  sample = named.sample({4});
  CHECK(sample.batch_size() == std::vector<int64_t>{4, 3});
  CHECK(sample.get({"sample", "cont"}).sizes() == at::IntArrayRef({4, 3, 4}));
  CHECK(sample.get({"sample", "disc"}).sizes() == at::IntArrayRef({4, 3}));
}

// ports test_nn.py::TestCompositeDist::test_rsample
TEST_CASE("CompositeDistribution rsample keeps gradients, and needs rsample everywhere", "[composite]") {
  const TensorDict params(
      {{"cont", TensorDict({{"loc", torch::randn({3, 4}, torch::requires_grad())},
                            {"scale", torch::rand({3, 4}).add(0.1).requires_grad_()}},
                           {3})},
       {"squashed", TensorDict({{"loc", torch::randn({3, 2}, torch::requires_grad())},
                                {"scale", torch::rand({3, 2}).add(0.1).requires_grad_()}},
                               {3})}},
      {3});
  tnn::CompositeDistribution dist(params, {{"cont", tnn::Normal::cls()}, {"squashed", tnn::TanhNormal::cls()}});
  TensorDict sample = dist.rsample();
  CHECK(sample.batch_size() == std::vector<int64_t>{3});
  CHECK(sample.get("cont").requires_grad());
  sample = dist.rsample({4});
  CHECK(sample.batch_size() == std::vector<int64_t>{4, 3});
  CHECK(sample.get("squashed").requires_grad());
  CHECK(sample.get("squashed").sizes() == at::IntArrayRef({4, 3, 2}));

  tnn::CompositeDistribution with_categorical(cont_disc_params(), cont_disc_map());
  CHECK(message_of([&] { with_categorical.rsample(); }) == "Categorical.rsample is not implemented");
  CHECK_THROWS_AS(with_categorical.rsample(), tensordict::NotImplementedError);
}

// ports test_nn.py::TestCompositeDist::test_log_prob and test_log_prob_legacy
TEST_CASE("CompositeDistribution log_prob per component, log_prob_sum summed", "[composite]") {
  const TensorDict params = cont_disc_params(/*requires_grad=*/true);
  tnn::CompositeDistribution dist(params, cont_disc_map());
  const TensorDict sample = dist.sample({4});
  const TensorDict lp = dist.log_prob(sample);
  CHECK(lp.batch_size() == std::vector<int64_t>{4, 3});
  CHECK(lp.keys({.include_nested = true, .leaves_only = true}) ==
        std::vector<NestedKey>{"cont_log_prob", {"nested", "disc_log_prob"}});
  CHECK_FALSE(sample.contains("cont_log_prob"));
  CHECK(lp.get("cont_log_prob").requires_grad());
  const at::Tensor expected_cont =
      normal_lp(sample.get("cont"), params.get({"cont", "loc"}), params.get({"cont", "scale"}));
  const at::Tensor expected_disc = categorical_lp(sample.get({"nested", "disc"}), params.get({"nested", "disc", "logits"}).expand({4, 3, 10}));
  CHECK(torch::allclose(lp.get("cont_log_prob"), expected_cont));
  CHECK(torch::allclose(lp.get({"nested", "disc_log_prob"}), expected_disc));
  // summed over the components and their event dims: [4, 3]
  const at::Tensor total = dist.log_prob_sum(sample);
  CHECK(total.sizes() == at::IntArrayRef({4, 3}));
  CHECK(torch::allclose(total, expected_cont.sum(-1) + expected_disc));
  // composite_lp_aggregate() does not change log_prob
  tnn::CompositeLpAggregateGuard aggregate(LpAggregate::Aggregate);
  CHECK(dist.log_prob(sample).keys({.include_nested = true, .leaves_only = true}).size() == 2);
}

// ports test_nn.py::TestCompositeDist::test_log_prob_composite and test_log_prob_composite_legacy
TEST_CASE("CompositeDistribution log_prob_composite, include_sum and in place under aggregation", "[composite]") {
  const TensorDict params = cont_disc_params(/*requires_grad=*/true);
  tnn::CompositeDistribution dist(params, cont_disc_map());
  TensorDict sample = dist.sample({4});
  {
    tnn::CompositeLpAggregateGuard per_component(LpAggregate::PerComponent);
    const TensorDict lp = dist.log_prob_composite(sample);
    CHECK(lp.impl() != sample.impl());
    CHECK(lp.get("cont_log_prob").requires_grad());
    CHECK(lp.get({"nested", "disc_log_prob"}).requires_grad());
    CHECK_FALSE(lp.contains("sample_log_prob"));
    const TensorDict with_sum = dist.log_prob_composite(sample, true);
    CHECK(torch::allclose(with_sum.get("sample_log_prob"), dist.log_prob_sum(sample)));
  }
  {
    tnn::CompositeLpAggregateGuard aggregate(LpAggregate::Aggregate);
    const TensorDict lp = dist.log_prob_composite(sample);
    CHECK(lp.impl() == sample.impl());  // written into the sample
    CHECK(sample.contains("cont_log_prob"));
    CHECK(torch::allclose(sample.get("sample_log_prob"),
                          sample.get("cont_log_prob").sum(-1) + sample.get({"nested", "disc_log_prob"})));
  }
  tnn::CompositeDistribution keyed(params, cont_disc_map(), {.log_prob_key = NestedKey{"lp", "sum"}});
  CHECK(keyed.log_prob_composite(dist.sample(), true).contains({"lp", "sum"}));
}

// ports test_nn.py::TestCompositeDist::test_entropy, test_entropy_composite and their legacy forms
TEST_CASE("CompositeDistribution entropy per component, summed, Monte Carlo where needed", "[composite]") {
  const TensorDict params = cont_disc_params(/*requires_grad=*/true);
  tnn::CompositeDistribution dist(params, cont_disc_map());
  const TensorDict ent = dist.entropy();
  CHECK(ent.batch_size() == std::vector<int64_t>{3});
  CHECK(ent.get("cont_entropy").requires_grad());
  CHECK_FALSE(ent.contains("entropy"));
  const at::Tensor cont = 0.5 + 0.5 * std::log(2 * M_PI) + params.get({"cont", "scale"}).log();
  const at::Tensor probs = torch::softmax(params.get({"nested", "disc", "logits"}), -1);
  const at::Tensor disc = -(probs * probs.log()).sum(-1);
  CHECK(torch::allclose(ent.get("cont_entropy"), cont));
  CHECK(torch::allclose(ent.get({"nested", "disc_entropy"}), disc));
  CHECK(torch::allclose(dist.entropy_sum(), cont.sum(-1) + disc));
  const TensorDict summed = dist.entropy_composite(1, true);
  CHECK(torch::allclose(summed.get("entropy"), cont.sum(-1) + disc));
  tnn::CompositeDistribution keyed(params, cont_disc_map(), {.entropy_key = NestedKey("h")});
  CHECK(keyed.entropy_composite(1, true).contains("h"));
  {
    tnn::CompositeLpAggregateGuard aggregate(LpAggregate::Aggregate);
    CHECK(dist.entropy_composite().contains("entropy"));  // include_sum follows the aggregation
  }
  // TanhNormal has no closed-form entropy: -mean of log_prob over rsamples
  const TensorDict squashed_params({{"a", TensorDict({{"loc", torch::zeros({2, 1})}, {"scale", torch::ones({2, 1})}}, {2})}},
                                   {2});
  tnn::CompositeDistribution squashed(squashed_params, {{"a", tnn::TanhNormal::cls()}});
  torch::manual_seed(0);
  const at::Tensor estimate = squashed.entropy(500).get("a_entropy");
  torch::manual_seed(0);
  const auto& tanh = squashed["a"];
  const at::Tensor expected = -tanh.log_prob(tanh.rsample({500})).mean(0);
  CHECK(torch::allclose(estimate, expected));
}

TEST_CASE("CompositeDistribution mode, mean, deterministic_sample", "[composite]") {
  const TensorDict params(
      {{"cont", TensorDict({{"loc", torch::randn({3, 4})}, {"scale", torch::rand({3, 4}).add(0.1)}}, {3})},
       {"disc", TensorDict({{"logits", torch::randn({3, 5})}}, {3})},
       {"point", TensorDict({{"param", torch::randn({3, 2})}}, {3})},
       {"squashed", TensorDict({{"loc", torch::randn({3, 2})}, {"scale", torch::ones({3, 2})}}, {3})}},
      {3});
  tnn::CompositeDistribution dist(params, {{"cont", tnn::Normal::cls()},
                                           {"disc", tnn::Categorical::cls()},
                                           {"point", tnn::Delta::cls()},
                                           {"squashed", tnn::TanhNormal::cls()}});
  const TensorDict det = dist.deterministic_sample();
  CHECK(det.batch_size() == std::vector<int64_t>{3});
  CHECK(torch::equal(det.get("cont"), params.get({"cont", "loc"})));                     // mean
  CHECK(torch::equal(det.get("disc"), params.get({"disc", "logits"}).argmax(-1)));       // mode
  CHECK(torch::equal(det.get("point"), params.get({"point", "param"})));                 // param
  CHECK(torch::allclose(det.get("squashed"), params.get({"squashed", "loc"}).tanh()));  // mode
  const TensorDict mode = dist.mode();
  CHECK(torch::equal(mode.get("disc"), params.get({"disc", "logits"}).argmax(-1)));
  CHECK(message_of([&] { dist.mean(); }) == "Categorical.mean is not implemented");  // the first without one

  tnn::CompositeDistribution no_mean(params, {{"disc", tnn::Categorical::cls()}});
  CHECK(torch::equal(no_mean.deterministic_sample().get("disc"), params.get({"disc", "logits"}).argmax(-1)));

  // A user's distribution with neither a mean nor a deterministic value.
  struct LogProbOnly : tnn::Distribution {
    LogProbOnly() : tnn::Distribution({3}, {}) {}
    std::string_view name() const override { return "LogProbOnly"; }
    at::Tensor log_prob(const at::Tensor& value) const override { return torch::zeros_like(value); }
    std::vector<std::pair<std::string, at::Tensor>> params() const override { return {}; }
  };
  const auto opaque = tnn::CompositeDistribution::from_distributions(
      TensorDict({}, {3}), {{"x", std::make_shared<LogProbOnly>()}});
  CHECK(message_of([&] { opaque.deterministic_sample(); }) ==
        "LogProbOnly has no deterministic_sample, and its mean is not implemented, so CompositeDistribution cannot "
        "compute a deterministic sample for it. Use another interaction type.");
  CHECK_THROWS_AS(opaque.deterministic_sample(), tensordict::NotImplementedError);
}

// ports test_nn.py::TestCompositeDist::test_from_distributions
TEST_CASE("CompositeDistribution::from_distributions uses the distributions as they are", "[composite]") {
  auto a = std::make_shared<tnn::Normal>(torch::zeros({3}), torch::ones({3}));
  auto b = std::make_shared<tnn::Categorical>(torch::zeros({3, 2}));
  const auto dist = tnn::CompositeDistribution::from_distributions(TensorDict({}, {3}), {{"a", a}, {"b", b}},
                                                                    {.name_map = {{"b", {"out", "b"}}}});
  CHECK(&dist["a"] == a.get());
  const TensorDict sample = dist.sample();
  CHECK(sample.batch_size() == std::vector<int64_t>{3});
  CHECK(sample.keys({.include_nested = true, .leaves_only = true}) == std::vector<NestedKey>{"a", {"out", "b"}});
}

TEST_CASE("CompositeDistribution errors", "[composite][errors]") {
  const TensorDict params = cont_disc_params();
  const std::string keys = "[('cont', 'loc'), ('cont', 'scale'), ('nested', 'disc', 'logits')]";
  CHECK(message_of([&] { tnn::CompositeDistribution(params, {{"missing", tnn::Normal::cls()}}); }) ==
        "CompositeDistribution: no parameters at missing in params with keys " + keys);
  CHECK_THROWS_AS(tnn::CompositeDistribution(params, {{"missing", tnn::Normal::cls()}}), KeyError);
  // a tensor where the component's parameters should be
  CHECK(message_of([&] { tnn::CompositeDistribution(params, {{{"cont", "loc"}, tnn::Normal::cls()}}); }) ==
        "CompositeDistribution: no parameters at ('cont', 'loc') in params with keys " + keys);
  // the component's own error, naming it
  const TensorDict partial({{"x", TensorDict({{"loc", torch::zeros({3})}}, {3})}}, {3});
  CHECK(message_of([&] { tnn::CompositeDistribution(partial, {{"x", tnn::Normal::cls()}}); }) ==
        "CompositeDistribution: x: Normal expects the parameter(s) loc, scale; got loc");
  CHECK_THROWS_AS(tnn::CompositeDistribution(partial, {{"x", tnn::Normal::cls()}}), tensordict::ValueError);

  tnn::CompositeDistribution dist(params, cont_disc_map());
  CHECK(message_of([&] { dist["zz"]; }) ==
        "CompositeDistribution: no component at zz (the sample keys are ['cont', ('nested', 'disc')])");
  CHECK_THROWS_AS(dist["zz"], KeyError);
  CHECK(message_of([] {
          tnn::CompositeDistribution::from_distributions(TensorDict({}, {3}), {{"a", nullptr}});
        }) == "CompositeDistribution: the distribution of a is null");
  // a sample without a component's key
  TensorDict sample = dist.sample();
  sample.del_("cont");
  CHECK_THROWS_AS(dist.log_prob(sample), KeyError);
  {
    tnn::CompositeLpAggregateGuard aggregate(LpAggregate::Aggregate);
    CHECK_THROWS_AS(dist.log_prob_composite(sample), KeyError);
    CHECK_FALSE(sample.contains({"nested", "disc_log_prob"}));  // nothing written
  }
}

namespace {

// tensordict's test_prob_module params: two Normals under "params".
TensorDict module_params() {
  auto normal = [] {
    return TensorDict({{"loc", torch::randn({3, 4})}, {"scale", torch::rand({3, 4}).add(0.1)}}, {3});
  };
  return TensorDict(
      {{"params", TensorDict({{"cont", normal()}, {"nested", TensorDict({{"cont", normal()}}, {3})}}, {3})}}, {3});
}

tnn::ProbabilisticTensorDictModule composite_module(bool map_names, InteractionType interaction,
                                                    bool return_log_prob) {
  tnn::CompositeDistribution::Options options;
  if (map_names) options.name_map = {{"cont", {"sample", "cont"}}, {{"nested", "cont"}, {"sample", "nested", "cont"}}};
  return tnn::ProbabilisticTensorDictModule(
      tnn::Keys{"params"}, {},
      tnn::ProbabilisticOptions{
          .distribution = tnn::CompositeDistribution::cls(
              {{"cont", tnn::Normal::cls()}, {{"nested", "cont"}, tnn::Normal::cls()}}, options),
          .default_interaction_type = interaction,
          .return_log_prob = return_log_prob});
}

}  // namespace

// ports test_nn.py::TestCompositeDist::test_prob_module
TEST_CASE("ProbabilisticTensorDictModule with a CompositeDistribution", "[composite][probabilistic]") {
  tnn::CompositeLpAggregateGuard per_component(LpAggregate::PerComponent);
  for (const auto interaction : {InteractionType::MODE, InteractionType::MEAN}) {
    for (const bool return_log_prob : {true, false}) {
      for (const bool map_names : {true, false}) {
        const TensorDict params = module_params();
        auto module = composite_module(map_names, interaction, return_log_prob);
        const tnn::Keys out_keys = map_names ? tnn::Keys{{"sample", "cont"}, {"sample", "nested", "cont"}}
                                             : tnn::Keys{"cont", {"nested", "cont"}};
        const tnn::Keys lp_keys = map_names
                                      ? tnn::Keys{{"sample", "cont_log_prob"}, {"sample", "nested", "cont_log_prob"}}
                                      : tnn::Keys{"cont_log_prob", {"nested", "cont_log_prob"}};
        CHECK(module->dist_sample_keys() == out_keys);
        CHECK(module->dist_params_keys() == tnn::Keys{"params"});
        tnn::Keys expected_out = out_keys;
        if (return_log_prob) expected_out.insert(expected_out.end(), lp_keys.begin(), lp_keys.end());
        CHECK(module->out_keys() == expected_out);
        CHECK(module->log_prob_keys() == lp_keys);
        CHECK_THROWS_AS(module->log_prob_key(), tensordict::RuntimeError);

        TensorDict sample = module(params);
        for (const auto& key : module->out_keys()) CHECK(sample.contains(key));
        CHECK_FALSE(sample.contains("sample_log_prob"));
        // MODE and MEAN of a Normal: loc
        CHECK(torch::equal(sample.get(out_keys[0]), params.get({"params", "cont", "loc"})));
        CHECK(torch::equal(sample.get(out_keys[1]), params.get({"params", "nested", "cont", "loc"})));
        if (return_log_prob) {
          CHECK(torch::allclose(sample.get(lp_keys[0]), normal_lp(sample.get(out_keys[0]),
                                                                   params.get({"params", "cont", "loc"}),
                                                                   params.get({"params", "cont", "scale"}))));
        }
        // the components' log-probabilities, as a tensordict
        const TensorDict lp = module->get_composite_dist(sample)->log_prob(sample);
        CHECK(lp.contains(lp_keys[0]));
        CHECK(lp.contains(lp_keys[1]));
        CHECK(message_of([&] { module->log_prob(sample); }) ==
              "ProbabilisticTensorDictModule: while composite_lp_aggregate() is false, a CompositeDistribution's "
              "log-probability is a tensordict: use get_composite_dist(td)->log_prob(td)");
      }
    }
  }
}

// ports test_nn.py::TestCompositeDist::test_prob_module_legacy
TEST_CASE("ProbabilisticTensorDictModule with a CompositeDistribution, log-probabilities aggregated",
          "[composite][probabilistic]") {
  tnn::CompositeLpAggregateGuard aggregate(LpAggregate::Aggregate);
  for (const bool return_log_prob : {true, false}) {
    const TensorDict params = module_params();
    auto module = composite_module(/*map_names=*/false, InteractionType::RANDOM, return_log_prob);
    CHECK(module->log_prob_key() == NestedKey("sample_log_prob"));
    CHECK(module->log_prob_keys() == tnn::Keys{"sample_log_prob"});
    TensorDict sample = module(params);
    for (const auto& key : module->out_keys()) CHECK(sample.contains(key));
    const at::Tensor lp = module->log_prob(sample);
    CHECK(lp.sizes() == at::IntArrayRef({3}));
    const at::Tensor expected =
        normal_lp(sample.get("cont"), params.get({"params", "cont", "loc"}), params.get({"params", "cont", "scale"}))
            .sum(-1) +
        normal_lp(sample.get({"nested", "cont"}), params.get({"params", "nested", "cont", "loc"}),
                  params.get({"params", "nested", "cont", "scale"}))
            .sum(-1);
    CHECK(torch::allclose(lp, expected));
    if (return_log_prob) {
      CHECK(sample.contains("cont_log_prob"));
      CHECK(sample.contains({"nested", "cont_log_prob"}));
      CHECK(torch::allclose(sample.get("sample_log_prob"), expected));
    }
  }
}

// ports test_nn.py::TestCompositeDist::test_prob_module_seq_nested
TEST_CASE("ProbabilisticTensorDictSequential ending in a CompositeDistribution module, nested params",
          "[composite][probabilistic]") {
  tnn::CompositeLpAggregateGuard per_component(LpAggregate::PerComponent);
  const tnn::Keys lp_keys{"cont_log_prob", {"nested", "cont_log_prob"}};
  TensorDict params({{"agents", module_params()}, {"done", torch::ones({1})}}, {});
  tnn::ProbabilisticTensorDictSequential module({
      tnn::TensorDictModule([](const at::Tensor& x) { return x; }, {"done"}, {"done_copy"}),
      tnn::ProbabilisticTensorDictModule(
          tnn::Keys{{"agents", "params"}}, {"cont", {"nested", "cont"}},
          tnn::ProbabilisticOptions{.distribution = tnn::CompositeDistribution::cls(
                                        {{"cont", tnn::Normal::cls()}, {{"nested", "cont"}, tnn::Normal::cls()}}),
                                    .return_log_prob = true,
                                    .log_prob_keys = lp_keys}),
  });
  CHECK(module->dist_sample_keys() == tnn::Keys{"cont", {"nested", "cont"}});
  CHECK(module->dist_params_keys() == tnn::Keys{{"agents", "params"}});
  // the composite's params are at ("agents", "params"), batch [3]; the samples go to the root (batch [])
  TensorDict sample = module(params);
  CHECK(sample.get("cont").sizes() == at::IntArrayRef({3, 4}));
  CHECK(sample.contains("cont_log_prob"));
  CHECK(sample.contains({"nested", "cont_log_prob"}));
}

TEST_CASE("ProbabilisticTensorDictModule with a CompositeDistribution: custom log-probability keys, errors",
          "[composite][probabilistic][errors]") {
  tnn::CompositeLpAggregateGuard per_component(LpAggregate::PerComponent);
  const auto cls = tnn::CompositeDistribution::cls({{"cont", tnn::Normal::cls()}, {{"nested", "cont"}, tnn::Normal::cls()}});
  tnn::ProbabilisticTensorDictModule renamed(
      tnn::Keys{"params"}, {},
      tnn::ProbabilisticOptions{.distribution = cls, .return_log_prob = true, .log_prob_keys = tnn::Keys{"lp0", "lp1"}});
  const TensorDict params = module_params();
  TensorDict sample = renamed(params);
  CHECK(sample.contains("lp0"));
  CHECK(sample.contains("lp1"));
  CHECK_FALSE(sample.contains("cont_log_prob"));

  CHECK(message_of([&] { tnn::ProbabilisticTensorDictModule(tnn::Keys{"a", "b"}, {}, {.distribution = cls}); }) ==
        "ProbabilisticTensorDictModule: a CompositeDistribution reads its parameters from one in_key (a tensordict), "
        "got in_keys=['a', 'b']");
  tnn::ProbabilisticTensorDictModule module(tnn::Keys{"params"}, {}, {.distribution = cls});
  CHECK(message_of([&] { module->get_dist(params); }) ==
        "ProbabilisticTensorDictModule: the distribution is a CompositeDistribution, which samples tensordicts: use "
        "get_composite_dist");
  CHECK_THROWS_AS(module->get_dist(params), tensordict::TypeError);
  const TensorDict tensor_params({{"params", torch::zeros({3})}}, {3});
  CHECK(message_of([&] { module(tensor_params); }) ==
        "ProbabilisticTensorDictModule: a CompositeDistribution reads a tensordict of parameters at params, got a "
        "tensor");
  tnn::ProbabilisticTensorDictModule normal(tnn::Keys{"loc", "scale"}, {"x"}, {.distribution = tnn::Normal::cls()});
  CHECK(message_of([&] { normal->get_composite_dist(params); }) ==
        "ProbabilisticTensorDictModule: the distribution class is Normal, not a CompositeDistribution: use get_dist");
  {
    tnn::InteractionTypeGuard median(InteractionType::MEDIAN);
    CHECK(message_of([&] { module(params.clone()); }) == "CompositeDistribution.median is not implemented");
  }
}
