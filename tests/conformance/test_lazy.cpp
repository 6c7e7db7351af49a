// Ports of tensordict's test_lazy.py (TestLazyStackedTensorDict): a dense
// tensordict holding a lazy stack whose members differ in keys and shapes
// (nested_lazy_het_td) goes through copies, shape ops, indexing, apply and
// update, and the stack stays lazy; lazy stacks take names and report locks
// from their members.
#include "fixtures.h"

using namespace conformance;
using at::indexing::Ellipsis;
using at::indexing::Slice;
using tensordict::LazyStackedTensorDict;
using tensordict::Names;

namespace {

// test_lazy.py's nested_lazy_het_td: three members sharing "shared" [4, 4, 2]
// and "hetero" ([3] twice, then [2]), each with its own
// "individual_{i}_tensor", an "individual_{i}_td" copy and a "shared_td" copy;
// stacked at dim 0 under "lazy" next to a dense [3, 3, 2], then expanded to
// `batch` and cloned.
TensorDict nested_lazy_het_td(std::vector<int64_t> batch) {
  std::vector<TensorDict> members;
  const std::vector<int64_t> hetero{3, 3, 2};
  for (int64_t i = 0; i < 3; ++i) {
    std::vector<int64_t> individual{1, 2, 3};
    individual.resize(static_cast<std::size_t>(i + 1));
    TensorDict td({{"shared", at::zeros({4, 4, 2})},
                   {"hetero", at::zeros({hetero[static_cast<std::size_t>(i)]})},
                   {"individual_" + std::to_string(i) + "_tensor", at::zeros(individual)}},
                  {});
    td.set("individual_" + std::to_string(i) + "_td", td.clone());
    td.set("shared_td", td.clone());
    members.push_back(td);
  }
  TensorDict obs({{"lazy", tensordict::lazy_stack(members, 0)}, {"dense", at::zeros({3, 3, 2})}}, {});
  return TensorDict(obs.expand(batch).clone());  // dense at the top
}

// Every tensor under `td` (a lazy stack: under each member) equals `value`.
bool all_equal(const TensorDict& td, double value) {
  if (is_lazy(td)) {
    for (const auto& m : LazyStackedTensorDict(td).tensordicts()) {
      if (!all_equal(m, value)) return false;
    }
    return true;
  }
  for (const auto& key : td.keys()) {
    auto v = *td.get_value(key);
    if (v.is_tensordict() ? !all_equal(v.tensordict(), value) : !(v.tensor() == value).all().item<bool>()) return false;
  }
  return true;
}

const std::vector<std::vector<int64_t>> kBatchSizes{{}, {2}, {1, 2}};

}  // namespace

TEST_CASE("a lazy stack of heterogeneous members stays lazy through ops on its parent (test_lazy.py::test_lazy_stack_stack)",
          "[conformance][test_lazy.py]") {
  for (const auto& batch : kBatchSizes) {
    CAPTURE(batch);
    const TensorDict obs = nested_lazy_het_td(batch);
    auto lazy = LazyStackedTensorDict(obs.get_td("lazy"));
    std::vector<int64_t> stacked = batch;
    stacked.push_back(3);
    CHECK(lazy.batch_size() == at::IntArrayRef(stacked));
    CHECK(lazy.stack_dim() == static_cast<int64_t>(batch.size()));
    CHECK(lazy.index({Ellipsis, 0}).kind() == tensordict::Kind::Dense);
    // The hetero key cannot be stacked; each member keeps its own shape.
    std::vector<int64_t> hetero = batch;
    hetero.push_back(2);
    CHECK(lazy.tensordicts()[2].get("hetero").sizes() == at::IntArrayRef(hetero));
  }
}

TEST_CASE("copies, casts, shape ops and indexing of a parent keep its heterogeneous lazy stack lazy (test_lazy.py::test_stack_hetero)",
          "[conformance][test_lazy.py]") {
  for (const auto& batch : kBatchSizes) {
    CAPTURE(batch);
    const TensorDict obs = nested_lazy_het_td(batch);
    const auto nb = static_cast<int64_t>(batch.size());
    auto check_lazy = [&](const TensorDict& td, int64_t stack_dim) {
      const auto lazy = LazyStackedTensorDict(td.get_td("lazy"));
      CHECK(lazy.stack_dim() == stack_dim);
      CHECK(lazy.tensordicts().size() == 3);
      CHECK(lazy.tensordicts()[0].get("hetero").size(-1) == 3);
      CHECK(lazy.tensordicts()[2].get("hetero").size(-1) == 2);
      CHECK(lazy.tensordicts()[1].contains("individual_1_tensor"));
      CHECK_FALSE(lazy.tensordicts()[0].contains("individual_1_tensor"));
    };
    check_lazy(obs.clone(), nb);
    check_lazy(obs.clone({.recurse = false}), nb);
    // clone(false) shares the members' tensors; clone() copies them.
    CHECK(LazyStackedTensorDict(obs.clone({.recurse = false}).get_td("lazy")).tensordicts()[2].get("hetero").data_ptr() ==
          LazyStackedTensorDict(obs.get_td("lazy")).tensordicts()[2].get("hetero").data_ptr());
    CHECK(LazyStackedTensorDict(obs.clone().get_td("lazy")).tensordicts()[2].get("hetero").data_ptr() !=
          LazyStackedTensorDict(obs.get_td("lazy")).tensordicts()[2].get("hetero").data_ptr());
    check_lazy(obs.to(at::kDouble), nb);
    CHECK(LazyStackedTensorDict(obs.to(at::kDouble).get_td("lazy")).tensordicts()[2].get("hetero").scalar_type() == at::kDouble);
    check_lazy(obs.unsqueeze(0), nb + 1);
    std::vector<int64_t> bigger{5};
    bigger.insert(bigger.end(), batch.begin(), batch.end());
    check_lazy(obs.expand(bigger), nb + 1);
    CHECK(obs.expand(bigger).get_td("lazy").batch_size()[0] == 5);
    check_lazy(obs.apply([](const at::Tensor& t) { return t + 1; }), nb);
    CHECK(all_equal(obs.apply([](const at::Tensor& t) { return t + 1; }), 1));
    if (nb > 0) {
      check_lazy(obs.index({0}), nb - 1);
      check_lazy(obs.index({Slice(0, 1)}), nb);
      check_lazy(obs.index({at::tensor({0, 0}, at::kLong)}), nb);
      CHECK(obs.index({at::tensor({0, 0}, at::kLong)}).get_td("lazy").batch_size()[0] == 2);
    }
  }
}

TEST_CASE("apply_ and apply with another tensordict go member by member (test_lazy.py::test_stack_hetero, test_stack_apply)",
          "[conformance][test_lazy.py]") {
  for (const auto& batch : kBatchSizes) {
    CAPTURE(batch);
    const TensorDict obs = nested_lazy_het_td(batch);
    TensorDict obs2 = obs.clone();
    obs2.apply_([](const at::Tensor& t) { return t + 1; });
    CHECK(all_equal(obs2, 1));
    CHECK(all_equal(obs, 0));
    const TensorDict sum = obs2.apply([](const at::Tensor& x, const at::Tensor& y) { return x + y; }, obs2);
    CHECK(is_lazy(sum.get_td("lazy")));
    CHECK(all_equal(sum, 2));
    CHECK(all_equal(obs2 + obs2, 2));
  }
  // test_stack_apply: the pairs of a nested lazy stack's members.
  TensorDict td0({{"common", at::ones({3})}}, {3});
  td0.set({"a", "b", "c"}, at::ones({3, 4}));
  td0.set({"a", "b", "d"}, at::ones({3, 4}));
  TensorDict td1({{"common", at::ones({3}) * 2}}, {3});
  td1.set({"a", "b", "c"}, at::ones({3, 5}) * 2);
  const TensorDict td({{"parent", tensordict::lazy_stack({td0, td1}, 0)}}, {2});
  // The stack dim lies inside the parent's batch: clone() copies member by member.
  const TensorDict copy = td.clone();
  CHECK(is_lazy(copy.get_td("parent")));
  const TensorDict applied = td.apply([](const at::Tensor& x, const at::Tensor& y) { return x + y; }, copy);
  const auto abc = LazyStackedTensorDict(applied.get_td({"parent", "a", "b"}));
  CHECK((abc.tensordicts()[0].get("c") == 2).all().item<bool>());
  CHECK((abc.tensordicts()[1].get("c") == 4).all().item<bool>());
  CHECK((abc.tensordicts()[0].get("d") == 2).all().item<bool>());
}

TEST_CASE("update and update_ between parents of heterogeneous lazy stacks write into the members (test_lazy.py::test_update_hetero)",
          "[conformance][test_lazy.py]") {
  for (const auto& batch : kBatchSizes) {
    CAPTURE(batch);
    TensorDict dest = nested_lazy_het_td(batch);
    TensorDict ones = dest.clone();
    ones.apply_([](const at::Tensor& t) { return t + 1; });
    const auto members_before = LazyStackedTensorDict(dest.get_td("lazy")).tensordicts();
    const auto hetero_ptr = members_before[2].get("hetero").data_ptr();
    dest.update_(ones);
    CHECK(all_equal(dest, 1));
    CHECK(LazyStackedTensorDict(dest.get_td("lazy")).tensordicts()[2].get("hetero").data_ptr() == hetero_ptr);

    TensorDict twos = ones.apply([](const at::Tensor& t) { return t + 1; });
    dest.update(twos);
    CHECK(all_equal(dest, 2));
    // update keeps the destination's members (it sets into them).
    CHECK(LazyStackedTensorDict(dest.get_td("lazy")).tensordicts()[2].impl() == members_before[2].impl());
  }
  // A lazy stack updated with a dense tensordict takes its parts.
  auto lazy = tensordict::lazy_stack({TensorDict({{"x", at::zeros({2})}}, {}), TensorDict({{"x", at::zeros({2})}}, {})}, 0);
  lazy.update(TensorDict({{"x", at::tensor({1.0, 1.0, 2.0, 2.0}).view({2, 2})}}, {2}));
  CHECK(lazy.tensordicts()[1].get("x").equal(at::tensor({2.0, 2.0})));
  CHECK_THROWS_WITH(lazy.update(TensorDict({{"x", at::zeros({3, 2})}}, {3})),
                    "update: a stack of 2 tensordicts cannot take 3 along its stack dim");
}

TEST_CASE("a lazy stack of named members is named, renaming names the members (_lazy.py:590 names, _set_names)",
          "[conformance][test_lazy.py]") {
  const TensorDict a({{"x", at::zeros({2, 3})}}, {2, 3}, std::nullopt, {"b", "c"});
  const TensorDict b({{"x", at::ones({2, 3})}}, {2, 3}, std::nullopt, {"b", "c"});
  auto lazy = tensordict::lazy_stack({a, b}, 1);
  CHECK((lazy.names() == Names{"b", std::nullopt, "c"}));
  lazy.rename_({"x0", "stack", "x2"});
  CHECK((lazy.names() == Names{"x0", "stack", "x2"}));
  CHECK((lazy.tensordicts()[0].names() == Names{"x0", "x2"}));
  CHECK((lazy.tensordicts()[1].names() == Names{"x0", "x2"}));
  // The stack dim's name follows indexing across the other dims.
  CHECK((lazy.index({Slice(), Slice(), 0}).names() == Names{"x0", "stack"}));
  lazy.refine_names({"x0", "stack", "x2"});
  CHECK_THROWS_WITH(lazy.rename_({"x0", "x0", "x2"}), "Some dimension names are non-unique: ['x0', 'x0', 'x2'].");
  // Members whose names differ leave the stack unnamed (tensordict raises
  // when asked for them).
  const TensorDict c({{"x", at::zeros({2, 3})}}, {2, 3}, std::nullopt, {"b", "other"});
  CHECK_FALSE(tensordict::lazy_stack({a, c}, 0).has_names());
  // Nested lazy stacks show the stack dim's name too.
  TensorDict outer_a({{"inner", a}}, {2, 3});
  TensorDict outer_b({{"inner", b}}, {2, 3});
  auto outer = tensordict::lazy_stack({outer_a, outer_b}, 0);
  outer.rename_({"s", "b", "c"});
  CHECK((outer.get_td("inner").names() == Names{"s", "b", "c"}));
}

TEST_CASE("the repr of a key whose members differ in rank shows shape [-1] (_lazy.py:658 get_item_shape)",
          "[conformance][test_lazy.py]") {
  auto lazy = tensordict::lazy_stack({TensorDict({{"x", at::zeros({2})}}, {}), TensorDict({{"x", at::zeros({2, 3})}}, {})}, 0);
  std::ostringstream text;
  text << lazy;
  // tensordict 0.15.3 on the same stack (run in the test venv)
  CHECK(text.str() == "LazyStackedTensorDict(batch_size=[2], stack_dim=0, fields={x: f32[-1]})");
  tensordict::set_printoptions detailed({.compact = false});
  CHECK_THAT(repr(lazy), Catch::Contains("x: Tensor(shape=torch.Size([-1]), device=cpu, dtype=torch.float32, is_shared=False)"));
}

TEST_CASE("a lazy stack is locked when all its members are, or when locked itself (test_errors.py::test_stack_cache_lock, "
          "test_stacked_append_and_insert)",
          "[conformance][test_errors.py]") {
  TensorDict td0({{"a", at::zeros({3})}}, {3});
  TensorDict td1({{"a", at::zeros({3})}}, {3});
  auto lazy = tensordict::lazy_stack({td0, td1}, 0);
  CHECK_FALSE(lazy.is_locked());
  td0.lock_();
  CHECK_FALSE(lazy.is_locked());
  td1.lock_();
  CHECK(lazy.is_locked());
  // Locked through its members only: lock_ is a no-op, the members stay free.
  lazy.lock_();
  td0.unlock_();
  CHECK_FALSE(lazy.is_locked());
  td1.unlock_();

  lazy.lock_();
  CHECK(td0.is_locked());
  CHECK(td1.is_locked());
  CHECK_THROWS_WITH(td1.unlock_(), Catch::StartsWith("Cannot unlock a tensordict that is part of a locked graph."));
  CHECK_THROWS_WITH(lazy.append(TensorDict({{"a", at::zeros({3})}}, {3})),
                    Catch::StartsWith("Cannot modify locked TensorDict."));
  CHECK_THROWS_WITH(lazy.set("b", at::zeros({2, 3})), Catch::StartsWith("Cannot modify locked TensorDict."));
  lazy.unlock_();
  CHECK_FALSE(td0.is_locked());
  CHECK_FALSE(td1.is_locked());
  CHECK_FALSE(lazy.is_locked());
  // A parent holding the lazy stack locks it too.
  TensorDict parent({{"stack", lazy}}, {2});
  parent.lock_();
  CHECK(LazyStackedTensorDict(parent.get_td("stack")).is_locked());
  CHECK(td0.is_locked());
  parent.unlock_();
  CHECK_FALSE(td0.is_locked());
}

TEST_CASE("an empty lazy stack has batch size 0 at the stack dim and takes members by append (test_lazy.py::test_create_empty)",
          "[conformance][test_lazy.py]") {
  LazyStackedTensorDict empty;
  CHECK(empty.batch_size() == at::IntArrayRef({0}));
  CHECK_FALSE(empty.device().has_value());
  CHECK_FALSE(empty.is_locked());  // no member to be locked through
  CHECK(empty.keys().empty());
  LazyStackedTensorDict described({}, 1, std::vector<int64_t>{1, 2}, at::Device(at::kCPU));
  CHECK(described.batch_size() == at::IntArrayRef({1, 0, 2}));
  CHECK(described.device() == at::Device(at::kCPU));
  // The first member sets the batch size, the others must share it.
  empty.append(TensorDict({{"a", at::ones({2, 3})}}, {2}));
  CHECK(empty.batch_size() == at::IntArrayRef({1, 2}));
  empty.append(TensorDict({{"a", at::zeros({2, 3})}}, {2}));
  CHECK(empty.get("a").equal(at::stack({at::ones({2, 3}), at::zeros({2, 3})})));
  CHECK_THROWS_WITH(empty.append(TensorDict({}, {3})), Catch::Contains("new_value has batch_size=[3]"));
  // A lazy stack of no tensordict given as a list is an error, as lazy_stack([]).
  CHECK(CONF_MESSAGE(tensordict::lazy_stack({})) == "lazy_stack: items cannot be empty");
  // Stacking empty stacks gives a dense [2, 0] (no member to pair up).
  CHECK(tensordict::maybe_dense_stack({LazyStackedTensorDict(), LazyStackedTensorDict()}).batch_size() == at::IntArrayRef({2, 0}));
  CHECK_THROWS_WITH((LazyStackedTensorDict({TensorDict({}, {2})}, 0, std::vector<int64_t>{3})),
                    Catch::Contains("batch_size [3] differs from the members' batch size [2]"));
}

TEST_CASE("a tensordict is in a lazy stack when it is one of its members, the same object (test_lazy.py::test_lazy_stacked_contains)",
          "[conformance][test_lazy.py]") {
  TensorDict td({{"a", TensorDict({{"b", at::rand({1, 2})}}, {1, 2})}, {"c", at::rand({1})}}, {1});
  const LazyStackedTensorDict lstd = tensordict::lazy_stack({td, td, td});
  CHECK(lstd.contains(td));
  CHECK_FALSE(lstd.contains(td.clone()));
  CHECK_FALSE(lstd.contains("random_string"));
  CHECK(lstd.contains("a"));
}

TEST_CASE("densify stacks equal shapes and makes nested tensors of the rest (test_lazy.py::test_densify)", "[conformance][test_lazy.py]") {
  TensorDict td0({{"a", at::zeros({1})}, {"b", at::zeros({2})}, {"d", TensorDict({{"e", at::zeros({})}}, {})}}, {});
  TensorDict td1({{"b", at::ones({1})}, {"c", at::ones({2})}, {"d", TensorDict({{"e", at::ones({})}}, {})}}, {});
  const LazyStackedTensorDict td = tensordict::lazy_stack({td0, td1});
  // Checks one densified level: a member lacking a key reads an empty tensor.
  auto check = [](const TensorDict& dense) {
    CHECK(dense.batch_size() == at::IntArrayRef({2}));
    const auto a = dense.get("a").unbind(0);
    CHECK(a[0].equal(at::zeros({1})));
    CHECK(a[1].numel() == 0);
    const auto b = dense.get("b").unbind(0);
    CHECK(b[0].equal(at::zeros({2})));
    CHECK(b[1].equal(at::ones({1})));
    const auto c = dense.get("c").unbind(0);
    CHECK(c[0].numel() == 0);
    CHECK(c[1].equal(at::ones({2})));
    CHECK_FALSE(dense.get({"d", "e"}).is_nested());
    CHECK(dense.get({"d", "e"}).equal(at::tensor({0.0f, 1.0f})));
  };
  const TensorDict dense = td.densify();
  CHECK(dense.kind() == tensordict::Kind::Dense);
  CHECK(dense.get("a").is_nested());
  check(dense);
  // A lazy stack held by a dense tensordict is densified in place of it.
  const TensorDict nest({{"td", td}}, {2});
  const TensorDict nest_dense = nest.densify();
  CHECK(nest_dense.get_td("td").kind() == tensordict::Kind::Dense);
  check(TensorDict(nest_dense.get_td("td")));
  // Densifying a dense tensordict keeps its tensors.
  CHECK(nest_dense.densify().get({"td", "d", "e"}).data_ptr() == nest_dense.get({"td", "d", "e"}).data_ptr());
  // Nested tensors stack along dim 0 only; empty shapes cannot be left empty.
  const LazyStackedTensorDict along1 =
      tensordict::lazy_stack({TensorDict({{"x", at::zeros({2, 1})}}, {2}), TensorDict({{"x", at::zeros({2, 3})}}, {2})}, 1);
  CHECK(CONF_MESSAGE(along1.densify()) ==
        "densify: the members' tensors at key 'x' differ in shape and the stack dim is 1: a nested tensor stacks along dim 0 only");
  const LazyStackedTensorDict scalars =
      tensordict::lazy_stack({TensorDict({{"x", at::zeros({})}}, {}), TensorDict({{"y", at::zeros({})}}, {})});
  CHECK_THROWS_WITH(scalars.densify(), Catch::Contains("key 'x' is missing from some members and its tensors have an empty shape"));
}

TEST_CASE("dense_stack_tds stacks the outer level densely and keeps heterogeneous inner stacks lazy (test_generic.py::test_dense_stack_tds)",
          "[conformance][test_generic.py]") {
  for (int64_t stack_dim : {0, 1, 2}) {
    for (int64_t nested_stack_dim : {0, 1, 2}) {
      CAPTURE(stack_dim, nested_stack_dim);
      const std::vector<int64_t> batch{5, 6};
      TensorDict td0({{"a", at::zeros({5, 6, 3})}}, batch);
      TensorDict td1({{"a", at::zeros({5, 6, 4})}, {"b", at::zeros({5, 6, 2})}}, batch);
      const LazyStackedTensorDict td_lazy = tensordict::lazy_stack({td0, td1}, nested_stack_dim);
      const TensorDict container({{"lazy", td_lazy}}, td_lazy.batch_size());
      TensorDict container_plus_one = container.clone();
      container_plus_one.apply_([](const at::Tensor& t) { return t + 1; });
      CHECK(is_lazy(container_plus_one.get_td("lazy")));
      const LazyStackedTensorDict td_stack = tensordict::lazy_stack({container, container_plus_one}, stack_dim);
      CHECK(td_stack.stack_dim() == stack_dim);
      const TensorDict dense = tensordict::dense_stack_tds(td_stack);
      CHECK(dense.kind() == tensordict::Kind::Dense);
      const LazyStackedTensorDict inner(dense.get_td("lazy"));
      CHECK_FALSE(inner.tensordicts()[0].contains("b"));
      CHECK(inner.tensordicts()[1].contains("b"));
      CHECK(inner.stack_dim() == (stack_dim > nested_stack_dim ? nested_stack_dim : nested_stack_dim + 1));
      // The list form is the same.
      const TensorDict from_list = tensordict::dense_stack_tds({container, container_plus_one}, stack_dim);
      const LazyStackedTensorDict inner_list(from_list.get_td("lazy"));
      CHECK(inner_list.stack_dim() == inner.stack_dim());
      // Each inner member holds, along stack_dim, the container's value then the one plus one.
      for (std::size_t m = 0; m < 2; ++m) {
        for (const char* key : {"a", "b"}) {
          if (!inner.tensordicts()[m].contains(key)) continue;
          const at::Tensor t = inner.tensordicts()[m].get(key);
          const at::Tensor expected_list = inner_list.tensordicts()[m].get(key);
          CHECK(t.equal(expected_list));
          const int64_t d = stack_dim > nested_stack_dim ? stack_dim - 1 : stack_dim;
          for (int64_t i = 0; i < 2; ++i) CHECK((t.select(d, i) == i).all().item<bool>());
        }
      }
    }
  }
  // Another kind is returned as it is.
  const TensorDict plain({{"a", at::zeros({2})}}, {2});
  CHECK(tensordict::dense_stack_tds(plain).impl() == plain.impl());
}

TEST_CASE("copies, casts, apply and pointwise math run member by member across a nested lazy stack's dim inside the batch "
          "(test_lazy.py::test_stack_apply, _lazy.py apply)",
          "[conformance][test_lazy.py]") {
  TensorDict m0({{"x", at::ones({3})}}, {});
  TensorDict m1({{"x", at::full({2}, 2.0)}, {"y", at::zeros({1})}}, {});
  const TensorDict td({{"lazy", tensordict::lazy_stack({m0, m1})}, {"d", at::ones({2, 4})}}, {2});
  // Each result keeps "lazy" a stack along dim 0 of members whose x is
  // fn(1) and fn(2), and member 1 keeps its own key.
  auto check = [](const TensorDict& r, double x0, double x1, at::ScalarType dtype) {
    REQUIRE(is_lazy(r.get_td("lazy")));
    const LazyStackedTensorDict lazy(r.get_td("lazy"));
    CHECK(lazy.stack_dim() == 0);
    CHECK(lazy.tensordicts()[0].get("x").equal(at::full({3}, x0, dtype)));
    CHECK(lazy.tensordicts()[1].get("x").equal(at::full({2}, x1, dtype)));
    CHECK(lazy.tensordicts()[1].contains("y"));
    CHECK(r.get("d").scalar_type() == dtype);
  };
  check(td.clone(), 1, 2, at::kFloat);
  check(td.clone({.recurse = false}), 1, 2, at::kFloat);
  check(td.detach(), 1, 2, at::kFloat);
  check(td.to(at::kDouble), 1, 2, at::kDouble);
  check(td.apply([](const at::Tensor& t) { return t * 3; }), 3, 6, at::kFloat);
  check(td.neg(), -1, -2, at::kFloat);
  check(td + 1, 2, 3, at::kFloat);
  check(td.pow(2), 1, 4, at::kFloat);
  check(td.clamp(0.0, 1.5), 1, 1.5, at::kFloat);
  // A copy owns its members' tensors.
  const TensorDict copy = td.clone();
  LazyStackedTensorDict(copy.get_td("lazy")).tensordicts()[0].get("x").fill_(9);
  CHECK(m0.get("x").equal(at::ones({3})));
  // clone(false) shares them.
  const TensorDict shallow = td.clone({.recurse = false});
  CHECK(LazyStackedTensorDict(shallow.get_td("lazy")).tensordicts()[0].get("x").data_ptr() == m0.get("x").data_ptr());
  // A batch-shaped operand: each member meets its element (tensordict 0.15.3
  // on the same values: x [3, 3, 3] and [10, 10], d rows of 3 and 5).
  const TensorDict scaled = td * at::tensor({3.0f, 5.0f});
  check(scaled, 3, 10, at::kFloat);
  CHECK(scaled.get("d").equal(at::tensor({3.0f, 5.0f}).unsqueeze(1).expand({2, 4})));
}

TEST_CASE("get_padded pads through lazy stacks of members of different shapes (test_lazy.py::test_lazy_get, test_set_list_stack)",
          "[conformance][test_lazy.py]") {
  auto leaf = [](int64_t n) { return TensorDict({{"a", at::ones({n})}}, {}); };
  const LazyStackedTensorDict outer = tensordict::lazy_stack(
      {tensordict::lazy_stack({leaf(1), leaf(2)}), tensordict::lazy_stack({leaf(3), leaf(1)})}, 0);
  const at::Tensor padded = outer.get_padded("a", -1);
  // [2 outer, 2 inner, 3 longest]: ones, then the pad.
  const at::Tensor expected = at::tensor({1, -1, -1, 1, 1, -1, 1, 1, 1, 1, -1, -1}).to(at::kFloat).view({2, 2, 3});
  CHECK(padded.equal(expected));
  // A nested key reaching a lazy stack inside each member.
  const LazyStackedTensorDict holders = tensordict::lazy_stack(
      {TensorDict({{"inner", tensordict::lazy_stack({leaf(1), leaf(2)})}}, {2}),
       TensorDict({{"inner", tensordict::lazy_stack({leaf(3), leaf(1)})}}, {2})});
  CHECK(holders.get_padded({"inner", "a"}, -1).equal(expected));
  // Members of different ranks cannot be padded together: named error.
  const LazyStackedTensorDict ranks =
      tensordict::lazy_stack({TensorDict({{"a", at::ones({2})}}, {}), TensorDict({{"a", at::ones({2, 2})}}, {})});
  CHECK_THROWS_WITH(ranks.get_padded("a"), Catch::Contains("key 'a' has tensors of different numbers of dims"));
}
