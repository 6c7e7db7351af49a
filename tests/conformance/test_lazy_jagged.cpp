// Ops on lazy stacks whose members differ in shape (jagged data:
// variable-length episodes). Where a case ports one of test_lazy.py's tests,
// its name says which; the others are checked on the same members against
// tensordict 0.15.3, which has no test of its own for them. tensordict runs every op
// member by member (_lazy.py _fast_apply, _apply_nest), so nothing is
// stacked and the result is a lazy stack of the members' results. Expected
// values: tensordict 0.15.3 run in the test venv on the same members,
// pasted as constants.
#include "fixtures.h"

using namespace conformance;
using at::indexing::Ellipsis;
using at::indexing::Slice;
using tensordict::LazyStackedTensorDict;
using Catch::Matchers::Contains;

namespace {

// lazy_stack([{a: [0, 1, 2]}, {a: [10, 11, 12, 13]}]): batch [2], "a" jagged.
LazyStackedTensorDict jagged() {
  return tensordict::lazy_stack({TensorDict({{"a", at::arange(3, at::kFloat)}}, {}),
                                 TensorDict({{"a", at::arange(4, at::kFloat) + 10}}, {})});
}

// The tensors at `key` of each member of the lazy stack `td`.
std::vector<at::Tensor> members_at(const TensorDict& td, const tensordict::NestedKey& key) {
  REQUIRE(is_lazy(td));
  return LazyStackedTensorDict(td).get_list(key);
}

// A bool mask (at::tensor of bools is missing from libtorch 1.13).
at::Tensor mask(std::vector<int64_t> values) { return at::tensor(values, at::kLong).to(at::kBool); }

bool equals(const at::Tensor& t, std::vector<double> values) {
  return t.dim() == 1 && at::allclose(t.to(at::kDouble), at::tensor(values, at::kDouble));
}

// Member i of the lazy stack `td` holds `values[i]` at "a".
void check_members(const TensorDict& td, const std::vector<std::vector<double>>& values) {
  const auto got = members_at(td, "a");
  REQUIRE(got.size() == values.size());
  for (std::size_t i = 0; i < values.size(); ++i) {
    CAPTURE(i, got[i]);
    CHECK(equals(got[i], values[i]));
  }
}

}  // namespace

TEST_CASE("pointwise math on a jagged lazy stack runs member by member (an issue example, checked against tensordict 0.15.3)",
          "[conformance][test_lazy.py]") {
  const auto s = jagged();
  check_members(s + 1, {{1, 2, 3}, {11, 12, 13, 14}});
  check_members(s * s, {{0, 1, 4}, {100, 121, 144, 169}});
  check_members(s.exp(), {{1, 2.7182817459106445, 7.389056205749512}, {22026.46484375, 59874.140625, 162754.796875, 442413.40625}});
  check_members(s.clamp(1, 2), {{1, 1, 2}, {2, 2, 2, 2}});
  // A batch-shaped tensor: each member meets its element.
  check_members(s + at::tensor({1.0f, 2.0f}), {{1, 2, 3}, {12, 13, 14, 15}});
  CHECK(LazyStackedTensorDict(s + 1).stack_dim() == 0);
}

TEST_CASE("in-place ops on a jagged lazy stack write into its members (an issue example, checked against tensordict 0.15.3)",
          "[conformance][test_lazy.py]") {
  auto s = jagged();
  const auto before = s.tensordicts()[1].get("a");
  s.add_(1);
  check_members(s, {{1, 2, 3}, {11, 12, 13, 14}});
  CHECK(s.tensordicts()[1].get("a").data_ptr() == before.data_ptr());  // the member's own tensor
  s = jagged();
  s.add_(at::tensor({1.0f, 2.0f}));
  check_members(s, {{1, 2, 3}, {12, 13, 14, 15}});
  s = jagged();
  s.mul_(s.clone());
  check_members(s, {{0, 1, 4}, {100, 121, 144, 169}});
  s = jagged();
  s.exp_();
  check_members(s, {{1, 2.7182817459106445, 7.389056205749512}, {22026.46484375, 59874.140625, 162754.796875, 442413.40625}});
  s = jagged();
  s.clamp_(1, 2);
  check_members(s, {{1, 1, 2}, {2, 2, 2, 2}});
  s = jagged();
  s.masked_fill_(mask({0, 1}), 0);
  check_members(s, {{0, 1, 2}, {0, 0, 0, 0}});
  s = jagged();
  s.zero_();
  check_members(s, {{0, 0, 0}, {0, 0, 0, 0}});
}

TEST_CASE("comparisons, where and masked_fill of a jagged lazy stack give lazy stacks (an issue example, checked against tensordict 0.15.3)",
          "[conformance][test_lazy.py]") {
  const auto s = jagged();
  const auto eq = s == s.clone();
  check_members(eq, {{1, 1, 1}, {1, 1, 1, 1}});
  CHECK(members_at(eq, "a")[1].scalar_type() == at::kBool);
  check_members(s > 1, {{0, 0, 1}, {1, 1, 1, 1}});
  check_members(s.ne(s.clone()), {{0, 0, 0}, {0, 0, 0, 0}});
  const auto keep = mask({1, 0});
  check_members(s.where(keep, s * 0), {{0, 1, 2}, {0, 0, 0, 0}});
  check_members(s.where(keep, 0), {{0, 1, 2}, {0, 0, 0, 0}});
  check_members(s.masked_fill(keep, -1), {{-1, -1, -1}, {10, 11, 12, 13}});
  // A tensordict of the wrong number of members: named.
  CHECK_THAT(CONF_MESSAGE(s + TensorDict({{"a", at::zeros({3, 4})}}, {3})),
             Contains("a stack of 2 tensordicts cannot take 3 along its stack dim"));
}

TEST_CASE("expand, unsqueeze and indexing of a jagged lazy stack stay lazy (an issue example, checked against tensordict 0.15.3)",
          "[conformance][test_lazy.py]") {
  const auto s = jagged();
  const auto e = s.expand({3, 2});
  REQUIRE(is_lazy(e));
  CHECK(e.batch_size() == at::IntArrayRef({3, 2}));
  CHECK(LazyStackedTensorDict(e).stack_dim() == 1);
  CHECK(members_at(e, "a")[1].sizes() == at::IntArrayRef({3, 4}));
  const auto u = s.unsqueeze(0);
  CHECK(LazyStackedTensorDict(u).stack_dim() == 1);
  CHECK(members_at(u, "a")[0].sizes() == at::IntArrayRef({1, 3}));
  check_members(s.index({at::tensor({1, 0}, at::kLong)}), {{10, 11, 12, 13}, {0, 1, 2}});
  CHECK(equals(s.index({0}).get("a"), {0, 1, 2}));
}

TEST_CASE("indexing, unsqueeze, expand and math of a tensordict holding a jagged lazy stack (an issue example, checked against tensordict 0.15.3)",
          "[conformance][test_lazy.py]") {
  const TensorDict outer({{"s", jagged()}}, {2});
  // tensordict 0.15.3: outer[0] is the member; outer[:1], outer[[1, 0]] and
  // outer[mask] stay lazy; unsqueeze(0) moves the stack dim to 1.
  CHECK(equals(outer.index({0}).get({"s", "a"}), {0, 1, 2}));
  CHECK(outer.index({0}).get_td("s").kind() == tensordict::Kind::Dense);
  const auto first = outer.index({Slice(0, 1)});
  CHECK(first.batch_size() == at::IntArrayRef({1}));
  check_members(first.get_td("s"), {{0, 1, 2}});
  check_members(outer.index({at::tensor({1, 0}, at::kLong)}).get_td("s"), {{10, 11, 12, 13}, {0, 1, 2}});
  check_members(outer.index({mask({1, 0})}).get_td("s"), {{0, 1, 2}});
  const auto u0 = outer.unsqueeze(0);
  CHECK(u0.batch_size() == at::IntArrayRef({1, 2}));
  CHECK(LazyStackedTensorDict(u0.get_td("s")).stack_dim() == 1);
  CHECK(members_at(u0.get_td("s"), "a")[1].sizes() == at::IntArrayRef({1, 4}));
  const auto u1 = outer.unsqueeze(1);
  CHECK(LazyStackedTensorDict(u1.get_td("s")).stack_dim() == 0);
  CHECK(members_at(u1.get_td("s"), "a")[0].sizes() == at::IntArrayRef({1, 3}));
  const auto e = outer.expand({3, 2});
  CHECK(LazyStackedTensorDict(e.get_td("s")).stack_dim() == 1);
  CHECK(members_at(e.get_td("s"), "a")[1].sizes() == at::IntArrayRef({3, 4}));
  check_members((outer + 1).get_td("s"), {{1, 2, 3}, {11, 12, 13, 14}});
  check_members((outer * outer).get_td("s"), {{0, 1, 4}, {100, 121, 144, 169}});
  check_members((outer > 1).get_td("s"), {{0, 0, 1}, {1, 1, 1, 1}});
  check_members(outer.masked_fill(mask({1, 0}), -1).get_td("s"), {{-1, -1, -1}, {10, 11, 12, 13}});
  check_members(outer.where(mask({1, 0}), outer * 0).get_td("s"), {{0, 1, 2}, {0, 0, 0, 0}});
}

TEST_CASE("permute, Ellipsis indexing, batch-shaped operands and in-place ops of a holder of a jagged lazy stack (an issue example, checked against tensordict 0.15.3)",
          "[conformance][test_lazy.py]") {
  // Members of batch [1] with "a" [1, 3] and [1, 4], held in a [2, 1] holder.
  TensorDict outer({{"s", tensordict::lazy_stack({TensorDict({{"a", at::arange(3, at::kFloat).view({1, 3})}}, {1}),
                                                  TensorDict({{"a", at::arange(4, at::kFloat).view({1, 4}) + 10}}, {1})})}},
                   {2, 1});
  // tensordict 0.15.3: permute and transpose move the stack dim to 1; [..., 0]
  // keeps it at 0 with members of batch []; a [2, 1] operand meets member i
  // with its row.
  const auto permuted = outer.permute({1, 0});
  CHECK(permuted.batch_size() == at::IntArrayRef({1, 2}));
  CHECK(LazyStackedTensorDict(permuted.get_td("s")).stack_dim() == 1);
  CHECK(LazyStackedTensorDict(outer.transpose(0, 1).get_td("s")).stack_dim() == 1);
  const auto last = outer.index({Ellipsis, 0});
  check_members(last.get_td("s"), {{0, 1, 2}, {10, 11, 12, 13}});
  const auto sum = outer + at::tensor({1.0f, 2.0f}).view({2, 1});
  CHECK(members_at(sum.get_td("s"), "a")[1].equal(at::arange(4, at::kFloat).view({1, 4}) + 12));
  outer.add_(1);
  CHECK(members_at(outer.get_td("s"), "a")[1].equal(at::arange(4, at::kFloat).view({1, 4}) + 11));
}

TEST_CASE("indexed assignment into a jagged lazy stack writes into the selected member (test_lazy.py::test_setitem_hetero)",
          "[conformance][test_lazy.py]") {
  auto s = jagged();
  s.index_put_({1}, TensorDict({{"a", at::full({4}, -7.0f)}}, {}));
  check_members(s, {{0, 1, 2}, {-7, -7, -7, -7}});
  TensorDict outer({{"s", jagged()}}, {2});
  outer.index_put_({0}, TensorDict({{"s", TensorDict({{"a", at::full({3}, -5.0f)}}, {})}}, {}));
  check_members(outer.get_td("s"), {{-5, -5, -5}, {10, 11, 12, 13}});
}

TEST_CASE("update of a dense tensordict by one holding a jagged lazy stack takes the stack (test_lazy.py::test_update_with_lazy)",
          "[conformance][test_lazy.py]") {
  const TensorDict outer({{"s", jagged()}}, {2});
  TensorDict dest({}, {2});
  dest.update(outer);
  check_members(dest.get_td("s"), {{0, 1, 2}, {10, 11, 12, 13}});
  // tensordict 0.15.3 replaces a dense nested level by the jagged stack.
  TensorDict dense_s({{"s", TensorDict({{"a", at::zeros({2, 3})}}, {2})}}, {2});
  dense_s.update(outer);
  check_members(dense_s.get_td("s"), {{0, 1, 2}, {10, 11, 12, 13}});
}

TEST_CASE("update with update_batch_size into a jagged lazy stack takes the source's members (test_lazy.py::test_update_batch_size)",
          "[conformance][test_lazy.py]") {
  auto s = jagged();
  const auto three = tensordict::lazy_stack({TensorDict({{"a", at::ones({5})}}, {}), TensorDict({{"a", at::ones({1})}}, {}),
                                             TensorDict({{"a", at::ones({2})}}, {})});
  s.update(three, {.update_batch_size = true});
  CHECK(s.batch_size() == at::IntArrayRef({3}));
  check_members(s, {{1, 1, 1, 1, 1}, {1}, {1, 1}});
  // The appended members are copies; the others were updated in place.
  CHECK(s.tensordicts()[2].impl() != three.tensordicts()[2].impl());
  CHECK(s.tensordicts()[2].get("a").data_ptr() == three.tensordicts()[2].get("a").data_ptr());
  // A shorter source replaces the members.
  const auto one = tensordict::lazy_stack({TensorDict({{"a", at::ones({5})}}, {})});
  s.update(one, {.update_batch_size = true});
  CHECK(s.batch_size() == at::IntArrayRef({1}));
  CHECK(s.tensordicts()[0].impl() == one.tensordicts()[0].impl());
}

TEST_CASE("update of a jagged lazy stack by a lazy stack of another length (test_lazy.py::test_update_batch_size)",
          "[conformance][test_lazy.py]") {
  const auto three = tensordict::lazy_stack({TensorDict({{"a", at::ones({5})}}, {}), TensorDict({{"a", at::ones({1})}}, {}),
                                             TensorDict({{"a", at::ones({2})}}, {})});
  const auto one = tensordict::lazy_stack({TensorDict({{"a", at::ones({5})}}, {})});
  // tensordict 0.15.3: a longer source's extra members are left out, a
  // shorter one is a ValueError; with update_batch_size, inplace and
  // keys_to_update are refused and every key must be in the source.
  auto s = jagged();
  s.update(three);
  CHECK(s.batch_size() == at::IntArrayRef({2}));
  check_members(s, {{1, 1, 1, 1, 1}, {1}});
  CHECK_THAT(CONF_MESSAGE(jagged().update(one)),
             Contains("update: cannot update stacked tensordicts with different shapes when update_batch_size=False"));
  CHECK_THAT(CONF_MESSAGE(jagged().update(three, {.inplace = true, .update_batch_size = true})),
             Contains("update was called with inplace=true, which cannot be achieved"));
  CHECK_THAT(CONF_MESSAGE(jagged().update(three, {.keys_to_update = std::vector<tensordict::NestedKey>{"a"}, .update_batch_size = true})),
             Contains("updating tensordicts of different batch sizes with keys_to_update is not supported"));
  const auto other_keys = tensordict::lazy_stack({TensorDict({{"b", at::ones({5})}}, {})});
  CHECK_THAT(CONF_MESSAGE(jagged().update(other_keys, {.update_batch_size = true})),
             Contains("every key of the destination must be in the source; missing from the source: 'a'"));
  // An in-place op cannot broadcast the batch size (the dense rule).
  CHECK_THAT(CONF_MESSAGE(jagged().add_(at::ones({3, 2}))),
             Contains("add_: a tensor operand of shape [3, 2] would broadcast the batch size [2] to [3, 2]"));
}

namespace {
// lazy_stack([x, y]) of batch sizes [2] and [3]: x "a" = arange(6) as [2, 3],
// y "a" = arange(9) + 10 as [3, 3].
LazyStackedTensorDict jagged_batch() {
  return tensordict::lazy_stack({TensorDict({{"a", at::arange(6, at::kFloat).view({2, 3})}}, {2}),
                                 TensorDict({{"a", at::arange(9, at::kFloat).view({3, 3}) + 10}}, {3})});
}
}  // namespace

TEST_CASE("lazy_stack of members of different batch sizes reads -1 where they differ (an issue example, checked against tensordict 0.15.3)",
          "[conformance][test_lazy.py]") {
  auto s = jagged_batch();
  // tensordict 0.15.3: batch_size [2, -1]; s[1] is the member; s[:, 0] and
  // s[:, :1] index every member; math, unsqueeze and unbind(0) go member by
  // member; get() of "a" cannot stack.
  CHECK(s.batch_size() == at::IntArrayRef({2, -1}));
  CHECK(s.index({1}).impl() == s.tensordicts()[1].impl());
  const auto first_rows = s.index({Slice(), 0});
  CHECK(first_rows.batch_size() == at::IntArrayRef({2}));
  check_members(first_rows, {{0, 1, 2}, {10, 11, 12}});
  CHECK(s.index({Slice(), Slice(0, 1)}).batch_size() == at::IntArrayRef({2, 1}));
  const auto plus = s + 1;
  CHECK(plus.batch_size() == at::IntArrayRef({2, -1}));
  CHECK(members_at(plus, "a")[1].equal(at::arange(9, at::kFloat).view({3, 3}) + 11));
  const auto u = s.unsqueeze(0);
  CHECK(u.batch_size() == at::IntArrayRef({1, 2, -1}));
  CHECK(members_at(u, "a")[1].sizes() == at::IntArrayRef({1, 3, 3}));
  CHECK(s.unbind(0)[1].batch_size() == at::IntArrayRef({3}));
  CHECK(s.clone().batch_size() == at::IntArrayRef({2, -1}));
  CHECK_THAT(CONF_MESSAGE(s.get("a")), Contains("cannot stack key 'a'"));
  // A member of a third size is taken; tensordict refuses another rank.
  s.append(TensorDict({{"a", at::zeros({4, 3})}}, {4}));
  CHECK(s.batch_size() == at::IntArrayRef({3, -1}));
  CHECK_THAT(CONF_MESSAGE(s.append(TensorDict({}, {4, 1}))), Contains("Batch sizes in tensordicts differs"));
  CHECK_THAT(CONF_MESSAGE(tensordict::lazy_stack({TensorDict({}, {2}), TensorDict({}, {2, 3})})),
             Contains("the members of a lazy stack have as many batch dims"));
}

TEST_CASE("ops that compute with the sizes of a lazy stack's unknown dims refuse it, naming them",
          "[conformance][test_lazy.py]") {
  const auto s = jagged_batch();
  // tensordict 0.15.3 fails on expand and unbind(1) too; its reshape(-1)
  // regroups the rows (here: refused, see docs/differences.md).
  CHECK_THAT(CONF_MESSAGE(s.expand({4, 2, 3})), Contains("expand: the batch size [2, -1] has dims of unknown size"));
  CHECK_THAT(CONF_MESSAGE(s.unbind(1)), Contains("unbind: the batch size [-1] has dims of unknown size"));
  CHECK_THAT(CONF_MESSAGE(s.reshape({-1})), Contains("reshape: the batch size [2, -1] has dims of unknown size"));
  CHECK_THAT(CONF_MESSAGE(s.index({at::indexing::None})), Contains("index: the batch size [2, -1] has dims of unknown size"));
  CHECK_THAT(CONF_MESSAGE(s.flatten(0, 1)), Contains("flatten: the batch size [2, -1] has dims of unknown size"));
  CHECK_THAT(CONF_MESSAGE(s.numel()), Contains("numel: the batch size [2, -1] has dims of unknown size"));
}

TEST_CASE("every op on a lazy stack of members of different batch sizes returns or throws a named error", "[conformance][test_lazy.py]") {
  const auto s = jagged_batch();
  using Op = std::function<void(const TensorDict&)>;
  const std::vector<std::pair<const char*, Op>> ops = {
      {"chunk", [](const TensorDict& t) { (void)t.chunk(2, 1); }},
      {"split", [](const TensorDict& t) { (void)t.split(1, 1); }},
      {"split stack dim", [](const TensorDict& t) { (void)t.split(1, 0); }},
      {"to_tensordict", [](const TensorDict& t) { (void)t.to_tensordict(); }},
      {"contiguous", [](const TensorDict& t) { (void)t.contiguous(); }},
      {"sum", [](const TensorDict& t) { (void)t.sum(); }},
      {"mean over dim 1", [](const TensorDict& t) { (void)t.mean({1}); }},
      {"masked_select", [](const TensorDict& t) { (void)t.masked_select(at::ones({2, 3}, at::kBool)); }},
      {"new_zeros", [](const TensorDict& t) { (void)t.new_zeros({2}); }},
      {"empty", [](const TensorDict& t) { (void)t.empty(); }},
      {"squeeze", [](const TensorDict& t) { (void)t.squeeze(); }},
      {"permute", [](const TensorDict& t) { (void)t.permute({1, 0}); }},
      {"narrow", [](const TensorDict& t) { (void)t.narrow(1, 0, 1); }},
      {"index int tensor", [](const TensorDict& t) { (void)t.index({Slice(), at::tensor({0}, at::kLong)}); }},
      {"index_put_", [](const TensorDict& t) { TensorDict(t).index_put_({Slice(), 0}, 1.0); }},
      {"set", [](const TensorDict& t) { TensorDict(t).set("b", at::zeros({2, 3})); }},
      {"unbind 0 of each", [](const TensorDict& t) { for (const auto& m : t.unbind(0)) (void)m.unbind(0); }},
      {"repr", [](const TensorDict& t) { (void)repr(t); }},
      {"numel", [](const TensorDict& t) { (void)t.numel(); }},
      {"cat", [](const TensorDict& t) { (void)tensordict::cat({t, t}, 0); }},
      {"stack", [](const TensorDict& t) { (void)tensordict::stack({t, t}, 0); }},
      {"densify", [](const TensorDict& t) { (void)t.densify(); }},
  };
  for (const auto& [name, op] : ops) {
    INFO(name);
    // A result, a tensordict error or a libtorch one: never another
    // exception (std::length_error from a size of -1) or a crash.
    bool named = true;
    try {
      op(s);
    } catch (const tensordict::Error&) {
    } catch (const c10::Error&) {
    } catch (...) {
      named = false;
    }
    CHECK(named);
  }
}
