// Non-tensor data: NonTensorData and NonTensorStack entries.
#include "helpers.h"

using namespace tensordict;
using namespace td_test;
using Catch::Matchers::Contains;
using at::indexing::Slice;

TEST_CASE("set_non_tensor and get_non_tensor hold JSON-like values") {
  TensorDict td({{"x", at::zeros({3})}}, {3});
  td.set_non_tensor("name", "zero!");
  td.set_non_tensor({"meta", "episode"}, 7);
  td.set_non_tensor("cfg", Json{{"lr", 0.5}, {"tags", {"a", "b"}}, {"on", true}});
  REQUIRE(td.get_non_tensor("name") == "zero!");
  REQUIRE(td.get_non_tensor({"meta", "episode"}) == 7);
  REQUIRE(td.get_non_tensor("cfg")["tags"][1] == "b");
  REQUIRE(td.get_non_tensor("missing", Json("fallback")) == "fallback");
  REQUIRE(td.keys(true, true) == std::vector<NestedKey>{"x", "name", {"meta", "episode"}, "cfg"});
  REQUIRE_FALSE(TensorDict({{"n", NonTensorData(1)}}, {}).is_empty());
  REQUIRE_THAT(TD_MESSAGE(td.get("name")), Contains("'name' holds non-tensor data") && Contains("get_non_tensor"));
  REQUIRE_THAT(TD_MESSAGE(td.get_non_tensor("x")), Contains("'x' holds a tensor, not non-tensor data"));
  REQUIRE_THAT(TD_MESSAGE(td.get_non_tensor("nope")), Contains("'nope' not found"));
}

TEST_CASE("non-tensor data is carried through indexing, shape ops and copies") {
  TensorDict td({{"x", at::zeros({4, 2})}}, {4, 2});
  td.set_non_tensor("s", "text");
  REQUIRE(td.index({1}).get_non_tensor("s") == "text");
  REQUIRE(td.reshape({8}).get_non_tensor("s") == "text");
  REQUIRE(td.clone().get_non_tensor("s") == "text");
  REQUIRE(td.to(at::kDouble).get_non_tensor("s") == "text");
  for (const auto& part : td.unbind(1)) REQUIRE(part.get_non_tensor("s") == "text");
  REQUIRE(td.select({"s"}).get_non_tensor("s") == "text");
  REQUIRE(td.flatten_keys().get_non_tensor("s") == "text");
}

TEST_CASE("stacking equal values keeps one value; different values give a stack") {
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
  REQUIRE_THAT(TD_MESSAGE(stack({a, c_tensor})), Contains("key 'diff' is non-tensor data in tensordict 0 but a tensor in tensordict 1"));
}

TEST_CASE("a non-tensor stack must span the batch it is set into") {
  TensorDict td({}, {3});
  td.set("ok", NonTensorData::stack({"a", "b", "c"}, {3}));
  REQUIRE(td.get_non_tensor("ok") == Json::parse(R"(["a","b","c"])"));
  REQUIRE_THAT(TD_MESSAGE(td.set("bad", NonTensorData::stack({"a", "b"}, {2}))),
               Contains("'bad'") && Contains("spans [2]") && Contains("[3]"));
  REQUIRE_THAT(TD_MESSAGE(NonTensorData::stack({"a"}, {2})), Contains("needs 2 values, got 1"));
}

TEST_CASE("non-tensor reprs follow tensordict") {
  TensorDict td({{"a_tensor", at::zeros({3})},
                 {"nested", TensorDict({{"a_tensor", at::zeros({3})}, {"a_string", NonTensorData("zero!")}}, {3})}},
                {3});
  const std::string text = repr(td);
  REQUIRE_THAT(text, Contains("\n                a_string: NonTensorData(data=zero!, batch_size=torch.Size([3]), device=None),\n"
                              "                a_tensor: Tensor(shape=torch.Size([3]), device=cpu, dtype=torch.float32, is_shared=False)},"));
  TensorDict st({}, {2});
  st.set("s", NonTensorData::stack({"x", "y"}, {2}));
  REQUIRE_THAT(repr(st), Contains("s: NonTensorStack(\n            ['x', 'y'],\n            batch_size=torch.Size([2]),\n            device=None)"));
  REQUIRE(python_repr(Json::parse(R"({"k": [1, 2.5, null, true, "it's"]})")) == R"({'k': [1, 2.5, None, True, "it's"]})");
  REQUIRE(python_str(Json(1.0)) == "1.0");
  REQUIRE(python_str(Json("plain")) == "plain");
}

// Ports tensordict's test_methods.py::test_masking_set on the
// td_with_non_tensor fixture: TensorDict.__setitem__ with a tensordict value
// writes non-tensor entries at the index too (_td.py _set_at_str: the
// destination becomes a NonTensorStack); a key the destination lacks holds
// None outside the index, as a new tensor holds zeros.
TEST_CASE("index_put_ writes non-tensor data at the index (masks included)", "[non_tensor][index_put_]") {
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
  lazy.index_put_({mask({1, 0, 0, 0, 0, 1}).reshape({2, 3})}, TensorDict({{"s", NonTensorData::stack({"x", "y"}, {2})}}, {2}));
  REQUIRE(m0.get_non_tensor("s") == Json::array({"x", "q", "r"}));
  REQUIRE(m1.get_non_tensor("s") == Json::array({"z", "z", "y"}));

  TensorDict source({{"s", NonTensorData::stack({"a", "b", "c", "d"}, {4})}}, {4});
  auto sub = source.get_sub_tensordict({Slice(1, 4)});
  sub.index_put_({mask({1, 0, 1})}, TensorDict({{"s", NonTensorData::stack({"x", "y"}, {2})}}, {2}));
  REQUIRE(source.get_non_tensor("s") == Json::array({"a", "x", "c", "y"}));
  sub.set_non_tensor("s", "k");
  REQUIRE(source.get_non_tensor("s") == Json::array({"a", "k", "k", "k"}));

  REQUIRE_THAT(TD_MESSAGE(td.index_put_({m}, TensorDict({{"a", NonTensorData(Json("q"))}}, {2}))),
               Contains("index_put_ failed for key 'a'") && Contains("tensor"));
}
