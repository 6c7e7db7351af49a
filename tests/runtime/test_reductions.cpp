// Reductions over batch dims, compared with libtorch per leaf.
#include <tensordict/persistent.h>
#include <nlohmann/json.hpp>

#include <cmath>

#include "helpers.h"
#include "../temp_dir.h"

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
  auto flat = at::cat({td.get("a").reshape({-1}), td.get("b").reshape({-1}).to(at::kFloat)});
  REQUIRE(at::allclose(td.reduce(Reduction::sum), flat.sum()));
  REQUIRE(at::allclose(td.reduce(Reduction::std), flat.std()));
  // Over batch dims the leaves are joined along the first of them, so they
  // need the same number of dims (tensordict: torch.cat's error).
  REQUIRE(TD_MESSAGE(td.reduce(Reduction::mean, {1})) ==
          "mean: reduce over batch dims joins the leaves along dim 1, so they need the same number of dims: "
          "'a' has 3, 'b' has 2");
  REQUIRE_THAT(TD_MESSAGE(TensorDict().reduce(Reduction::sum)), Contains("no tensor to reduce"));
}

namespace {

// `dense` as each kind: itself, a lazy stack of its rows, a sub-view of a
// larger tensordict, an h5 file (in `dir`).
std::vector<std::pair<std::string, TensorDict>> every_kind(const TensorDict& dense, const TempDir& dir) {
  std::vector<TensorDict> rows;
  for (auto& r : dense.clone().unbind(0)) rows.push_back(r);
  TensorDict big = stack({dense.clone(), dense.clone()}, 0);
  return {{"dense", dense},
          {"lazy stack", lazy_stack(rows, 0)},
          {"sub-view", big.get_sub_tensordict({1})},
          {"h5", PersistentTensorDict::from_dict(dense, (dir.path() / "td.h5").string())}};
}

}  // namespace

// Expected values: tensordict 0.15.3 run on the same tensordicts, pasted.
TEST_CASE("reduce over batch dims joins the leaves along the dim and reduces that dim, as tensordict's reduce=True") {
  TempDir dir;
  TensorDict dense({{"a", at::arange(6.0).reshape({2, 3})}, {"b", at::arange(6.0).reshape({2, 3}) * 10}}, {2, 3});
  for (const auto& [kind, td] : every_kind(dense, dir)) {
    INFO(kind);
    // td.sum(dim=0, reduce=True) -> tensor([33., 55., 77.])
    CHECK(at::equal(td.reduce(Reduction::sum, {0}), at::tensor({33.0f, 55.0f, 77.0f})));
    // td.sum(dim=1, reduce=True) and dim=-1 -> tensor([ 33., 132.])
    CHECK(at::equal(td.reduce(Reduction::sum, {1}), at::tensor({33.0f, 132.0f})));
    CHECK(at::equal(td.reduce(Reduction::sum, {-1}), at::tensor({33.0f, 132.0f})));
    // td.sum(dim=1, reduce=True, keepdim=True) -> tensor([[ 33.], [132.]])
    CHECK(at::equal(td.reduce(Reduction::sum, {1}, {.keepdim = true}), at::tensor({33.0f, 132.0f}).reshape({2, 1})));
    // td.sum(dim=(0, 1), reduce=True) -> tensor(165.); no dim, keepdim or not: the same scalar
    CHECK(at::equal(td.reduce(Reduction::sum, {0, 1}), at::scalar_tensor(165.0, at::kFloat)));
    CHECK(at::equal(td.reduce(Reduction::sum, {}, {.keepdim = true}), at::scalar_tensor(165.0, at::kFloat)));
    // td.std(dim=0, reduce=True) and correction=0
    CHECK(at::allclose(td.reduce(Reduction::std, {0}), at::tensor({14.5688f, 17.8955f, 21.9602f}), 1e-4));
    CHECK(at::allclose(td.reduce(Reduction::std, {0}, {.correction = 0}), at::tensor({12.6170f, 15.4980f, 19.0181f}), 1e-4));
  }
  // Feature dims stay: the leaves [2, 3, 4] joined along dim 0 reduce to [3, 4].
  TensorDict features({{"a", iota({2, 3, 4})}, {"b", iota({2, 3, 4}) * 2}}, {2, 3});
  CHECK(at::equal(features.reduce(Reduction::amax, {0}), at::cat({features.get("a"), features.get("b")}).amax(0)));
}

TEST_CASE("reductions without dims and keepdim keep every dim as size 1, at every level") {
  TempDir dir;
  TensorDict dense({{"a", at::arange(24.0).reshape({2, 3, 4})}}, {2, 3}, std::nullopt, {"x", "y"});
  dense.set("b", TensorDict({{"c", at::arange(6.0).reshape({2, 3}) + 100}}, {2, 3}));
  // tensordict 0.15.3: td.sum(keepdim=True) has batch [1, 1], names ['x', 'y'],
  // 'a' tensor([[[276.]]]), ('b', 'c') tensor([[615.]]) of batch [1, 1].
  const TensorDict kept = dense.sum({}, {.keepdim = true});
  CHECK(kept.batch_size() == at::IntArrayRef({1, 1}));
  CHECK((kept.names() == Names{"x", "y"}));
  CHECK(at::equal(kept.get("a"), at::tensor({276.0f}).reshape({1, 1, 1})));
  CHECK(kept.get_td("b").batch_size() == at::IntArrayRef({1, 1}));
  CHECK(at::equal(kept.get({"b", "c"}), at::tensor({615.0f}).reshape({1, 1})));
  for (const auto& [kind, td] : every_kind(dense, dir)) {
    INFO(kind);
    for (const auto& reduced : {td.sum({}, {.keepdim = true}), td.mean({}, {.keepdim = true}), td.prod({}, {.keepdim = true}),
                                td.amax({}, {.keepdim = true}), td.std({}, {.keepdim = true}),
                                td.quantile(0.5, std::nullopt, {.keepdim = true})}) {
      CHECK(reduced.batch_size() == at::IntArrayRef({1, 1}));
      CHECK(reduced.get("a").sizes() == at::IntArrayRef({1, 1, 1}));
      CHECK(reduced.get_td("b").batch_size() == at::IntArrayRef({1, 1}));
    }
    CHECK(at::equal(td.sum({}, {.keepdim = true}).get("a"), at::tensor({276.0f}).reshape({1, 1, 1})));
    CHECK(at::allclose(td.mean({}, {.keepdim = true}).get({"b", "c"}), at::tensor({102.5f}).reshape({1, 1})));
  }
  // A nested level with batch dims of its own keeps them too, as size 1.
  TensorDict deep({{"n", TensorDict({{"c", at::ones({2, 3, 5, 7})}}, {2, 3, 5})}}, {2, 3});
  const TensorDict deep_kept = deep.sum({}, {.keepdim = true});
  CHECK(deep_kept.get_td("n").batch_size() == at::IntArrayRef({1, 1, 1}));
  CHECK(at::equal(deep_kept.get({"n", "c"}), at::full({1, 1, 1, 1}, 210.0)));
}

TEST_CASE("reductions over the feature dims keep the batch size (tensordict's dim='feature')") {
  TempDir dir;
  TensorDict dense({{"a", at::arange(24.0).reshape({2, 3, 4})}}, {2, 3}, std::nullopt, {"x", "y"});
  dense.set("b", TensorDict({{"c", at::arange(6.0).reshape({2, 3}) + 100}}, {2, 3}));
  for (const auto& [kind, td] : every_kind(dense, dir)) {
    INFO(kind);
    // tensordict 0.15.3: td.sum(dim="feature")["a"][0] -> tensor([ 6., 22., 38.])
    const TensorDict sum = td.sum(feature);
    CHECK(sum.batch_size() == at::IntArrayRef({2, 3}));
    CHECK(at::equal(sum.get("a").index({0}), at::tensor({6.0f, 22.0f, 38.0f})));
    // a leaf without feature dims reduces over one element
    CHECK(at::equal(sum.get({"b", "c"}), td.get({"b", "c"})));
    CHECK(at::allclose(td.mean(feature).get("a").index({0}), at::tensor({1.5f, 5.5f, 9.5f})));
    CHECK(at::equal(td.prod(feature).get("a").index({0}), at::tensor({0.0f, 840.0f, 7920.0f})));
    CHECK(at::allclose(td.std(feature).get("a").index({0}), at::full({3}, 1.2910), 1e-4));
    CHECK(at::allclose(td.var(feature).get("a").index({0}), at::full({3}, 1.6667), 1e-4));
    CHECK(at::allclose(td.quantile(0.5, feature).get("a").index({0}), at::tensor({1.5f, 5.5f, 9.5f})));
    // td.sum(dim="feature", reduce=True) -> [[106, 123, 140], [157, 174, 191]]
    CHECK(at::equal(td.reduce(Reduction::sum, feature),
                    at::tensor({106.0f, 123.0f, 140.0f, 157.0f, 174.0f, 191.0f}).reshape({2, 3})));
    // td.quantile(0.5, dim="feature", reduce=True) on a, b = 10 * a (no feature dims)
    CHECK(td.reduce_quantile(0.5, feature).sizes() == at::IntArrayRef({2, 3}));
  }
  CHECK((dense.sum(feature).names() == Names{"x", "y"}));
  // Each nested level reduces its own feature dims: its batch size stays.
  TensorDict deep({{"n", TensorDict({{"c", at::ones({2, 3, 5, 7})}}, {2, 3, 5})}}, {2, 3});
  CHECK(deep.sum(feature).get_td("n").batch_size() == at::IntArrayRef({2, 3, 5}));
  CHECK(at::equal(deep.sum(feature).get({"n", "c"}), at::full({2, 3, 5}, 7.0)));
  // reduce=True flattens each leaf past the root's batch dims.
  CHECK(at::equal(deep.reduce(Reduction::sum, feature), at::full({2, 3}, 35.0)));
  // tensordict's message.
  CHECK(TD_MESSAGE(dense.sum(feature, {.keepdim = true})) == "dim='feature' is incompatible with keepdim=True.");
  CHECK_THROWS_AS(dense.quantile(0.5, feature, {.keepdim = true}), TypeError);
  CHECK_THROWS_AS(dense.reduce(Reduction::mean, feature, {.keepdim = true}), TypeError);
}

TEST_CASE("reductions cast each leaf to dtype first (tensordict's dtype=)") {
  TempDir dir;
  // int8 values 0, 40, 80, 120, -96, -56 (tensordict's test value, overflowed on purpose)
  TensorDict dense({{"a", (at::arange(6, at::kChar) * 40).reshape({2, 3})}}, {2, 3});
  for (const auto& [kind, td] : every_kind(dense, dir)) {
    INFO(kind);
    // tensordict 0.15.3: ti.sum(dim=0, dtype=torch.int64)["a"] -> tensor([120, -56, 24])
    const at::Tensor over0 = td.sum({0}, {.dtype = at::kLong}).get("a");
    CHECK(over0.scalar_type() == at::kLong);
    CHECK(at::equal(over0, at::tensor({120, -56, 24}, at::kLong)));
    // ti.sum(dtype=torch.float64)["a"] -> tensor(88., dtype=torch.float64)
    CHECK(at::equal(td.sum({}, {.dtype = at::kDouble}).get("a"), at::scalar_tensor(88.0, at::kDouble)));
    CHECK(td.mean({}, {.dtype = at::kDouble}).get("a").scalar_type() == at::kDouble);
    CHECK(td.nansum(feature, {.dtype = at::kLong}).get("a").scalar_type() == at::kLong);
    CHECK(td.prod({1}, {.dtype = at::kLong}).get("a").scalar_type() == at::kLong);
    // ti.sum(dtype=torch.int32, reduce=True) -> tensor(88, dtype=torch.int32)
    CHECK(at::equal(td.reduce(Reduction::sum, {}, {.dtype = at::kInt}), at::scalar_tensor(88, at::kInt)));
    CHECK(at::equal(td.reduce(Reduction::sum, {0}, {.dtype = at::kLong}), at::tensor({120, -56, 24}, at::kLong)));
  }
  // The other reductions take no dtype: tensordict's TypeError.
  CHECK(TD_MESSAGE(dense.std({}, {.dtype = at::kDouble})) == "std() got an unexpected keyword argument 'dtype'");
  CHECK(TD_MESSAGE(dense.amax({0}, {.dtype = at::kDouble})) == "amax() got an unexpected keyword argument 'dtype'");
  CHECK_THROWS_AS(dense.reduce(Reduction::var, {}, {.dtype = at::kDouble}), TypeError);
}

TEST_CASE("reductions keep single non-tensor values and refuse stacks") {
  TensorDict td({{"x", at::ones({2})}}, {2});
  td.set_non_tensor("s", "v");
  REQUIRE(td.sum().get_non_tensor("s") == "v");
  td.set("st", NonTensorData::stack({"p", "q"}, {2}));
  REQUIRE_THAT(TD_MESSAGE(td.sum({0})), Contains("sum: key 'st' holds a non-tensor stack"));
}

// Batch sizes and names: tensordict 0.15.3 run on the same tensordicts,
// pasted; values: libtorch's at::quantile per leaf.
TEST_CASE("quantile with a 1-d tensor q puts a dim of its size first in every leaf and the batch size",
          "[ports:test_generic.py::TestGeneric::test_quantile]") {
  TempDir dir;
  TensorDict dense({{"a", at::arange(24.0).reshape({2, 3, 4})}}, {2, 3}, std::nullopt, {"x", "y"});
  dense.set("n", TensorDict({{"c", at::arange(30.0).reshape({2, 3, 5}).flip(-1) * 0.5}}, {2, 3, 5}));
  const at::Tensor q = at::tensor({0.25f, 0.5f});
  for (const auto& [kind, td] : every_kind(dense, dir)) {
    INFO(kind);
    const at::Tensor a = td.get("a");
    const at::Tensor c = td.get({"n", "c"});
    // td.quantile(q): batch [], each leaf [2]
    const TensorDict whole = td.quantile(q);
    CHECK(whole.batch_size().empty());
    CHECK(whole.get_td("n").batch_size().empty());
    CHECK(at::equal(whole.get("a"), at::quantile(a, q)));
    CHECK(at::equal(whole.get({"n", "c"}), at::quantile(c, q)));
    // td.quantile(q, dim=1): batch [2, 2], ("n",) batch [2, 2, 5]
    const TensorDict over1 = td.quantile(q, 1);
    CHECK(over1.batch_size() == at::IntArrayRef({2, 2}));
    CHECK(over1.get_td("n").batch_size() == at::IntArrayRef({2, 2, 5}));
    CHECK(at::equal(over1.get("a"), at::quantile(a, q, 1)));
    CHECK(at::equal(over1.get({"n", "c"}), at::quantile(c, q, 1)));
    // td.quantile(q, dim=-1, keepdim=True): batch [2, 2, 1], ("n",) [2, 2, 1, 5]
    const TensorDict kept = td.quantile(q, -1, {.keepdim = true});
    CHECK(kept.batch_size() == at::IntArrayRef({2, 2, 1}));
    CHECK(kept.get_td("n").batch_size() == at::IntArrayRef({2, 2, 1, 5}));
    CHECK(at::equal(kept.get("a"), at::quantile(a, q, 1, true)));
    CHECK(at::equal(kept.get({"n", "c"}), at::quantile(c, q, 1, true)));
    // td.quantile(q, keepdim=True): batch [2, 1, 1], ("n",) [2, 1, 1, 1]
    const TensorDict all_kept = td.quantile(q, std::nullopt, {.keepdim = true});
    CHECK(all_kept.batch_size() == at::IntArrayRef({2, 1, 1}));
    CHECK(all_kept.get_td("n").batch_size() == at::IntArrayRef({2, 1, 1, 1}));
    CHECK(at::equal(all_kept.get("a"), at::quantile(a, q, c10::nullopt, true)));
    CHECK(at::equal(all_kept.get({"n", "c"}), at::quantile(c, q, c10::nullopt, true)));
    // td.quantile(q, dim="feature"): batch [2, 2, 3], ("n",) [2, 2, 3, 5]
    const TensorDict features = td.quantile(q, feature);
    CHECK(features.batch_size() == at::IntArrayRef({2, 2, 3}));
    CHECK(features.get_td("n").batch_size() == at::IntArrayRef({2, 2, 3, 5}));
    CHECK(at::equal(features.get("a"), at::quantile(a, q, -1)));
    CHECK(at::equal(features.get({"n", "c"}), at::quantile(c.unsqueeze(-1), q, -1)));
    // interpolation reaches every leaf
    CHECK(at::equal(td.quantile(q, 0, {.interpolation = "nearest"}).get("a"), at::quantile(a, q, 0, false, "nearest")));
    // A 0-d q adds no dim: td.quantile(torch.tensor(0.25), dim=0) has batch [3].
    const TensorDict scalar_q = td.quantile(at::scalar_tensor(0.25, at::kFloat), 0);
    CHECK(scalar_q.batch_size() == at::IntArrayRef({3}));
    CHECK(at::equal(scalar_q.get("a"), at::quantile(a, 0.25, 0)));
    // reduce=True: td.quantile(q, reduce=True) has shape [2],
    // td.quantile(q, dim="feature", reduce=True) [2, 2, 3].
    const at::Tensor together = td.reduce_quantile(q);
    CHECK(together.sizes() == at::IntArrayRef({2}));
    CHECK(at::equal(together, at::quantile(at::cat({a.reshape({-1}), c.reshape({-1})}), q)));
    const at::Tensor features_together = td.reduce_quantile(q, feature);
    CHECK(features_together.sizes() == at::IntArrayRef({2, 2, 3}));
    CHECK(at::equal(features_together, at::quantile(at::cat({a, c}, -1), q, -1)));
  }
  // The leading dim has no name: td.quantile(q, dim=1).names == [None, 'x'],
  // dim="feature" and dim=0 with keepdim: [None, 'x', 'y'] (a dim kept as
  // size 1 keeps its name, as with a double q: ['x', 'y']).
  CHECK((dense.quantile(q, 1).names() == Names{std::nullopt, "x"}));
  CHECK((dense.quantile(q, feature).names() == Names{std::nullopt, "x", "y"}));
  CHECK((dense.quantile(q, 0, {.keepdim = true}).names() == Names{std::nullopt, "x", "y"}));
  CHECK((dense.quantile(0.5, 0, {.keepdim = true}).names() == Names{"x", "y"}));
  CHECK((dense.sum({0}, {.keepdim = true}).names() == Names{"x", "y"}));
  // reduce=True over a batch dim: td.quantile(q, dim=1, reduce=True) has
  // shape [2, 2], with keepdim [2, 2, 1].
  TensorDict same({{"a", at::arange(6.0).reshape({2, 3})}, {"b", at::arange(6.0).reshape({2, 3}) * 10}}, {2, 3});
  const at::Tensor joined = at::cat({same.get("a"), same.get("b")}, 1);
  CHECK(at::equal(same.reduce_quantile(q, 1), at::quantile(joined, q, 1)));
  CHECK(same.reduce_quantile(q, 1).sizes() == at::IntArrayRef({2, 2}));
  CHECK(at::equal(same.reduce_quantile(q, 1, {.keepdim = true}), at::quantile(joined, q, 1, true)));
}

TEST_CASE("quantile refuses an undefined tensor q, or one of more than one dim or outside [0, 1] (libtorch's messages)") {
  TensorDict td({{"a", at::arange(6.0).reshape({2, 3})}}, {2, 3});
  const std::string two_dims = "quantile() q must be a scalar or 1D tensor";
  const at::Tensor q2 = at::full({1, 1}, 0.5f);
  CHECK(TD_MESSAGE(td.quantile(q2)) == two_dims);
  CHECK(TD_MESSAGE(td.quantile(q2, 0)) == two_dims);
  CHECK(TD_MESSAGE(td.quantile(q2, feature)) == two_dims);
  CHECK(TD_MESSAGE(td.reduce_quantile(q2)) == two_dims);
  CHECK(TD_MESSAGE(td.reduce_quantile(q2, feature)) == two_dims);
  CHECK_THROWS_AS(td.quantile(q2, 0), RuntimeError);
  // Checked before any leaf: a tensordict without leaves refuses it too.
  CHECK(TD_MESSAGE(TensorDict({}, {3}).quantile(q2, 0)) == two_dims);
  const std::string range = "quantile() q values must be in the range [0, 1]";
  CHECK(TD_MESSAGE(td.quantile(at::tensor({0.5f, 1.5f}), 0)) == range);
  CHECK(TD_MESSAGE(td.quantile(at::tensor({-0.1f}), feature)) == range);
  CHECK(TD_MESSAGE(td.quantile(at::scalar_tensor(std::nan(""), at::kFloat))) == range);
  CHECK(TD_MESSAGE(td.reduce_quantile(at::tensor({0.5f, 2.0f}))) == range);
  CHECK(TD_MESSAGE(td.reduce_quantile(at::tensor({2.0f}), feature)) == range);
  CHECK_THROWS_AS(td.quantile(at::tensor({2.0f})), RuntimeError);
  CHECK(TD_MESSAGE(td.quantile(at::Tensor(), 0)) == "quantile() q is an undefined tensor");
  CHECK_THROWS_AS(td.reduce_quantile(at::Tensor()), ValueError);
  // feature with keepdim: tensordict's message, as for a double q
  CHECK(TD_MESSAGE(td.quantile(at::tensor({0.5f}), feature, {.keepdim = true})) ==
        "dim='feature' is incompatible with keepdim=True.");
  CHECK_THROWS_AS(td.reduce_quantile(at::tensor({0.5f}), feature, {.keepdim = true}), TypeError);
  // libtorch wants q of the leaf's dtype; the error names the leaf.
  CHECK(TD_MESSAGE(td.quantile(at::tensor({0.5}, at::kDouble), 0)) ==
        "quantile failed for key 'a': quantile() q tensor must be same dtype as the input tensor");
}
