// A scalar or tensor on the left, bitwise and logical ops, mod and
// param_count. Expected values are tensordict 0.15.3's on the same data.
#include "helpers.h"

#include <nlohmann/json.hpp>

using namespace tensordict;
using namespace td_test;

namespace {

// a: float [3, 2]; b.c: int64 [3]; batch [3].
TensorDict mixed() {
  return TensorDict({{"a", at::tensor({1., 2., 3., 4., -5., 6.}, at::kFloat).view({3, 2})},
                     {"b", TensorDict({{"c", at::tensor({1, 2, -3}, at::kLong)}}, {3})}},
                    {3});
}
// x: int64 [4]; m: bool [4]; batch [4].
TensorDict ints() {
  return TensorDict({{"x", at::tensor({1, 2, 3, 12}, at::kLong)},
                     {"m", at::tensor(std::vector<uint8_t>{1, 0, 1, 0}).to(at::kBool)}},
                    {4});
}
std::vector<double> values(const at::Tensor& t) {
  const at::Tensor d = t.to(at::kDouble).contiguous();
  return {d.data_ptr<double>(), d.data_ptr<double>() + d.numel()};
}

}  // namespace

TEST_CASE("a scalar or a tensor on the left (test_misc.py::TestGeneric::test_r_ops)", "[operators][test_misc.py]") {
  const TensorDict td = mixed();
  TensorDict r = 1 - td;
  CHECK(values(r.get("a")) == std::vector<double>{0, -1, -2, -3, 6, -5});
  CHECK(values(r.get({"b", "c"})) == std::vector<double>{0, -1, 4});
  CHECK(r.get({"b", "c"}).scalar_type() == at::kLong);
  CHECK(values((2 * td).get("a")) == std::vector<double>{2, 4, 6, 8, -10, 12});
  CHECK(values((2.5 + td).get({"b", "c"})) == std::vector<double>{3.5, 4.5, -0.5});
  // 1 / td is td.reciprocal() * 1: integer leaves become float.
  r = 1 / td;
  CHECK(r.get({"b", "c"}).scalar_type() == at::kFloat);
  CHECK(at::allclose(r.get({"b", "c"}), at::tensor({1.f, 0.5f, -1.f / 3})));
  CHECK(at::allclose(r.get("a"), 1 / td.get("a")));
  // A batch-shaped tensor on the left is aligned with each leaf's batch dims.
  const at::Tensor t = at::tensor({10.f, 20.f, 30.f});
  r = t - td;
  CHECK(values(r.get("a")) == std::vector<double>{9, 8, 17, 16, 35, 24});
  CHECK(values(r.get({"b", "c"})) == std::vector<double>{9, 18, 33});
  CHECK(values(td.rsub(1, 2).get("a")) == std::vector<double>{-1, -3, -5, -7, 11, -11});
  // The Python test: each form gives a tensordict.
  TensorDict one({{"a", at::scalar_tensor(1, at::kLong)}});
  for (const TensorDict& out : {0 * one, at::zeros({}) * one, 0 + one, at::zeros({}) + one, 0 - one,
                                at::zeros({}) - one, 0 / one, at::zeros({}) / one}) {
    CHECK(out.keys() == std::vector<NestedKey>{"a"});
  }
  TensorDict yes({{"a", at::scalar_tensor(true, at::kBool)}});
  CHECK((false | yes).get("a").item<bool>());
  CHECK((at::zeros({}, at::kBool) ^ yes).get("a").item<bool>());
}

TEST_CASE("&, |, ^, ~ per leaf: bitwise on integers, logical on bools (test_misc.py::TestGeneric::test_builtins)",
          "[operators][test_misc.py]") {
  const TensorDict td = ints();
  CHECK(values((td & 6).get("x")) == std::vector<double>{0, 2, 2, 4});
  CHECK(values((6 & td).get("x")) == std::vector<double>{0, 2, 2, 4});
  CHECK(values((td | 1).get("x")) == std::vector<double>{1, 3, 3, 13});
  CHECK(values((td ^ 5).get("x")) == std::vector<double>{4, 7, 6, 9});
  CHECK(values((~td).get("x")) == std::vector<double>{-2, -3, -4, -13});
  CHECK(values((~td).get("m")) == std::vector<double>{0, 1, 0, 1});
  CHECK(values((td & td).get("m")) == std::vector<double>{1, 0, 1, 0});
  CHECK((~td).get("m").scalar_type() == at::kBool);
  // Another tensordict must have the same keys.
  CHECK_THROWS_AS(td & td.exclude({"m"}), KeyError);
  CHECK_THROWS_AS(td | td.exclude({"m"}), KeyError);
  // ~ of a float leaf is libtorch's error, with the op and key in front.
  CHECK_THROWS_WITH(~mixed(), Catch::Matchers::Contains("bitwise_not") && Catch::Matchers::Contains("'a'"));
}

TEST_CASE("bitwise_and and logical_and (test_misc.py::TestPointwiseOps::test_broadcast)", "[operators][test_misc.py]") {
  const TensorDict td = ints();
  CHECK(values(td.bitwise_and(td).get("x")) == std::vector<double>{1, 2, 3, 12});
  const TensorDict logical = td.logical_and(td);
  CHECK(logical.get("x").scalar_type() == at::kBool);
  CHECK(values(logical.get("x")) == std::vector<double>{1, 1, 1, 1});
  CHECK(values(td.logical_and(at::tensor({0, 1, 1, 0})).get("x")) == std::vector<double>{0, 1, 1, 0});
  // A batch-shaped bool tensor broadcast over [2, 4].
  const TensorDict wide = ints().expand({2, 4}).clone();
  const TensorDict ba = wide.to_bool().bitwise_and(at::ones({2, 4}, at::kBool));
  CHECK(ba.batch_size() == at::IntArrayRef{2, 4});
  CHECK((ba == wide.to_bool()).all());
  CHECK_THROWS_AS(td.bitwise_and(td.exclude({"m"})), KeyError);
}

TEST_CASE("mod: the remainder with the divisor's sign, as %", "[operators]") {
  const TensorDict td = mixed();
  CHECK(values((td % 3).get("a")) == std::vector<double>{1, 2, 0, 1, 1, 0});
  CHECK(values((td % 3).get({"b", "c"})) == std::vector<double>{1, 2, 0});
  CHECK(values((td % -4).get("a")) == std::vector<double>{-3, -2, -1, 0, -1, -2});
  CHECK(values(td.mod(td).get("a")) == std::vector<double>{0, 0, 0, 0, 0, 0});
  // tensordict: KeyError "keys in tensordicts mismatch..."
  const TensorDict only_a({{"a", at::ones({3, 2})}}, {3});
  CHECK_THROWS_AS(td.mod(only_a), KeyError);
  CHECK(values(td.mod(only_a, MissingKeys::intersection()).get("a")) == std::vector<double>{0, 0, 0, 0, 0, 0});
}

TEST_CASE("param_count (test_generic.py::TestGeneric::test_param_count)", "[operators][test_generic.py]") {
  TensorDict td({{"a", at::randn({3})}, {"b", at::randn({6})}});
  td.set("c", td.get("a"));
  CHECK(td.param_count() == 12);
  CHECK(td.param_count({.count_duplicates = false}) == 9);
  // The docstring's case: non-tensor data is not counted, views count twice.
  const at::Tensor x = at::zeros({6});
  TensorDict doc({{"a", x}, {"b", x}, {"c", at::zeros({2, 3})}, {"v", x.view({2, 3})}});
  doc.set_non_tensor("s", "text");
  CHECK(doc.param_count() == 24);
  CHECK(doc.param_count({.count_duplicates = false}) == 18);
}
