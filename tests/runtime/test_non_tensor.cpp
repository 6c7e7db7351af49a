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
  REQUIRE(td.keys({.include_nested = true, .leaves_only = true}) == std::vector<NestedKey>{"x", "name", {"meta", "episode"}, "cfg"});
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
  // tensordict 0.15.3 on the same data (run in the test venv)
  CHECK(repr(td) ==
        "TensorDict(batch_size=[3], fields={\n"
        "    a_tensor: f32[],\n"
        "    nested: {a_string: str, a_tensor: f32[]}})");
  TensorDict compact_stack({}, {2});
  compact_stack.set("s", NonTensorData::stack({"x", "y"}, {2}));
  CHECK(repr(compact_stack) == "TensorDict(batch_size=[2], fields={s: NonTensorStack})");
  set_printoptions detailed({.compact = false});
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
