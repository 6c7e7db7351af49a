// SubTensorDict: a view at an index whose writes reach the source.
#include "helpers.h"

#include <nlohmann/json.hpp>

using namespace tensordict;
using namespace td_test;
using Catch::Matchers::Contains;
using at::indexing::Slice;

TEST_CASE("the compact repr of a sub-view names its class, and its nested sub-views' class") {
  TensorDict td({{"a", at::zeros({4, 3})}, {"b", TensorDict({{"c", at::zeros({4, 2}, at::kLong)}}, {4})}}, {4});
  td.set_non_tensor("s", "x");
  // tensordict 0.15.3 printing td._get_sub_tensordict(slice(1, 3)) of the same data (run in the test venv)
  CHECK(repr(td.get_sub_tensordict({Slice(1, 3)})) ==
        "_SubTensorDict(batch_size=[2], fields={\n"
        "    a: f32[3],\n"
        "    b: _SubTensorDict{c: i64[2]},\n"
        "    s: str})");
}

TEST_CASE("a sub-view reads the source at the index") {
  auto td = sample({4, 3});
  auto sub = td.get_sub_tensordict({Slice(1, 3)});
  REQUIRE(sub.kind() == Kind::SubView);
  REQUIRE(sub.batch_size() == at::IntArrayRef({2, 3}));
  REQUIRE(sub.source().impl() == td.impl());
  REQUIRE(at::equal(sub.get("a"), td.get("a").index({Slice(1, 3)})));
  REQUIRE(sub.get_td("nested").kind() == Kind::SubView);
  REQUIRE(at::equal(sub.get({"nested", "c"}), td.get({"nested", "c"}).index({Slice(1, 3)})));
  REQUIRE(sub.keys({.include_nested = true, .leaves_only = true}) == td.keys({.include_nested = true, .leaves_only = true}));
}

TEST_CASE("set of an existing key writes into the source at the index") {
  auto td = sample({4, 3});
  auto sub = SubTensorDict(td, {Slice(1, 3)});
  sub.set("a", at::full({2, 3, 4}, -1.0));
  REQUIRE(td.get("a").index({Slice(1, 3)}).eq(-1).all().item<bool>());
  REQUIRE(td.get("a").index({0}).ne(-1).all().item<bool>());
  sub.set({"nested", "c"}, at::zeros({2, 3, 2, 3}));
  REQUIRE(td.get({"nested", "c"}).index({2}).eq(0).all().item<bool>());
  REQUIRE(td.get({"nested", "c"}).index({3}).ne(0).any().item<bool>());
  sub.set_("b", at::full({2, 3}, 9, at::kLong));
  REQUIRE(td.get("b").index({1}).eq(9).all().item<bool>());
  sub.index_put_({0}, 4);
  REQUIRE(td.get("b").index({1}).eq(4).all().item<bool>());
  sub.mul_(2);
  REQUIRE(td.get("b").index({1}).eq(8).all().item<bool>());
}

TEST_CASE("set of a new key creates it in the source, zero outside the index") {
  auto td = sample({4});
  auto sub = td.get_sub_tensordict({at::tensor({3, 0}, at::kLong)});
  sub.set("fresh", at::full({2, 5}, 2.0));
  REQUIRE(td.get("fresh").sizes() == at::IntArrayRef({4, 5}));
  REQUIRE(at::equal(td.get("fresh").sum(1), at::tensor({10.f, 0.f, 0.f, 10.f})));
  sub.set({"deep", "y"}, at::ones({2}));
  REQUIRE(at::equal(td.get({"deep", "y"}), at::tensor({1.f, 0.f, 0.f, 1.f})));
  // Advanced indices copy on read: writes still reach the source.
  sub.set_("a", at::full({2, 4}, 3.0));
  REQUIRE(td.get("a").index({3}).eq(3).all().item<bool>());
  sub.add_(1);
  REQUIRE(td.get("a").index({0}).eq(4).all().item<bool>());
  REQUIRE(td.get("a").index({1}).ne(4).any().item<bool>());
  REQUIRE_THAT(TD_MESSAGE(sub.set("bad", at::zeros({3}))), Contains("'bad'") && Contains("[2]"));
}

TEST_CASE("nested sub-views and materialising") {
  auto td = sample({4, 3});
  auto outer = td.get_sub_tensordict({Slice(0, 3)});
  auto inner = outer.get_sub_tensordict({1});
  REQUIRE(inner.batch_size() == at::IntArrayRef({3}));
  inner.set("b", at::full({3}, -7, at::kLong));
  REQUIRE(td.get("b").index({1}).eq(-7).all().item<bool>());
  TensorDict copy = outer.to_tensordict();
  REQUIRE(copy.kind() == Kind::Dense);
  copy.get("a").fill_(1000);
  REQUIRE_FALSE(td.get("a").eq(1000).any().item<bool>());
  REQUIRE(at::equal(copy.get("b"), td.get("b").index({Slice(0, 3)})));
  REQUIRE_THAT(TD_MESSAGE(SubTensorDict(td, {9})), Contains("index 9 is out of range"));
  REQUIRE_THAT(TD_MESSAGE(outer.set_batch_size({3})), Contains("follow its source and index"));
}
