// Reductions over batch dims, compared with libtorch per leaf.
#include "helpers.h"

using namespace tensordict;
using namespace td_test;
using Catch::Matchers::Contains;

TEST_CASE("reductions over batch dims, keepdim and all dims") {
  TensorDict td({{"a", iota({2, 3, 4}) / 7.0}, {"n", TensorDict({{"c", iota({2, 3, 5}) * 0.5 + 1}}, {2, 3, 5})}}, {2, 3},
                std::nullopt, {"env", "time"});
  auto a = td.get("a");
  auto c = td.get({"n", "c"});
  auto sum1 = td.sum({1});
  REQUIRE(sum1.batch_size() == at::IntArrayRef({2}));
  REQUIRE((sum1.names() == Names{"env"}));
  REQUIRE(sum1.get_td("n").batch_size() == at::IntArrayRef({2, 5}));
  REQUIRE(at::allclose(sum1.get("a"), a.sum(1)));
  REQUIRE(at::allclose(sum1.get({"n", "c"}), c.sum(1)));
  auto keep = td.mean({0, -1}, {.keepdim = true});
  REQUIRE(keep.batch_size() == at::IntArrayRef({1, 1}));
  REQUIRE(at::allclose(keep.get("a"), a.mean(at::IntArrayRef{0, 1}, true)));
  auto everything = td.sum();
  REQUIRE(everything.batch_size().empty());
  REQUIRE(everything.get_td("n").batch_size().empty());
  REQUIRE(at::allclose(everything.get("a"), a.sum()));
  REQUIRE(at::allclose(td.prod({0, 1}).get("a"), a.prod(1).prod(0)));
  REQUIRE(at::allclose(td.nansum({0}).get("a"), at::nansum(a, at::IntArrayRef{0})));
  REQUIRE(at::allclose(td.nanmean({1}).get("a"), at::nanmean(a, at::IntArrayRef{1})));
  REQUIRE(at::allclose(td.amax({1}).get("a"), a.amax(at::IntArrayRef{1})));
  REQUIRE(at::allclose(td.amin({0}).get("a"), a.amin(at::IntArrayRef{0})));
  REQUIRE(at::allclose(td.amax({0}).get("a"), a.amax(at::IntArrayRef{0})));
  REQUIRE(at::allclose(td.min().get("a"), a.min()));
  REQUIRE(at::allclose(td.std({1}).get("a"), a.std(at::IntArrayRef{1}, true)));
  REQUIRE(at::allclose(td.var({1}, {.keepdim = false, .correction = 0}).get("a"), a.var(at::IntArrayRef{1}, false)));
  REQUIRE(at::allclose(td.norm().get({"n", "c"}), c.norm()));
  REQUIRE_THAT(TD_MESSAGE(td.sum({2})), Contains("sum: dim 2 is out of range for a tensordict with 2 batch dims"));
  REQUIRE_THAT(TD_MESSAGE(td.sum({1, -1})), Contains("sum: a dim appears twice"));
  REQUIRE_THAT(TD_MESSAGE(td.std({0}, {.keepdim = false, .correction = 2})), Contains("correction must be 0 or 1"));
}

TEST_CASE("reduce folds every leaf into one tensor") {
  TensorDict td({{"a", iota({2, 3, 4})}, {"b", iota({2, 3}, at::kLong)}}, {2, 3});
  auto flat = at::cat({td.get("a").reshape({2, 3, -1}), td.get("b").reshape({2, 3, -1}).to(at::kFloat)}, -1);
  REQUIRE(at::allclose(td.reduce(Reduction::sum), flat.sum()));
  REQUIRE(at::allclose(td.reduce(Reduction::mean, {1}), flat.mean(at::IntArrayRef{1, 2})));
  REQUIRE(td.reduce(Reduction::max, {0}, {.keepdim = true}).sizes() == at::IntArrayRef({1, 3}));
  REQUIRE(at::allclose(td.reduce(Reduction::max, {0}, {.keepdim = true}), flat.amax(at::IntArrayRef{0, 2}, true).squeeze(-1)));
  REQUIRE(at::allclose(td.reduce(Reduction::std), flat.std()));
  REQUIRE_THAT(TD_MESSAGE(TensorDict().reduce(Reduction::sum)), Contains("no tensor to reduce"));
}

TEST_CASE("reductions keep single non-tensor values and refuse stacks") {
  TensorDict td({{"x", at::ones({2})}}, {2});
  td.set_non_tensor("s", "v");
  REQUIRE(td.sum().get_non_tensor("s") == "v");
  td.set("st", NonTensorData::stack({"p", "q"}, {2}));
  REQUIRE_THAT(TD_MESSAGE(td.sum({0})), Contains("sum: key 'st' holds a non-tensor stack"));
}
