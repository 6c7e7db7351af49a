// apply, pointwise ops, comparisons, masking: each compared with libtorch per leaf.
#include "helpers.h"

using namespace tensordict;
using namespace td_test;
using Catch::Matchers::Contains;

namespace {

// Positive floats in (0.1, 0.9) so every unary op is defined.
TensorDict positive(at::IntArrayRef batch) {
  auto td = sample(batch).exclude({"b"});
  return TensorDict(td.apply([](const at::Tensor& t) { return at::sigmoid(t / 50.0) * 0.8 + 0.1 - 0.4; }).abs().clamp(0.1, 0.9));
}

void require_close(const TensorDict& got, const TensorDict& source, const std::function<at::Tensor(const at::Tensor&)>& expected) {
  REQUIRE(got.keys({.include_nested = true, .leaves_only = true}) == source.keys({.include_nested = true, .leaves_only = true}));
  for (const auto& key : source.keys({.include_nested = true, .leaves_only = true})) {
    INFO("key " << key);
    REQUIRE(at::allclose(got.get(key), expected(source.get(key)), 1e-5, 1e-6, /*equal_nan=*/true));
  }
}

}  // namespace

TEST_CASE("unary ops and their in-place forms apply to every leaf") {
  auto td = positive({2, 3});
#define CHECK_UNARY(name)                                                              \
  SECTION(#name) {                                                                     \
    require_close(td.name(), td, [](const at::Tensor& t) { return t.name(); });        \
    auto copy = td.clone();                                                            \
    copy.name##_();                                                                    \
    require_close(copy, td, [](const at::Tensor& t) { return t.name(); });             \
  }
  TENSORDICT_UNARY_OPS(CHECK_UNARY)
#undef CHECK_UNARY
}

TEST_CASE("predicates give tensordicts of bools") {
  TensorDict td({{"x", at::tensor({1.0, std::nan(""), INFINITY, -INFINITY})}}, {4});
#define CHECK_PREDICATE(name) \
  SECTION(#name) { REQUIRE(at::equal(td.name().get("x"), at::name(td.get("x")))); }
  TENSORDICT_PREDICATES(CHECK_PREDICATE)
#undef CHECK_PREDICATE
}

TEST_CASE("binary ops with a tensordict, a tensor or a scalar") {
  auto a = positive({2, 3});
  auto b = TensorDict(a.apply([](const at::Tensor& t) { return t * 0.5 + 0.25; }));
  const at::Tensor row = at::tensor({0.5f, 2.0f, 1.5f});
  SECTION("tensordict operand") {
    require_close(a.add(b, 2), a, [&](const at::Tensor& t) { return t + 2 * (t * 0.5 + 0.25); });
    require_close(a.sub(b), a, [&](const at::Tensor& t) { return t - (t * 0.5 + 0.25); });
    require_close(a.mul(b), a, [&](const at::Tensor& t) { return t * (t * 0.5 + 0.25); });
    require_close(a.div(b), a, [&](const at::Tensor& t) { return t / (t * 0.5 + 0.25); });
    require_close(a.pow(b), a, [&](const at::Tensor& t) { return t.pow(t * 0.5 + 0.25); });
    require_close(a.maximum(b), a, [&](const at::Tensor& t) { return at::maximum(t, t * 0.5 + 0.25); });
    require_close(a.minimum(b), a, [&](const at::Tensor& t) { return at::minimum(t, t * 0.5 + 0.25); });
    require_close(a + b, a, [&](const at::Tensor& t) { return t + (t * 0.5 + 0.25); });
    require_close(a - b, a, [&](const at::Tensor& t) { return t - (t * 0.5 + 0.25); });
    require_close(a * b, a, [&](const at::Tensor& t) { return t * (t * 0.5 + 0.25); });
    require_close(a / b, a, [&](const at::Tensor& t) { return t / (t * 0.5 + 0.25); });
    require_close(-a, a, [&](const at::Tensor& t) { return -t; });
    auto c = a.clone();
    c.add_(b, 3).mul_(b).maximum_(b);
    require_close(c, a, [&](const at::Tensor& t) {
      auto o = t * 0.5 + 0.25;
      return at::maximum((t + 3 * o) * o, o);
    });
  }
  SECTION("scalar operand keeps integer dtypes as Python scalars do") {
    require_close(a * 3, a, [](const at::Tensor& t) { return t * 3; });
    require_close(a.pow(2), a, [](const at::Tensor& t) { return t.pow(2); });
    TensorDict ints({{"i", at::arange(4)}}, {4});
    REQUIRE(ints.mul(2).get("i").scalar_type() == at::kLong);
    REQUIRE(ints.mul(0.5).get("i").scalar_type() == at::kFloat);
    REQUIRE(at::equal((ints + 1).get("i"), at::arange(1, 5)));
  }
  SECTION("a tensor operand is shaped like the batch: aligned with each leaf's batch dims (base.py:319 _maybe_broadcast_other)") {
    // a has batch [2, 3]: row [3] broadcasts with it, then spans each leaf's trailing dims.
    auto aligned = [&](const at::Tensor& t) {
      std::vector<int64_t> shape{1, 3};
      shape.resize(static_cast<std::size_t>(t.dim()), 1);
      return row.view(shape);
    };
    require_close(a.mul(row), a, [&](const at::Tensor& t) { return t * aligned(t); });
    auto c = a.clone();
    c.div_(row);
    require_close(c, a, [&](const at::Tensor& t) { return t / aligned(t); });
    // The case: batch [3, 4], a [3, 4, 5] leaf, an operand of [4].
    const TensorDict td({{"x", iota({3, 4, 5})}}, {3, 4});
    const at::Tensor four = at::arange(4, at::kFloat) + 1;
    REQUIRE(at::equal((td * four).get("x"), iota({3, 4, 5}) * four.view({1, 4, 1})));
    // The batch itself broadcasts (tensordict expands the tensordict first).
    const TensorDict flat({{"x", iota({2, 3})}}, {});
    const auto wide = flat * row;
    REQUIRE(wide.batch_size() == at::IntArrayRef({3}));
    REQUIRE(at::equal(wide.get("x"), iota({2, 3}).expand({3, 2, 3}) * row.view({3, 1, 1})));
    REQUIRE(TD_MESSAGE(a.mul(at::ones({4}))) ==
            "mul: a tensor operand of shape [4] does not broadcast with the batch size [2, 3] (a tensor operand is shaped like "
            "the batch)");
    TensorDict in_place(flat.clone());
    REQUIRE(TD_MESSAGE(in_place.mul_(row)) ==
            "mul_: a tensor operand of shape [3] would broadcast the batch size [] to [3], which an in-place op cannot");
  }
  SECTION("clamp, clamp_min, clamp_max, lerp, addcmul, addcdiv") {
    require_close(a.clamp(0.3, 0.6), a, [](const at::Tensor& t) { return t.clamp(0.3, 0.6); });
    require_close(a.clamp(std::nullopt, 0.5), a, [](const at::Tensor& t) { return t.clamp_max(0.5); });
    require_close(a.clamp_min(0.4), a, [](const at::Tensor& t) { return t.clamp_min(0.4); });
    require_close(a.clamp_max(b), a, [](const at::Tensor& t) { return at::minimum(t, t * 0.5 + 0.25); });
    require_close(a.lerp(b, 0.25), a, [](const at::Tensor& t) { return at::lerp(t, t * 0.5 + 0.25, 0.25); });
    require_close(a.addcmul(b, 2.0, 0.5), a, [](const at::Tensor& t) { return at::addcmul(t, t * 0.5 + 0.25, at::full_like(t, 2.0), 0.5); });
    require_close(a.addcdiv(2.0, b, 3), a, [](const at::Tensor& t) { return at::addcdiv(t, at::full_like(t, 2.0), t * 0.5 + 0.25, 3); });
    auto c = a.clone();
    c.clamp_(0.2, 0.3).lerp_(b, 0.5).addcmul_(b, b);
    require_close(c, a, [](const at::Tensor& t) {
      auto o = t * 0.5 + 0.25;
      auto l = at::lerp(t.clamp(0.2, 0.3), o, 0.5);
      return at::addcmul(l, o, o);
    });
  }
}

TEST_CASE("tensordicts with different keys follow the MissingKeys rule") {
  TensorDict a({{"x", at::ones({2})}, {"only_a", at::ones({2})}, {"n", TensorDict({{"y", at::ones({2})}}, {2})}}, {2});
  TensorDict b({{"x", at::full({2}, 2.0)}, {"only_b", at::full({2}, 5.0)}, {"n", TensorDict({{"y", at::ones({2})}}, {2})}}, {2});
  REQUIRE_THAT(TD_MESSAGE(a + b), Contains("add: key 'only_a' is in the first tensordict but not in the second") &&
                                      Contains("MissingKeys::intersection()"));
  REQUIRE_THROWS_AS(a.add(b), KeyError);
  auto inter = a.add(b, 1, MissingKeys::intersection());
  REQUIRE(inter.keys({.include_nested = true, .leaves_only = true}) == std::vector<NestedKey>{"x", {"n", "y"}});
  REQUIRE(at::equal(inter.get("x"), at::full({2}, 3.0)));
  auto filled = a.mul(b, MissingKeys::fill(10));
  REQUIRE(at::equal(filled.get("only_a"), at::full({2}, 10.0)));
  REQUIRE(at::equal(filled.get("only_b"), at::full({2}, 50.0)));
  REQUIRE(at::equal(filled.get("x"), at::full({2}, 2.0)));
  auto c = a.clone();
  c.add_(b, 1, MissingKeys::intersection());
  REQUIRE(at::equal(c.get("only_a"), at::ones({2})));
  REQUIRE(at::equal(c.get("x"), at::full({2}, 3.0)));
  TensorDict kinds({{"x", TensorDict({}, {2})}}, {2});
  REQUIRE_THAT(TD_MESSAGE(a.add(kinds, 1, MissingKeys::intersection())),
               Contains("key 'x' is a tensor in the first tensordict but a tensordict in the second"));
  TensorDict shape({{"x", at::ones({2, 7})}}, {2});
  REQUIRE_THAT(TD_MESSAGE(a.add(shape, 1, MissingKeys::intersection())), Contains("add failed for key 'x'"));
}

TEST_CASE("zero_, fill_ and apply_ write in place") {
  auto td = sample({2});
  at::Tensor a = td.get("a");
  td.fill_("a", 4);
  REQUIRE(td.get("a").eq(4).all().item<bool>());
  td.fill_("nested", 2);
  REQUIRE(td.get({"nested", "c"}).eq(2).all().item<bool>());
  td.apply_([](const at::Tensor& t) { return t + 1; });
  REQUIRE(td.get("a").eq(5).all().item<bool>());
  REQUIRE(td.get("a").data_ptr() == a.data_ptr());
  td.zero_();
  REQUIRE_FALSE(td.any());
  td.fill_(1);
  REQUIRE(td.all());
  REQUIRE_THROWS_AS(td.fill_("nope", 1), KeyError);
}

TEST_CASE("apply: filter_empty, batch size override, binary and named forms") {
  auto td = sample({2, 3});
  auto only_floats = td.apply([](const at::Tensor& t) { return t.is_floating_point() ? t : at::Tensor(); });
  REQUIRE(only_floats.keys({.include_nested = true, .leaves_only = true}) == std::vector<NestedKey>{"a", {"nested", "c"}});
  auto no_nested = td.apply([](const at::Tensor& t) { return t.dim() > 3 ? at::Tensor() : t; });
  REQUIRE(no_nested.keys({.include_nested = true}) == std::vector<NestedKey>{"a", "b"});  // "nested" emptied, then dropped
  auto first = td.apply([](const at::Tensor& t) { return t.select(0, 0); }, std::vector<int64_t>{3});
  REQUIRE(first.batch_size() == at::IntArrayRef({3}));
  REQUIRE(at::equal(first.get({"nested", "c"}), td.get({"nested", "c"}).select(0, 0)));
  REQUIRE_THAT(TD_MESSAGE(td.apply([](const at::Tensor& t) { return t.select(0, 0); }, std::vector<int64_t>{2})),
               Contains("apply: the result for key 'a' has shape [3, 4], which does not start with the batch size [2]"));
  auto sum = td.apply([](const at::Tensor& x, const at::Tensor& y) { return x + y; }, td);
  REQUIRE(at::equal(sum.get("b"), td.get("b") * 2));
  auto named = td.named_apply([](const NestedKey& key, const at::Tensor& t) { return key.size() > 1 ? t * 0 : t; });
  REQUIRE(named.get({"nested", "c"}).eq(0).all().item<bool>());
  REQUIRE(at::equal(named.get("a"), td.get("a")));
  REQUIRE_THAT(TD_MESSAGE(td.apply([](const at::Tensor& t) { return t.view({-1, 5}); })), Contains("apply failed for key 'a'"));
}

TEST_CASE("comparisons, all, any, allclose") {
  auto td = sample({2, 3});
  auto gt = td > 10;
  REQUIRE(gt.get("a").scalar_type() == at::kBool);
  REQUIRE(at::equal(gt.get("a"), td.get("a") > 10));
  REQUIRE(at::equal((td == td.clone()).get("b"), at::ones({2, 3}, at::kBool)));
  REQUIRE(at::equal((td != 0).get({"nested", "c"}), td.get({"nested", "c"}) != 0));
  REQUIRE(at::equal((td <= 5).get("a"), td.get("a") <= 5));
  REQUIRE(at::equal((td >= 5).get("a"), td.get("a") >= 5));
  const at::Tensor threshold = at::scalar_tensor(10.0);
  REQUIRE(at::equal((td < threshold).get("a"), td.get("a") < threshold));
  // A tensor operand is shaped like the batch: [5] does not fit [2, 3].
  REQUIRE_THAT(TD_MESSAGE(td < at::zeros({5})), Contains("lt: a tensor operand of shape [5] does not broadcast with the batch size [2, 3]"));
  // One that fits but that the leaf op refuses names the key.
  REQUIRE_THAT(TD_MESSAGE(td < at::zeros({2, 3}, at::kComplexFloat)), Contains("lt failed for key 'a'"));
  REQUIRE((td == td).all());
  REQUIRE_FALSE((td != td).any());
  REQUIRE((td > -1).all());
  auto by_row = (td > 30).any(1);
  REQUIRE(by_row.batch_size() == at::IntArrayRef({2}));
  REQUIRE(at::equal(by_row.get("a"), (td.get("a") > 30).any(1)));
  REQUIRE(at::equal((td > 30).all(-1).get("b"), (td.get("b") > 30).all(1)));
  REQUIRE(td.allclose(td.clone()));
  REQUIRE_FALSE(td.allclose(td + 1));
  REQUIRE_FALSE(td.allclose(td.exclude({"a"})));
}

TEST_CASE("where, masked_fill, masked_select, gather") {
  auto td = sample({2, 3});
  auto mask = at::tensor({1, 0, 1, 0, 0, 1}).reshape({2, 3}).to(at::kBool);
  auto w = td.where(mask, -1);
  REQUIRE(at::equal(w.get("a"), at::where(mask.unsqueeze(-1), td.get("a"), -1)));
  REQUIRE(at::equal(w.get("b"), at::where(mask, td.get("b"), -1)));
  auto w2 = td.where(mask, td * 0);
  REQUIRE(at::equal(w2.get({"nested", "c"}), at::where(mask.unsqueeze(-1).unsqueeze(-1), td.get({"nested", "c"}), 0)));
  auto cond = td > 20;
  auto w3 = td.where(cond, 0);
  REQUIRE(at::equal(w3.get("a"), at::where(td.get("a") > 20, td.get("a"), 0)));

  auto f = td.masked_fill(mask, 7);
  REQUIRE(at::equal(f.get("a"), td.get("a").masked_fill(mask.unsqueeze(-1), 7)));
  auto c = td.clone();
  c.masked_fill_(mask, 7);
  REQUIRE(c.allclose(f));

  auto sel = td.masked_select(mask);
  REQUIRE(sel.batch_size() == at::IntArrayRef({3}));
  REQUIRE(at::equal(sel.get("b"), td.get("b").masked_select(mask)));
  REQUIRE_THAT(TD_MESSAGE(td.masked_select(mask.to(at::kLong))), Contains("must be a bool tensor"));

  auto idx = at::tensor({2, 0, 1, 1}, at::kLong).reshape({2, 2});
  auto g = td.gather(1, idx);
  REQUIRE(g.batch_size() == at::IntArrayRef({2, 2}));
  REQUIRE(at::equal(g.get("b"), td.get("b").gather(1, idx)));
  REQUIRE(at::equal(g.get("a"), td.get("a").gather(1, idx.unsqueeze(-1).expand({2, 2, 4}))));
  REQUIRE(g.get_td("nested").batch_size() == at::IntArrayRef({2, 2}));
  REQUIRE_THAT(TD_MESSAGE(td.gather(1, at::zeros({2}, at::kLong))), Contains("gather: the index has 1 dims but the tensordict has 2"));
  REQUIRE_THAT(TD_MESSAGE(td.gather(2, idx)), Contains("gather: dim 2 is out of range"));
}
