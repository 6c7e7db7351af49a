// A tensordict that holds a jagged lazy stack under a key
// (TensorDict{s: lazy_stack([{a: [3]}, {a: [4]}])}, batch [2]): the
// batch-shape ops hand themselves to the nested stack, which runs them member
// by member, as tensordict 0.15.3 does. Expected values: tensordict 0.15.3
// run in the test venv on the same members, pasted as constants.
#include "fixtures.h"

using namespace conformance;
using at::indexing::Slice;
using tensordict::LazyStackedTensorDict;
using Catch::Matchers::Contains;

namespace {

// {s: lazy_stack([{a: [0, 1, 2]}, {a: [10, 11, 12, 13]}]), b: [2]}, batch [2].
TensorDict holder() {
  auto s = tensordict::lazy_stack({TensorDict({{"a", at::arange(3, at::kFloat)}}, {}),
                                   TensorDict({{"a", at::arange(4, at::kFloat) + 10}}, {})});
  return TensorDict({{"s", s}, {"b", at::arange(2, at::kFloat)}}, {2});
}

LazyStackedTensorDict nested_stack(const TensorDict& td) {
  const TensorDict s = td.get_td("s");
  REQUIRE(is_lazy(s));
  return LazyStackedTensorDict(s);
}

// The tensors at "a" of the nested stack's members.
std::vector<at::Tensor> nested_a(const TensorDict& td) { return nested_stack(td).get_list("a"); }

const at::Tensor kA0 = at::arange(3, at::kFloat);
const at::Tensor kA1 = at::arange(4, at::kFloat) + 10;

}  // namespace

TEST_CASE("reshape, view, flatten and unflatten of a holder of a jagged lazy stack regroup its members (an issue example, checked against tensordict 0.15.3)",
          "[conformance][test_lazy.py]") {
  const TensorDict o = holder();
  // tensordict 0.15.3: reshape(2, 1) keeps the stack dim at 0, members of
  // batch [1] (a [1, 3] and [1, 4]); view(1, 2) is a stack of one member,
  // the [2] stack; flatten and unflatten regroup the same way.
  const auto r = o.reshape({2, 1});
  CHECK(r.batch_size() == at::IntArrayRef({2, 1}));
  CHECK(nested_stack(r).stack_dim() == 0);
  CHECK(nested_stack(r).batch_size() == at::IntArrayRef({2, 1}));
  CHECK(nested_a(r)[0].equal(kA0.view({1, 3})));
  CHECK(nested_a(r)[1].equal(kA1.view({1, 4})));
  CHECK(r.get("b").equal(at::arange(2, at::kFloat).view({2, 1})));
  const auto v = o.view({1, 2});
  CHECK(v.batch_size() == at::IntArrayRef({1, 2}));
  CHECK(nested_stack(v).stack_dim() == 0);
  REQUIRE(nested_stack(v).tensordicts().size() == 1);
  CHECK(LazyStackedTensorDict(nested_stack(v).tensordicts()[0]).get_list("a")[1].equal(kA1));
  const auto u = o.unflatten(0, {2, 1});
  CHECK(nested_a(u)[1].equal(kA1.view({1, 4})));
  const auto f = u.flatten(0, 1);
  CHECK(f.batch_size() == at::IntArrayRef({2}));
  CHECK(nested_a(f)[0].equal(kA0));
  CHECK(nested_a(f)[1].equal(kA1));
  CHECK(nested_a(o.reshape({-1}))[1].equal(kA1));
}

TEST_CASE("squeeze of a holder of a jagged lazy stack squeezes its members (an issue example, checked against tensordict 0.15.3)",
          "[conformance][test_lazy.py]") {
  const TensorDict u = holder().unsqueeze(0);
  for (const auto& s : {u.squeeze(0), u.squeeze()}) {
    CHECK(s.batch_size() == at::IntArrayRef({2}));
    CHECK(nested_stack(s).stack_dim() == 0);
    CHECK(nested_a(s)[0].equal(kA0));
    CHECK(nested_a(s)[1].equal(kA1));
  }
  // Nothing to squeeze: the nested stack stays as it is.
  CHECK(nested_a(holder().squeeze())[1].equal(kA1));
}

TEST_CASE("split, chunk, tensor_split and unbind of a holder of a jagged lazy stack (an issue example, checked against tensordict 0.15.3)",
          "[conformance][test_lazy.py]") {
  const TensorDict o = holder();
  // tensordict 0.15.3: each piece holds a lazy stack of its member; unbind
  // gives the members themselves (dense).
  for (const auto& pieces : {o.split(1, 0), o.split({1, 1}, 0), o.chunk(2, 0), o.tensor_split(2, 0)}) {
    REQUIRE(pieces.size() == 2);
    CHECK(pieces[0].batch_size() == at::IntArrayRef({1}));
    CHECK(nested_a(pieces[0])[0].equal(kA0));
    CHECK(nested_a(pieces[1])[0].equal(kA1));
    CHECK(pieces[1].get("b").equal(at::ones({1})));
  }
  const auto parts = o.unbind(0);
  REQUIRE(parts.size() == 2);
  CHECK(parts[1].get_td("s").kind() == tensordict::Kind::Dense);
  CHECK(parts[1].get({"s", "a"}).equal(kA1));
  CHECK(o.unbind(-1)[0].get({"s", "a"}).equal(kA0));
}

TEST_CASE("softmax and broadcast_to of a holder of a jagged lazy stack run on its members (an issue example, checked against tensordict 0.15.3)",
          "[conformance][test_lazy.py]") {
  const TensorDict o = holder();
  // tensordict 0.15.3 (_lazy.py _softmax): along the stack dim of members
  // whose entries differ in shape, each member's leaves along their own dim.
  const auto sm = o.softmax(0);
  CHECK(nested_stack(sm).stack_dim() == 0);
  CHECK(at::allclose(nested_a(sm)[0], at::softmax(kA0, 0)));
  CHECK(at::allclose(nested_a(sm)[1], at::softmax(kA1, 0)));
  CHECK(at::allclose(sm.get("b"), at::softmax(at::arange(2, at::kFloat), 0)));
  // Across another dim: each member along its own place of it.
  const auto sm1 = o.unsqueeze(0).expand({3, 2}).softmax(0);
  CHECK(at::allclose(LazyStackedTensorDict(sm1.get_td("s")).get_list("a")[1], at::full({3, 4}, 1.0f / 3)));
  const auto b = o.broadcast_to({3, 2});
  CHECK(nested_stack(b).stack_dim() == 1);
  CHECK(nested_a(b)[1].equal(kA1.expand({3, 4})));
}

TEST_CASE("cat and stack of holders of jagged lazy stacks keep the nested stacks lazy (an issue example, checked against tensordict 0.15.3)",
          "[conformance][test_lazy.py]") {
  const TensorDict o = holder();
  // tensordict 0.15.3: cat appends the members (4 members, stack dim 0);
  // stack at 0 stacks member i of each input (2 members of batch [2], stack
  // dim 1).
  const auto c = tensordict::cat({o, o}, 0);
  CHECK(c.batch_size() == at::IntArrayRef({4}));
  REQUIRE(nested_stack(c).tensordicts().size() == 4);
  CHECK(nested_a(c)[3].equal(kA1));
  const auto st = tensordict::stack({o, o}, 0);
  CHECK(st.batch_size() == at::IntArrayRef({2, 2}));
  CHECK(nested_stack(st).stack_dim() == 1);
  REQUIRE(nested_stack(st).tensordicts().size() == 2);
  CHECK(nested_a(st)[1].equal(at::stack({kA1, kA1})));
  // A nested stack cat with a dense level appends the level's rows as
  // members.
  const TensorDict dense({{"s", TensorDict({{"a", at::zeros({1, 5})}}, {1})}, {"b", at::zeros({1})}}, {1});
  const auto mixed = tensordict::cat({o, dense}, 0);
  REQUIRE(nested_stack(mixed).tensordicts().size() == 3);
  CHECK(nested_a(mixed)[2].equal(at::zeros({5})));
}

TEST_CASE("repeat and repeat_interleave of a jagged lazy stack and of its holder repeat the members (an issue example, checked against tensordict 0.15.3)",
          "[conformance][test_lazy.py]") {
  const TensorDict o = holder();
  // tensordict 0.15.3: repeat(2) gives members 0, 1, 0, 1 and
  // repeat_interleave(2, 0) members 0, 0, 1, 1, each of batch [].
  const auto r = o.repeat({2});
  CHECK(r.batch_size() == at::IntArrayRef({4}));
  REQUIRE(nested_a(r).size() == 4);
  CHECK(nested_a(r)[2].equal(kA0));
  CHECK(nested_a(r)[3].equal(kA1));
  CHECK(r.get("b").equal(at::tensor({0.0f, 1.0f, 0.0f, 1.0f})));
  const auto ri = o.repeat_interleave(2, 0);
  REQUIRE(nested_a(ri).size() == 4);
  CHECK(nested_a(ri)[1].equal(kA0));
  CHECK(nested_a(ri)[2].equal(kA1));
  CHECK(ri.get("b").equal(at::tensor({0.0f, 0.0f, 1.0f, 1.0f})));
  // As in tensordict, a member's repeats are one tensordict (here a copy of
  // the source's member, which stays as it was: docs/differences.md).
  nested_a(ri)[0].fill_(-1);
  CHECK(nested_a(ri)[1].equal(at::full({3}, -1.0f)));
  CHECK(nested_a(o)[0].equal(kA0));
  nested_a(r)[0].fill_(-1);
  CHECK(nested_a(r)[2].equal(at::full({3}, -1.0f)));
  CHECK(nested_a(o)[0].equal(kA0));
  // Across the stack dim: each member's rows.
  const auto u = o.unsqueeze(1).repeat_interleave(3, 1);
  CHECK(u.batch_size() == at::IntArrayRef({2, 3}));
  CHECK(nested_a(u)[1].equal(kA1.expand({3, 4})));
  CHECK(nested_a(o.unsqueeze(1).repeat({1, 2}))[0].equal(kA0.expand({2, 3})));
}

TEST_CASE("ops tensordict 0.15.3 refuses on a holder of a jagged lazy stack name the key they cannot stack",
          "[conformance][test_lazy.py]") {
  const TensorDict o = holder();
  // tensordict 0.15.3: "Failed to stack tensors within a tensordict under
  // the key 'a'" (RuntimeError) for gather, narrow, flip and contiguous.
  CHECK_THROWS_AS(o.gather(0, at::tensor({1, 0}, at::kLong)), tensordict::RuntimeError);
  CHECK_THAT(CONF_MESSAGE(o.gather(0, at::tensor({1, 0}, at::kLong))), Contains("cannot stack key 'a'"));
  CHECK_THAT(CONF_MESSAGE(o.narrow(0, 0, 1)), Contains("cannot stack key 'a'"));
  CHECK_THAT(CONF_MESSAGE(o.flip({0})), Contains("cannot stack key 'a'"));
  CHECK_THAT(CONF_MESSAGE(o.contiguous()), Contains("cannot stack key 'a'"));
}

namespace {
// lazy_stack([{x: [0, 1]}, {x: [10, 11, 12]}, {x: [20, 21]}]).
LazyStackedTensorDict three() {
  return tensordict::lazy_stack({TensorDict({{"x", at::arange(2, at::kFloat)}}, {}),
                                 TensorDict({{"x", at::arange(3, at::kFloat) + 10}}, {}),
                                 TensorDict({{"x", at::arange(2, at::kFloat) + 20}}, {})});
}

// Which members of `ls` hold `key`.
std::vector<bool> holders_of(const LazyStackedTensorDict& ls, const tensordict::NestedKey& key) {
  std::vector<bool> out;
  for (const auto& m : ls.tensordicts()) out.push_back(m.contains(key));
  return out;
}
}  // namespace

TEST_CASE("a new key written at an index of a lazy stack goes into the selected members only (an issue example, checked against tensordict 0.15.3)",
          "[conformance][test_lazy.py]") {
  // tensordict 0.15.3 (_lazy.py _setitem_index): ls[0] = td updates member 0
  // in place (x overwritten, y added); ls[1:], ls[[0, 2]] and ls[mask] give
  // each selected member its part.
  auto ls = three();
  ls.index_put_({0}, TensorDict({{"x", at::zeros({2})}, {"y", at::ones({4})}}, {}));
  CHECK(holders_of(ls, "y") == std::vector<bool>{true, false, false});
  CHECK(ls.tensordicts()[0].get("x").equal(at::zeros({2})));
  CHECK(ls.tensordicts()[1].get("x").equal(at::arange(3, at::kFloat) + 10));

  ls = three();
  ls.index_put_({Slice(1, at::indexing::None)},
                tensordict::lazy_stack({TensorDict({{"y", at::ones({4})}}, {}), TensorDict({{"y", at::ones({5})}}, {})}));
  CHECK(holders_of(ls, "y") == std::vector<bool>{false, true, true});
  CHECK(ls.tensordicts()[2].get("y").sizes() == at::IntArrayRef({5}));

  ls = three();
  ls.index_put_({at::tensor({0, 2}, at::kLong)}, TensorDict({{"y", at::arange(8, at::kFloat).view({2, 4})}}, {2}));
  CHECK(holders_of(ls, "y") == std::vector<bool>{true, false, true});
  CHECK(ls.tensordicts()[2].get("y").equal(at::arange(4, at::kFloat) + 4));

  ls = three();
  ls.index_put_({at::tensor({1, 0, 1}, at::kLong).to(at::kBool)}, TensorDict({{"n", TensorDict({{"z", at::ones({2, 1})}}, {2})}}, {2}));
  CHECK(holders_of(ls, {"n", "z"}) == std::vector<bool>{true, false, true});
  // A sub-view's write reaches the same members.
  ls = three();
  ls.index({Slice(1, at::indexing::None)}).set("y", at::ones({2, 4}));
  CHECK(holders_of(ls, "y") == std::vector<bool>{false, true, true});
}

TEST_CASE("a new key written at an index across a lazy stack's dim goes into every member at that index (checked against tensordict 0.15.3)",
          "[conformance][test_lazy.py]") {
  // Members of batch [2] stacked at dim 1; tensordict 0.15.3: ls[0] = {y: [2, 4]}
  // gives every member y, ones at row 0 and zeros at row 1.
  auto ls = tensordict::lazy_stack({TensorDict({{"x", at::zeros({2, 2})}}, {2}), TensorDict({{"x", at::zeros({2, 3})}}, {2})}, 1);
  ls.index_put_({0}, TensorDict({{"y", at::ones({2, 4})}}, {2}));
  for (const auto& m : ls.tensordicts()) {
    CHECK(m.get("y").equal(at::cat({at::ones({1, 4}), at::zeros({1, 4})})));
  }
}

TEST_CASE("a new key written at an index of a holder of a lazy stack goes into the selected members (an issue example, checked against tensordict 0.15.3)",
          "[conformance][test_lazy.py]") {
  TensorDict o({{"s", three()}, {"b", at::zeros({3})}}, {3});
  o.index_put_({0}, TensorDict({{"s", TensorDict({{"y", at::ones({4})}}, {})}, {"b", at::full({}, 5.0f)}}, {}));
  CHECK(holders_of(LazyStackedTensorDict(o.get_td("s")), "y") == std::vector<bool>{true, false, false});
  CHECK(o.get("b").equal(at::tensor({5.0f, 0.0f, 0.0f})));
  TensorDict p({{"s", three()}}, {3});
  p.index_put_({Slice(1, at::indexing::None)}, TensorDict({{"s", TensorDict({{"y", at::ones({2, 4})}}, {2})}}, {2}));
  CHECK(holders_of(LazyStackedTensorDict(p.get_td("s")), "y") == std::vector<bool>{false, true, true});
  // set_at_ of a key the stack lacks: tensordict's KeyError.
  CHECK_THAT(CONF_MESSAGE(p.set_at_({"s", "z"}, at::ones({4}), {1})), Contains("z"));
  CHECK_THROWS_AS(p.set_at_({"s", "z"}, at::ones({4}), {1}), tensordict::KeyError);
}
