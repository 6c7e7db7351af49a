// Ports of tensordict's tests of writes through a sub-tensordict (the values
// reach the source, and a view cannot replace its source's entry) and of
// non-tensor data (stacking, and indexed writes of non-tensor entries).
#include "../builders.h"

#include <nlohmann/json.hpp>
#include "fixtures.h"

using namespace conformance;
using at::indexing::Slice;
using Catch::Matchers::Contains;
using tensordict::cat;
using tensordict::Json;
using tensordict::lazy_stack;
using tensordict::NonTensorData;
using tensordict::stack;

using td_test::mask;
using td_test::sample;

// Ports tensordict's test_methods.py::test_write_on_subtd on the lazy-stack
// fixture: _SubTensorDict over a LazyStackedTensorDict writes every value
// through the stack's _set_at_str into the members (_td.py, _SubTensorDict
// _set_str / _set_at_str / update).
TEST_CASE(
    "set, set_, update and index_put_ through a sub-tensordict of a lazy stack write into the members "
    "(test_methods.py::test_write_on_subtd)",
    "[conformance][test_methods.py]") {
  std::vector<TensorDict> ms;
  for (int64_t i = 0; i < 3; ++i) ms.push_back(sample({4}));
  const std::vector<TensorDict> before = {ms[0].clone(), ms[1].clone(), ms[2].clone()};
  auto lazy = lazy_stack(ms, 0);
  auto sub = lazy.get_sub_tensordict({Slice(0, 2), 1});  // row 1 of members 0 and 1
  REQUIRE(sub.batch_size() == at::IntArrayRef({2}));

  sub.set("a", at::full({2, 4}, -1.0));
  sub.set_({"nested", "c"}, at::full({2, 2, 3}, -2.0));
  sub.update(TensorDict(
      {{"b", at::full({2}, -3, at::kLong)}, {"nested", TensorDict({{"c", at::full({2, 2, 3}, -4.0)}}, {2})}}, {2}));
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
TEST_CASE(
    "update of a sub-tensordict refuses a tensor where the source holds a tensordict, naming the key (_td.py:4374)",
    "[conformance]") {
  auto td = sample({4});
  td.set({"nested", "deep", "x"}, at::ones({4}));
  const TensorDict before(td.clone());
  auto sub = td.get_sub_tensordict({Slice(0, 2)});

  const std::string top = CONF_MESSAGE(sub.update(TensorDict({{"nested", at::ones({2})}}, {2})));
  REQUIRE_THAT(top, Contains("cannot set key 'nested'") && Contains("Tried to replace a tensordict with") &&
                        Contains("holds a tensordict") &&
                        Contains("expected a tensordict, got a tensor"));
  REQUIRE_THROWS_AS(sub.update(TensorDict({{"nested", at::ones({2})}}, {2})), std::invalid_argument);
  const std::string deep =
      CONF_MESSAGE(sub.update(TensorDict({{"nested", TensorDict({{"deep", at::ones({2})}}, {2})}}, {2})));
  REQUIRE_THAT(deep, Contains("cannot set key ('nested', 'deep')") && Contains("expected a tensordict, got a tensor"));
  // The other way round: a tensordict where the source holds a tensor.
  REQUIRE_THAT(CONF_MESSAGE(sub.update(TensorDict({{"a", TensorDict({}, {2})}}, {2}))),
               Contains("cannot set key 'a'") && Contains("expected a tensor, got a tensordict"));

  REQUIRE(td.get_td("nested").kind() == tensordict::Kind::Dense);
  REQUIRE(td.keys({.include_nested = true, .leaves_only = true}) == before.keys({.include_nested = true, .leaves_only = true}));
  REQUIRE(td.allclose(before));
}

// Ports test_nontensor.py::TestNonTensorData::test_stack under
// set_capture_non_tensor_stack(True), the rule this runtime follows (docs/differences.md:
// tensordict's default gives a NonTensorStack even for equal values): equal
// values stay one NonTensorData, different values give a stack, which
// indexing, unbind, transpose and cat then follow.
TEST_CASE(
    "stacking equal values keeps one value, different values give a stack (test_nontensor.py::test_stack, "
    "capture_non_tensor_stack=True)",
    "[conformance][test_nontensor.py]") {
  TensorDict a({{"x", at::zeros({2})}}, {2});
  TensorDict b({{"x", at::ones({2})}}, {2});
  a.set_non_tensor("same", "v");
  b.set_non_tensor("same", "v");
  a.set_non_tensor("diff", "a");
  b.set_non_tensor("diff", "b");
  auto s = stack({a, b}, 0);
  REQUIRE(s.get_non_tensor("same") == "v");
  REQUIRE_FALSE(s.get_value("same")->non_tensor().is_stack());
  REQUIRE(s.get_value("diff")->non_tensor().is_stack());
  REQUIRE(s.get_non_tensor("diff") == Json::parse(R"([["a","a"],["b","b"]])"));
  // Indexing a stack selects elements; a single remaining value collapses.
  REQUIRE(s.index({1}).get_non_tensor("diff") == "b");
  REQUIRE_FALSE(s.index({1}).get_value("diff")->non_tensor().is_stack());
  REQUIRE(s.index({Slice(), 0}).get_non_tensor("diff") == Json::parse(R"(["a","b"])"));
  auto parts = s.unbind(0);
  REQUIRE(parts[0].get_non_tensor("diff") == "a");
  REQUIRE(s.transpose(0, 1).get_non_tensor("diff") == Json::parse(R"([["a","b"],["a","b"]])"));
  auto c = cat({s, s.index({Slice(0, 1)})}, 0);
  REQUIRE(c.get_non_tensor("diff") == Json::parse(R"([["a","a"],["b","b"],["a","a"]])"));
  auto s1 = stack({a, b}, 1);
  REQUIRE(s1.get_non_tensor("diff") == Json::parse(R"([["a","b"],["a","b"]])"));
  REQUIRE(s.clone().get_non_tensor("diff") == s.get_non_tensor("diff"));

  TensorDict c_tensor({{"x", at::zeros({2})}, {"diff", at::zeros({2})}}, {2});
  c_tensor.set_non_tensor("same", "v");
  REQUIRE_THAT(CONF_MESSAGE(stack({a, c_tensor})),
               Contains("key 'diff' is non-tensor data in tensordict 0 but a tensor in tensordict 1"));
}

// Ports tensordict's test_methods.py::test_masking_set on the
// td_with_non_tensor fixture: TensorDict.__setitem__ with a tensordict value
// writes non-tensor entries at the index too (_td.py _set_at_str: the
// destination becomes a NonTensorStack); a key the destination lacks holds
// None outside the index, as a new tensor holds zeros.
TEST_CASE("index_put_ writes non-tensor data at the index, masks included (test_methods.py::test_masking_set)",
          "[conformance][test_methods.py]") {
  const at::Tensor m = mask({1, 0, 1, 0});
  TensorDict value({{"a", at::ones({2})}, {"s", NonTensorData::stack({"x", "y"}, {2})}}, {2});
  value.set({"nested", "t"}, NonTensorData::stack({"u", "v"}, {2}));

  TensorDict td({{"a", at::zeros({4})}, {"s", NonTensorData::stack({"a", "b", "c", "d"}, {4})}}, {4});
  td.set({"nested", "t"}, NonTensorData(Json("w")));
  td.index_put_({m}, value);
  REQUIRE(at::equal(td.get("a"), at::tensor({1.f, 0.f, 1.f, 0.f})));
  REQUIRE(td.get_non_tensor("s") == Json::array({"x", "b", "y", "d"}));
  REQUIRE(td.get_non_tensor({"nested", "t"}) == Json::array({"u", "w", "v", "w"}));

  // A single value becomes a stack; writing the value it already holds keeps it single.
  TensorDict single({{"a", at::zeros({4})}, {"s", NonTensorData(Json("z"))}}, {4});
  single.index_put_({Slice(1, 3)}, value.exclude({"nested"}));
  REQUIRE(single.get_non_tensor("s") == Json::array({"z", "x", "y", "z"}));
  TensorDict same({{"a", at::zeros({4})}, {"s", NonTensorData(Json("z"))}}, {4});
  same.index_put_({m}, TensorDict({{"s", NonTensorData(Json("z"))}}, {2}));
  REQUIRE_FALSE(same.get_value("s")->non_tensor().is_stack());

  // A missing key: None outside the index.
  TensorDict missing({{"a", at::zeros({4})}}, {4});
  missing.index_put_({m}, value.exclude({"nested"}));
  REQUIRE(missing.get_non_tensor("s") == Json::array({"x", nullptr, "y", nullptr}));

  // Indexed writes are allowed on a locked tensordict, as for tensors.
  TensorDict locked({{"a", at::zeros({4})}, {"s", NonTensorData(Json("z"))}}, {4});
  locked.lock_();
  locked.index_put_({m}, value.exclude({"nested"}));
  REQUIRE(locked.get_non_tensor("s") == Json::array({"x", "z", "y", "z"}));

  // A lazy stack writes into its members; a sub-view into its source.
  TensorDict m0({{"s", NonTensorData::stack({"p", "q", "r"}, {3})}}, {3});
  TensorDict m1({{"s", NonTensorData(Json("z"))}}, {3});
  auto lazy = lazy_stack({m0, m1}, 0);
  lazy.index_put_({mask({1, 0, 0, 0, 0, 1}).reshape({2, 3})},
                  TensorDict({{"s", NonTensorData::stack({"x", "y"}, {2})}}, {2}));
  REQUIRE(m0.get_non_tensor("s") == Json::array({"x", "q", "r"}));
  REQUIRE(m1.get_non_tensor("s") == Json::array({"z", "z", "y"}));

  TensorDict source({{"s", NonTensorData::stack({"a", "b", "c", "d"}, {4})}}, {4});
  auto sub = source.get_sub_tensordict({Slice(1, 4)});
  sub.index_put_({mask({1, 0, 1})}, TensorDict({{"s", NonTensorData::stack({"x", "y"}, {2})}}, {2}));
  REQUIRE(source.get_non_tensor("s") == Json::array({"a", "x", "c", "y"}));
  sub.set_non_tensor("s", "k");
  REQUIRE(source.get_non_tensor("s") == Json::array({"a", "k", "k", "k"}));

  REQUIRE_THAT(CONF_MESSAGE(td.index_put_({m}, TensorDict({{"a", NonTensorData(Json("q"))}}, {2}))),
               Contains("index_put_ failed for key 'a'") && Contains("tensor"));
}
