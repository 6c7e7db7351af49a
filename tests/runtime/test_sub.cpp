// SubTensorDict: a view at an index whose writes reach the source.
#include "helpers.h"

using namespace tensordict;
using namespace td_test;
using Catch::Matchers::Contains;
using at::indexing::Slice;

TEST_CASE("a sub-view reads the source at the index") {
  auto td = sample({4, 3});
  auto sub = td.get_sub_tensordict({Slice(1, 3)});
  REQUIRE(sub.type_name() == "_SubTensorDict");
  REQUIRE(sub.batch_size() == at::IntArrayRef({2, 3}));
  REQUIRE(sub.source().impl() == td.impl());
  REQUIRE(at::equal(sub.get("a"), td.get("a").index({Slice(1, 3)})));
  REQUIRE(sub.get_td("nested").type_name() == "_SubTensorDict");
  REQUIRE(at::equal(sub.get({"nested", "c"}), td.get({"nested", "c"}).index({Slice(1, 3)})));
  REQUIRE(sub.keys(true, true) == td.keys(true, true));
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
  REQUIRE(copy.type_name() == "TensorDict");
  copy.get("a").fill_(1000);
  REQUIRE_FALSE(td.get("a").eq(1000).any().item<bool>());
  REQUIRE(at::equal(copy.get("b"), td.get("b").index({Slice(0, 3)})));
  REQUIRE_THAT(TD_MESSAGE(SubTensorDict(td, {9})), Contains("index 9 is out of range"));
  REQUIRE_THAT(TD_MESSAGE(outer.set_batch_size({3})), Contains("follow its source and index"));
}

// Ports tensordict's test_methods.py::test_write_on_subtd on the lazy-stack
// fixture: _SubTensorDict over a LazyStackedTensorDict writes every value
// through the stack's _set_at_str into the members (_td.py, _SubTensorDict
// _set_str / _set_at_str / update).
TEST_CASE("set, set_, update and index_put_ through a sub-tensordict of a lazy stack write into the members", "[sub][lazy]") {
  std::vector<TensorDictBase> ms;
  for (int64_t i = 0; i < 3; ++i) ms.push_back(sample({4}));
  const std::vector<TensorDictBase> before = {ms[0].clone(), ms[1].clone(), ms[2].clone()};
  auto lazy = lazy_stack(ms, 0);
  auto sub = lazy.get_sub_tensordict({Slice(0, 2), 1});  // row 1 of members 0 and 1
  REQUIRE(sub.batch_size() == at::IntArrayRef({2}));

  sub.set("a", at::full({2, 4}, -1.0));
  sub.set_({"nested", "c"}, at::full({2, 2, 3}, -2.0));
  sub.update(TensorDict({{"b", at::full({2}, -3, at::kLong)}, {"nested", TensorDict({{"c", at::full({2, 2, 3}, -4.0)}}, {2})}}, {2}));
  sub.set("fresh", at::ones({2}));
  for (int64_t i = 0; i < 2; ++i) {
    REQUIRE(ms[i].get("a").index({1}).eq(-1).all().item<bool>());
    REQUIRE(ms[i].get("b").index({1}).item<int64_t>() == -3);
    REQUIRE(ms[i].get({"nested", "c"}).index({1}).eq(-4).all().item<bool>());
    REQUIRE(at::equal(ms[i].get("fresh"), at::tensor({0.f, 1.f, 0.f, 0.f})));
    // Only row 1 changed.
    for (int64_t row : {0, 2, 3}) {
      REQUIRE(at::equal(ms[i].get("a").index({row}), before[i].get("a").index({row})));
      REQUIRE(at::equal(ms[i].get({"nested", "c"}).index({row}), before[i].get({"nested", "c"}).index({row})));
    }
  }
  REQUIRE(at::equal(ms[2].get("a"), before[2].get("a")));
  REQUIRE(at::equal(ms[2].get("fresh"), at::zeros({4})));

  // An advanced index (a copy on read) writes through as well, as do
  // index_put_ and in-place math on the view.
  auto picked = lazy.get_sub_tensordict({at::tensor({2, 0}, at::kLong)});
  picked.set_("b", at::full({2, 4}, 5, at::kLong));
  REQUIRE(ms[2].get("b").eq(5).all().item<bool>());
  REQUIRE(ms[0].get("b").eq(5).all().item<bool>());
  REQUIRE(ms[1].get("b").index({1}).item<int64_t>() == -3);
  picked.index_put_({0}, 6);
  REQUIRE(ms[2].get("b").eq(6).all().item<bool>());
  REQUIRE(ms[0].get("b").eq(5).all().item<bool>());
  picked.add_(1);
  REQUIRE(ms[2].get("b").eq(7).all().item<bool>());
  REQUIRE(ms[0].get("b").eq(6).all().item<bool>());

  // A sub-view of a copying sub-view still reaches the source.
  auto inner = picked.get_sub_tensordict({1});
  inner.set("b", at::full({4}, 8, at::kLong));
  REQUIRE(ms[0].get("b").eq(8).all().item<bool>());
}

// tensordict's _SubTensorDict.update raises ValueError ("Tried to replace a
// tensordict with an incompatible object", _td.py:4374) where the source holds
// a tensordict and the update a tensor: a view cannot replace its source's
// entry.
TEST_CASE("update of a sub-tensordict refuses a tensor where the source holds a tensordict, naming the key", "[sub]") {
  auto td = sample({4});
  td.set({"nested", "deep", "x"}, at::ones({4}));
  const TensorDict before(td.clone());
  auto sub = td.get_sub_tensordict({Slice(0, 2)});

  const std::string top = TD_MESSAGE(sub.update(TensorDict({{"nested", at::ones({2})}}, {2})));
  REQUIRE_THAT(top, Contains("cannot set key 'nested'") && Contains("holds a tensordict") && Contains("expected a tensordict, got a tensor"));
  REQUIRE_THROWS_AS(sub.update(TensorDict({{"nested", at::ones({2})}}, {2})), std::invalid_argument);
  const std::string deep = TD_MESSAGE(sub.update(TensorDict({{"nested", TensorDict({{"deep", at::ones({2})}}, {2})}}, {2})));
  REQUIRE_THAT(deep, Contains("cannot set key ('nested', 'deep')") && Contains("expected a tensordict, got a tensor"));
  // The other way round: a tensordict where the source holds a tensor.
  REQUIRE_THAT(TD_MESSAGE(sub.update(TensorDict({{"a", TensorDict({}, {2})}}, {2}))),
               Contains("cannot set key 'a'") && Contains("expected a tensor, got a tensordict"));

  REQUIRE(td.get_td("nested").type_name() == "TensorDict");
  REQUIRE(td.keys(true, true) == before.keys(true, true));
  REQUIRE(td.allclose(before));
}
