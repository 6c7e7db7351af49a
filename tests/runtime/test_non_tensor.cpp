// Non-tensor data: NonTensorData and NonTensorStack entries.
#include "helpers.h"

#include <nlohmann/json.hpp>
#include "../temp_dir.h"

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
  REQUIRE(td.keys({.include_nested = true, .leaves_only = true, .is_leaf = IsLeaf::NonTensor}) ==
          std::vector<NestedKey>{"x", "name", {"meta", "episode"}, "cfg"});
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

// ---- tensordict 0.15: per-element writes, comparisons, where, keys ----------------------

namespace {
TensorDict with_string(const char* value) {
  TensorDict td({{"x", at::zeros({3})}}, {3});
  td.set_non_tensor("s", value);
  return td;
}
TensorDict row(const char* key, const char* value) {
  TensorDict td({{"x", at::ones({})}}, {});
  td.set_non_tensor(key, value);
  return td;
}
}  // namespace

TEST_CASE("a different string written at an index makes the entry a stack") {
  // Expected lists: tensordict 0.15.3 on the same writes (run in the test venv).
  const Json a_b_a = Json::parse(R"(["a","b","a"])");
  TensorDict td = with_string("a");
  td.set_at_("s", NonTensorData("b"), {1});
  CHECK(td.get_non_tensor("s") == a_b_a);
  td = with_string("a");
  td.index_put_({1}, row("s", "b"));
  CHECK(td.get_non_tensor("s") == a_b_a);
  td = with_string("a");
  td.update_at_(row("s", "b"), {1});
  CHECK(td.get_non_tensor("s") == a_b_a);
  td = with_string("a");
  td.index_put_({Slice(1, at::indexing::None)}, TensorDict({{"x", at::ones({2})}, {"s", NonTensorData("b")}}, {2}));
  CHECK(td.get_non_tensor("s") == Json::parse(R"(["a","b","b"])"));
  // The same value written back collapses the stack to one value.
  td.set_at_("s", NonTensorData("a"), {Slice()});
  CHECK(td.get_non_tensor("s") == "a");
  CHECK_FALSE(td.get_value("s")->non_tensor().is_stack());

  // copy_at_ as update_at_ (conformance ports test_update_at_nontensor_data).
  TensorDict ten2({{"val", NonTensorData(0)}}, {10});
  ten2.copy_at_(TensorDict({{"val", NonTensorData(1)}}, {5}), {Slice(1, at::indexing::None, 2)});
  CHECK(ten2.get_non_tensor("val") == Json::parse("[0,1,0,1,0,1,0,1,0,1]"));

  REQUIRE_THAT(TD_MESSAGE(with_string("a").set_at_("missing", NonTensorData("b"), {0})), Contains("'missing' not found"));
  REQUIRE_THAT(TD_MESSAGE(with_string("a").set_at_("x", NonTensorData("b"), {0})),
               Contains("'x' holds a tensor, not non-tensor data"));
}

TEST_CASE("a new non-tensor key written at an index: one value fills the batch, a stack leaves None",
          "[ports:test_nontensor.py::TestNonTensorData::test_assign_non_tensor]") {
  TensorDict data({}, {1, 10});
  data.index_put_({0, 0}, TensorDict({{"a", at::zeros({})}, {"b", NonTensorData("a string!")}}, {}));
  CHECK(data.get_non_tensor("b") == "a string!");
  data.index_put_({0, 1}, TensorDict({{"a", at::zeros({})}, {"b", NonTensorData("another string!")}}, {}));
  Json expected = Json::array({Json::array()});
  expected[0].push_back("a string!");
  expected[0].push_back("another string!");
  for (int i = 0; i < 8; ++i) expected[0].push_back("a string!");
  CHECK(data.get_non_tensor("b") == expected);

  TensorDict data2({}, {1, 10});
  data2.index_put_({0, 0}, TensorDict({{"a", at::zeros({})}, {"b", NonTensorData("a string!")}}, {}));
  data2.index_put_({0, Slice(5, at::indexing::None)},
                   TensorDict({{"a", at::zeros({5})}, {"b", NonTensorData("another string!")}}, {5}));
  Json expected2 = Json::array({Json::array()});
  for (int i = 0; i < 10; ++i) expected2[0].push_back(i < 5 ? "a string!" : "another string!");
  CHECK(data2.get_non_tensor("b") == expected2);

  // A stack written to a new key: None outside the index (tensordict 0.15.3:
  // LinkedList([None, 'b', 'c'])).
  TensorDict td = with_string("a");
  td.index_put_({Slice(1, at::indexing::None)},
                TensorDict({{"x", at::ones({2})}, {"t", NonTensorData::stack({"b", "c"}, {2})}}, {2}));
  CHECK(td.get_non_tensor("t") == Json::parse(R"([null,"b","c"])"));
  // One value written at one element of a new key: the whole batch holds it.
  td = with_string("a");
  td.index_put_({1}, row("t", "b"));
  CHECK(td.get_non_tensor("t") == "b");
}

TEST_CASE("== and != compare non-tensor entries element-wise into bool tensors",
          "[ports:test_nontensor.py::TestNonTensorData::test_comparison]") {
  TensorDict a = with_string("a");
  TensorDict b = with_string("a");
  b.set_at_("s", NonTensorData("b"), {1});
  // tensordict 0.15.3: (a == b)["s"] is tensor([True, False, True]).
  const at::Tensor eq = (a == b).get("s");
  CHECK(eq.scalar_type() == at::kBool);
  CHECK(eq.equal(at::tensor({1, 0, 1}).to(at::kBool)));
  CHECK((a != b).get("s").equal(at::tensor({0, 1, 0}).to(at::kBool)));
  CHECK((a == with_string("b")).get("s").equal(at::zeros({3}, at::kBool)));
  CHECK((b == b.clone()).all());

  // tensordict's test: equal nested values of every kind compare true.
  TensorDict nt({{"1", at::ones({})},
                 {"nested", TensorDict({{"int", NonTensorData(3)}, {"bool", NonTensorData(true)}}, {})}},
                {});
  CHECK((nt == nt).get({"nested", "bool"}).item<bool>());
  CHECK_FALSE((nt != nt).get({"nested", "bool"}).item<bool>());
  CHECK((nt == nt).get({"nested", "int"}).item<bool>());
  // Over two batch dims, the result has the level's batch shape.
  TensorDict two({{"x", at::zeros({2, 3})}}, {2, 3});
  two.set_non_tensor("s", "a");
  CHECK((two == two.clone()).get("s").sizes() == at::IntArrayRef{2, 3});
  // 1 and 1.0 are one value, as in Python.
  TensorDict one({}, {2});
  one.set_non_tensor("n", 1);
  TensorDict one_f({}, {2});
  one_f.set_non_tensor("n", 1.0);
  CHECK((one == one_f).get("n").all().item<bool>());
}

TEST_CASE("where picks non-tensor values element by element", "[ports:test_nontensor.py::TestNonTensorData::test_where]") {
  const at::Tensor mask = at::tensor({1, 0, 1}).to(at::kBool);
  // tensordict 0.15.3: a.where(mask, b)["s"] is ['a', 'b', 'a'].
  CHECK(with_string("a").where(mask, with_string("b")).get_non_tensor("s") == Json::parse(R"(["a","b","a"])"));
  CHECK(with_string("a").where(mask, with_string("a")).get_non_tensor("s") == "a");
  TensorDict st({{"x", at::zeros({3})}}, {3});
  st.set("s", NonTensorData::stack({"a", "b", "c"}, {3}));
  CHECK(st.where(mask, with_string("z")).get_non_tensor("s") == Json::parse(R"(["a","z","c"])"));
  // A tensor or scalar other leaves non-tensor entries as they are.
  CHECK(with_string("a").where(mask, at::ones({3})).get_non_tensor("s") == "a");
  // tensordict's test: lists as values.
  TensorDict tensor({}, {2});
  tensor.set_non_tensor("v", Json::array({"a"}));
  TensorDict other({}, {2});
  other.set_non_tensor("v", Json::array({"b"}));
  CHECK(tensor.where(at::tensor({1, 0}).to(at::kBool), other).get_non_tensor("v") == Json::parse(R"([["a"],["b"]])"));
  // Over two batch dims (tensordict 0.15.3: [['a','b','a'],['b','b','a']]).
  TensorDict t2({{"x", at::zeros({2, 3})}}, {2, 3});
  t2.set_non_tensor("s", "a");
  TensorDict o2 = t2.clone();
  o2.set_non_tensor("s", "b");
  const at::Tensor m2 = at::tensor({1, 0, 1, 0, 0, 1}).to(at::kBool).reshape({2, 3});
  CHECK(t2.where(m2, o2).get_non_tensor("s") == Json::parse(R"([["a","b","a"],["b","b","a"]])"));
}

TEST_CASE("keys with leaves_only leave out non-tensor data unless is_leaf says so") {
  TensorDict td = with_string("a");
  td.set("n", TensorDict({{"y", at::zeros({3})}, {"u", NonTensorData("z")}}, {3}));
  // tensordict 0.15.3: list(td.keys(True, True)) == ['x', ('n', 'y')];
  // keys(True, False) == ['x', 's', ('n', 'y'), ('n', 'u'), 'n'].
  CHECK(td.keys({.include_nested = true, .leaves_only = true}) == std::vector<NestedKey>{"x", {"n", "y"}});
  CHECK(td.keys({.leaves_only = true}) == std::vector<NestedKey>{"x"});
  CHECK(td.keys({.include_nested = true}) == std::vector<NestedKey>{"x", "s", {"n", "y"}, {"n", "u"}, "n"});
  CHECK(td.items({.include_nested = true, .leaves_only = true}).size() == 2);
  for (const auto& v : td.values({.include_nested = true, .leaves_only = true})) CHECK(v.is_tensor());
  CHECK(td.keys({.include_nested = true, .leaves_only = true, .is_leaf = IsLeaf::NonTensor}) ==
        std::vector<NestedKey>{"x", "s", {"n", "y"}, {"n", "u"}});
  // What walks the non-tensor entries still sees them.
  CHECK(td.non_tensor_items({.include_nested = true}).size() == 2);
  CHECK(td.filter_non_tensor_data().keys({.include_nested = true}) == std::vector<NestedKey>{"x", {"n", "y"}, "n"});
  CHECK(td.clone().get_non_tensor({"n", "u"}) == "z");
  CHECK(TensorDict({{"s", NonTensorData("a")}, {"n", TensorDict({{"u", NonTensorData("b")}}, {})}}, {}).depth() == 1);
}

TEST_CASE("unsqueeze and squeeze move a non-tensor stack's elements") {
  // One value: conformance ports test_nontensor.py::test_squeeze_unsqueeze.
  TensorDict td = with_string("a");
  td.set_at_("s", NonTensorData("b"), {1});
  // tensordict 0.15.3 on the same stack.
  CHECK(td.unsqueeze(0).get_non_tensor("s") == Json::parse(R"([["a","b","a"]])"));
  const TensorDict u1 = td.unsqueeze(1);
  CHECK(u1.get_non_tensor("s") == Json::parse(R"([["a"],["b"],["a"]])"));
  CHECK(u1.squeeze(1).get_non_tensor("s") == Json::parse(R"(["a","b","a"])"));
  CHECK(u1.squeeze().get_non_tensor("s") == Json::parse(R"(["a","b","a"])"));
  CHECK(u1.squeeze(1).batch_size() == at::IntArrayRef{3});
}

TEST_CASE("an indexed string write into a memory-mapped tensordict reaches its files") {
  TempDir tmp;
  const std::string dir = (tmp / "td").string();
  TensorDict td({{"x", at::zeros({3})}, {"s", NonTensorData::stack({"a", "b", "a"}, {3})}}, {3});
  td.memmap_(dir);
  // tensordict 0.15.3: td[1] = ... "c" gives ['a', 'c', 'a'], in memory and in meta.json.
  td.index_put_({1}, row("s", "c"));
  CHECK(td.get_non_tensor("s") == Json::parse(R"(["a","c","a"])"));
  CHECK(TensorDict::load_memmap(dir).get_non_tensor("s") == Json::parse(R"(["a","c","a"])"));
  td.set_at_("s", NonTensorData("z"), {2});
  CHECK(TensorDict::load_memmap(dir).get_non_tensor("s") == Json::parse(R"(["a","c","z"])"));

  // One value is shared: the same value may be written, another is refused
  // (tensordict 0.15.3 raises RuntimeError) and nothing changes.
  const std::string dir1 = (tmp / "one").string();
  TensorDict one = with_string("a");
  one.memmap_(dir1);
  one.index_put_({1}, row("s", "a"));
  REQUIRE_THAT(TD_MESSAGE(one.index_put_({1}, row("s", "b"))),
               Contains("key 's'") && Contains("shares its one value 'a'") && Contains("does not match the previous"));
  CHECK(one.get_non_tensor("s") == "a");
  CHECK(TensorDict::load_memmap(dir1).get_non_tensor("s") == "a");
}

TEST_CASE("a consolidated copy of string stacks compares equal element-wise",
          "[ports:test_nontensor.py::TestNonTensorData::test_stack_consolidate]") {
  TensorDict first({}, {});
  first.set_non_tensor("a", "a string");
  first.set_non_tensor("b", "b string");
  TensorDict second({}, {});
  second.set_non_tensor("a", "another string");
  second.set_non_tensor("b", "bnother string");
  const TensorDict td = stack({first, second});
  const TensorDict tdc = td.consolidate();
  CHECK((tdc == td).all());
  CHECK((tdc == td).get("a").sizes() == at::IntArrayRef{2});
  CHECK(tdc.get_non_tensor("a") == Json::parse(R"(["a string","another string"])"));
  CHECK_FALSE((tdc != td).any());
}
