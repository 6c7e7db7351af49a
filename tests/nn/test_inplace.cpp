// Where modules write: TensorDictModule's, TensorDictSequential's and
// ProbabilisticTensorDictSequential's `inplace` (test_nn.py), and WrapModule
// (nn/common.py:1364).
#include "nn_test.h"

using tnn::Inplace;

namespace {
// lambda x: (x, x), in_keys=["x"], out_keys=["y", "z"].
tnn::TensorDictModule twice(Inplace inplace) {
  return tnn::TensorDictModule([](const at::Tensor& x) { return std::make_tuple(x, x); }, {"x"}, {"y", "z"},
                               tnn::TensorDictModule::Options{.inplace = inplace});
}
}  // namespace

namespace {
// test_tdseq_inplace's expectation of where a sequence's output lands: in the
// input with inplace=True, in a new tensordict when the sequence or its
// modules say False, else where the (in-place) modules wrote: the input.
void check_placement(const TensorDict& output, const TensorDict& input, Inplace inplace, Inplace module_inplace) {
  const bool new_td = inplace != Inplace::True && (module_inplace == Inplace::False || inplace == Inplace::False);
  CHECK((output.impl() != input.impl()) == new_td);
  CHECK(output.contains("input") == !new_td);
}
}  // namespace

TEST_CASE(
    "TensorDictModule inplace=False and \"empty\" write into a new tensordict (test_nn.py::test_tdmodule_inplace)",
    "[module][inplace][test_nn.py]") {
  const at::Tensor x = at::tensor({0.0});
  {
    auto tdm = twice(Inplace::False);
    TensorDict td({{"x", x}}, {1}, at::Device(at::kCPU));
    const TensorDict out = tdm(td);
    CHECK(out.impl() != td.impl());
    CHECK_FALSE(out.contains("x"));
    CHECK(at::equal(out.get("y"), x));
    CHECK(at::equal(out.get("z"), x));
    CHECK(out.batch_size().empty());
    CHECK_FALSE(out.device().has_value());
    CHECK(td.keys().size() == 1);  // the input is left alone
  }
  {
    auto tdm = twice(Inplace::Empty);
    TensorDict td({{"x", x}}, {1}, at::Device(at::kCPU));
    const TensorDict out = tdm(td);
    CHECK(out.impl() != td.impl());
    CHECK_FALSE(out.contains("x"));
    CHECK(out.contains("y"));
    CHECK(out.contains("z"));
    CHECK(out.batch_size().vec() == std::vector<int64_t>{1});
    CHECK(out.device() == at::Device(at::kCPU));
    // A given output tensordict prevails.
    const TensorDict given = tdm(td, TensorDict());
    CHECK_FALSE(given.contains("x"));
    CHECK(given.contains("y"));
    CHECK(given.contains("z"));
    CHECK(given.batch_size().empty());
    CHECK_FALSE(given.device().has_value());
  }
  {
    // None acts as False for a module; True (the default) writes into the input.
    TensorDict td({{"x", x}}, {1});
    CHECK(twice(Inplace::None)(td).impl() != td.impl());
    const TensorDict out = twice(Inplace::True)(td);
    CHECK(out.impl() == td.impl());
    CHECK(td.contains("y"));
  }
}

TEST_CASE("TensorDictSequential inplace with modules in or out of place (test_nn.py::test_tdseq_inplace)",
          "[sequential][inplace][test_nn.py]") {
  for (const Inplace inplace : {Inplace::True, Inplace::False, Inplace::None}) {
    for (const Inplace module_inplace : {Inplace::True, Inplace::False}) {
      INFO("inplace " << static_cast<int>(inplace) << ", module inplace " << static_cast<int>(module_inplace));
      tnn::TensorDictSequential model(
          {tnn::TensorDictModule([](const at::Tensor& x) { return std::make_tuple(x + 1, x - 1); }, {"input"},
                                 {{"intermediate", "0"}, {"intermediate", "1"}},
                                 tnn::TensorDictModule::Options{.inplace = module_inplace}),
           tnn::TensorDictModule([](const at::Tensor& y0, const at::Tensor& y1) { return y0 * y1; },
                                 {{"intermediate", "0"}, {"intermediate", "1"}}, {"output"},
                                 tnn::TensorDictModule::Options{.inplace = module_inplace})},
          {.inplace = inplace});
      TensorDict input({{"input", at::zeros({})}}, {});
      const TensorDict output = model(input);
      check_placement(output, input, inplace, module_inplace);
      // (0 + 1) * (0 - 1)
      REQUIRE(output.contains("output"));
      CHECK(output.get("output").item<float>() == -1.0f);
    }
  }
}

TEST_CASE("TensorDictSequential inplace=\"empty\" keeps the input's batch size and writes only out_keys",
          "[sequential][inplace]") {
  tnn::TensorDictSequential model({tnn::TensorDictModule([](const at::Tensor& x) { return x * 2; }, {"x"}, {"y"})}, {.inplace = Inplace::Empty});
  TensorDict input({{"x", at::ones({3, 2})}}, {3});
  const TensorDict out = model(input);
  CHECK(out.impl() != input.impl());
  CHECK(out.batch_size().vec() == std::vector<int64_t>{3});
  CHECK_FALSE(out.contains("x"));
  CHECK(at::equal(out.get("y"), at::full({3, 2}, 2.0)));
  // The module wrote in place: the input has y too (sequence.py runs the chain on it).
  CHECK(at::equal(input.get("y"), at::full({3, 2}, 2.0)));
  CHECK(model->inplace() == Inplace::Empty);
  CHECK(model->slice(0)->inplace() == Inplace::Empty);  // sub-sequences keep it
}

TEST_CASE("WrapModule runs a function of the whole tensordict in a sequence (nn/common.py WrapModule)",
          "[wrap][sequential]") {
  // The docstring's example: a reshape between two modules.
  tnn::TensorDictSequential seq({tnn::TensorDictModule([](const at::Tensor& x) { return x * 2; }, {"x"}, {"y"}),
                                 tnn::WrapModule([](const TensorDict& td) { return td.reshape({-1}); })});
  TensorDict td({{"x", at::ones({3, 4, 5})}}, {3, 4});
  const TensorDict out = seq(td);
  CHECK(out.batch_size().vec() == std::vector<int64_t>{12});
  CHECK(at::equal(out.get("y"), at::full({12, 5}, 2.0)));
  CHECK(at::equal(out.get("x"), at::ones({12, 5})));
  // in_keys and out_keys only inform the sequence (empty by default).
  tnn::WrapModule informed([](const TensorDict& td) { return td; },
                           tnn::WrapModule::Options{.in_keys = {"a"}, .out_keys = {"b"}});
  CHECK(informed->in_keys() == std::vector<NestedKey>{"a"});
  CHECK(informed->out_keys() == std::vector<NestedKey>{"b"});
  CHECK(tnn::WrapModule([](const TensorDict& td) { return td; })->in_keys().empty());
}

TEST_CASE("WrapModule inplace writes the result into the input", "[wrap]") {
  auto add_z = [](const TensorDict& td) {
    TensorDict out({{"z", td.get("x") + 1}}, td.batch_size());
    return TensorDict(out);
  };
  TensorDict td({{"x", at::zeros({2})}}, {2});
  // Not in place: the function's result, the input unchanged.
  const TensorDict fresh = tnn::WrapModule(add_z)(td);
  CHECK(fresh.impl() != td.impl());
  CHECK_FALSE(td.contains("z"));
  CHECK_FALSE(fresh.contains("x"));
  // In place: the input updated with the result, and returned.
  const TensorDict updated = tnn::WrapModule(add_z, tnn::WrapModule::Options{.inplace = true})(td);
  CHECK(updated.impl() == td.impl());
  CHECK(at::equal(td.get("z"), at::ones({2})));
  CHECK(at::equal(td.get("x"), at::zeros({2})));
  // A function returning its input: nothing to update.
  auto same = [](const TensorDict& t) { return t; };
  CHECK(tnn::WrapModule(same, tnn::WrapModule::Options{.inplace = true})(td).impl() == td.impl());
  // With an output tensordict, the result goes there.
  TensorDict dest({}, {2});
  const TensorDict into = tnn::WrapModule(add_z)(td, dest);
  CHECK(into.impl() == dest.impl());
  CHECK(at::equal(dest.get("z"), at::ones({2})));
  // An empty function is refused.
  CHECK(message_of([] { tnn::WrapModule(tnn::WrapModuleImpl::Function{}); }) ==
        "WrapModule: the wrapped function is empty");
}

namespace {
// test_tdprobseq_inplace's chain: input -> (intermediate.0, intermediate.1) =
// (x + 1, x - 1) -> output = their product -> sample ~ Categorical(logits =
// output), with its log-probability.
tnn::ProbabilisticTensorDictSequential categorical_policy(Inplace inplace, Inplace module_inplace) {
  return tnn::ProbabilisticTensorDictSequential(
      {tnn::TensorDictModule([](const at::Tensor& x) { return std::make_tuple(x + 1, x - 1); }, {"input"},
                             {{"intermediate", "0"}, {"intermediate", "1"}},
                             tnn::TensorDictModule::Options{.inplace = module_inplace}),
       tnn::TensorDictModule([](const at::Tensor& y0, const at::Tensor& y1) { return y0 * y1; },
                             {{"intermediate", "0"}, {"intermediate", "1"}}, {"output"},
                             tnn::TensorDictModule::Options{.inplace = module_inplace}),
       tnn::ProbabilisticTensorDictModule(
           tnn::DistributionKeys{{"logits", "output"}}, {"sample"},
           tnn::ProbabilisticOptions{.distribution = tnn::Categorical::cls(), .return_log_prob = true})},
      {.inplace = inplace});
}
}  // namespace

TEST_CASE(
    "ProbabilisticTensorDictSequential inplace with modules in or out of place "
    "(test_nn.py::TestProbabilisticTensorDictModule::test_tdprobseq_inplace)",
    "[probabilistic][sequential][inplace][test_nn.py]") {
  // arange rather than the Python test's zeros, so that the mode is one category.
  const at::Tensor x = at::arange(5.0);
  const at::Tensor logits = (x + 1) * (x - 1);
  const int64_t mode = 4;  // the largest logit, 4 * 4 - 1
  // About -9e-4, so compared to 1e-6 (float rounding).
  const at::Tensor log_prob = logits[mode] - logits.logsumexp(-1);
  for (const Inplace inplace : {Inplace::True, Inplace::False, Inplace::None}) {
    for (const Inplace module_inplace : {Inplace::True, Inplace::False}) {
      INFO("inplace " << static_cast<int>(inplace) << ", module inplace " << static_cast<int>(module_inplace));
      auto model = categorical_policy(inplace, module_inplace);
      CHECK(model->inplace() == inplace);
      TensorDict input({{"input", x}}, {});
      const TensorDict output = model(input);
      check_placement(output, input, inplace, module_inplace);
      REQUIRE(output.contains("output"));
      CHECK(at::equal(output.get("output"), logits));
      REQUIRE(output.contains("sample"));
      CHECK(output.get("sample").item<int64_t>() == mode);  // MODE, the last module's default
      // The default log-probability key of "sample": "sample" + "_log_prob".
      REQUIRE(output.contains("sample_log_prob"));
      CHECK(at::allclose(output.get("sample_log_prob"), log_prob, 1e-5, 1e-6));
    }
  }
}

TEST_CASE("ProbabilisticTensorDictSequential inplace=\"empty\", an output tensordict, sub-sequences",
          "[probabilistic][sequential][inplace]") {
  const at::Tensor x = at::arange(6.0).reshape({2, 3});
  const at::Tensor logits = (x + 1) * (x - 1);
  auto model = categorical_policy(Inplace::Empty, Inplace::True);
  TensorDict input({{"input", x}}, {2}, at::Device(at::kCPU));
  const TensorDict out = model(input);
  CHECK(out.impl() != input.impl());
  CHECK(out.batch_size().vec() == std::vector<int64_t>{2});
  CHECK(out.device() == at::Device(at::kCPU));
  CHECK_FALSE(out.contains("input"));
  CHECK(at::equal(out.get("sample"), at::full({2}, 2, at::kLong)));  // the last column's logit is the largest
  CHECK(at::allclose(out.get("sample_log_prob"), logits.select(-1, 2) - logits.logsumexp(-1), 1e-5, 1e-6));
  // The modules wrote in place: the input has their outputs too (the sequence's rule).
  CHECK(at::equal(input.get("sample"), out.get("sample")));

  // A given output tensordict prevails over inplace (tensordict's
  // probabilistic forward writes to the inplace target instead,
  // probabilistic.py:1549; its TensorDictSequential lets the given one win).
  TensorDict input2({{"input", x}}, {2});
  TensorDict given({}, {2});
  CHECK(categorical_policy(Inplace::False, Inplace::True)(input2, given).impl() == given.impl());
  CHECK(at::equal(given.get("sample"), at::full({2}, 2, at::kLong)));
  CHECK_FALSE(input2.contains("sample"));  // with an output tensordict the chain runs on a shallow copy

  // Sub-sequences keep inplace; one without the distribution is a plain sequence.
  CHECK(model->slice(0)->inplace() == Inplace::Empty);
  CHECK(model->select_subsequence(std::nullopt, tnn::Keys{"output"})->inplace() == Inplace::Empty);
  CHECK(std::dynamic_pointer_cast<tnn::ProbabilisticTensorDictSequentialImpl>(model->slice(1).ptr()) != nullptr);
  CHECK(model->slice(1)->inplace() == Inplace::Empty);

  // The last module is checked whatever inplace says.
  CHECK(message_of([] {
          tnn::ProbabilisticTensorDictSequential(
              {tnn::TensorDictModule([](const at::Tensor& t) { return t; }, {"a"}, {"b"})}, {.inplace = Inplace::False});
        }) ==
        "ProbabilisticTensorDictSequential: the last module must be a ProbabilisticTensorDictModule, got "
        "TensorDictModule");
}
