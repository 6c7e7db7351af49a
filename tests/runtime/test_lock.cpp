// Locking: what a locked tensordict refuses and allows, nesting, two parents, guards.
#include "helpers.h"

using namespace tensordict;
using namespace td_test;
using Catch::Matchers::Contains;

TEST_CASE("a locked tensordict refuses new keys, deletion and renaming with tensordict's message") {
  auto td = sample({2});
  td.lock_();
  REQUIRE(td.is_locked());
  const std::string lock_error = "Cannot modify locked TensorDict";
  REQUIRE_THAT(TD_MESSAGE(td.set("new", at::zeros({2}))), Contains(lock_error) && Contains("set_()"));
  REQUIRE_THAT(TD_MESSAGE(td.set({"fresh", "x"}, at::zeros({2}))), Contains(lock_error));
  REQUIRE_THAT(TD_MESSAGE(td.del_("a")), Contains(lock_error));
  REQUIRE_THAT(TD_MESSAGE(td.pop("a")), Contains(lock_error));
  REQUIRE_THAT(TD_MESSAGE(td.rename_key_("a", "z")), Contains(lock_error));
  REQUIRE_THAT(TD_MESSAGE(td.clear()), Contains(lock_error));
  REQUIRE_THAT(TD_MESSAGE(td.create_nested("n2")), Contains(lock_error));
  REQUIRE_THAT(TD_MESSAGE(td.set_non_tensor("s", "x")), Contains(lock_error));
  REQUIRE_THAT(TD_MESSAGE(td.set({"nested", "new"}, at::zeros({2}))), Contains(lock_error));
  REQUIRE(td.keys(true, true) == sample({2}).keys(true, true));
}

TEST_CASE("a locked tensordict allows in-place writes") {
  auto td = sample({2});
  at::Tensor a = td.get("a");
  td.lock_();
  td.set_("a", at::ones({2, 4}));
  REQUIRE(td.get("a").data_ptr() == a.data_ptr());
  REQUIRE(at::equal(a, at::ones({2, 4})));
  td.set_({"nested", "c"}, at::zeros({2, 2, 3}));
  td.index_put_({0}, 5);
  REQUIRE(td.get("b").index({0}).item<int64_t>() == 5);
  td.set_at_("b", at::scalar_tensor(9, at::kLong), {1});
  REQUIRE(td.get("b").index({1}).item<int64_t>() == 9);
  REQUIRE_THAT(TD_MESSAGE(td.set_("a", at::ones({2, 5}))), Contains("set_ failed for key 'a'"));
}

// Ports tensordict's test_methods.py::test_lock_write: tensordict's set() is
// never in place (_td.py:2617), so on a locked tensordict it raises for every
// key, existing ones included; set_() writes in place; update() sets, so it
// raises too, and update_() writes in place.
TEST_CASE("a locked tensordict refuses set() of existing keys; set_ and update_ write in place", "[lock]") {
  auto td = sample({2});
  const TensorDict copy(sample({2}).apply([](const at::Tensor& t) { return t + 1; }));
  td.lock_();
  for (const auto& item : copy.items(true)) {
    const auto& [key, value] = item;  // (clang 14 lambdas cannot capture structured bindings)
    INFO(key.repr());
    REQUIRE_THAT(TD_MESSAGE(td.set(item.first, item.second)), Contains("Cannot modify locked TensorDict"));
  }
  REQUIRE_THAT(TD_MESSAGE(td.update(copy)), Contains("Cannot modify locked TensorDict"));
  REQUIRE(td.allclose(sample({2})));
  for (const auto& [key, value] : copy.items(true, true)) td.set_(key, value.tensor());
  REQUIRE(td.allclose(copy));
  td.update_(sample({2}));
  REQUIRE(td.allclose(sample({2})));
  td.unlock_();
  for (const auto& [key, value] : copy.items(true)) td.set(key, value);
  REQUIRE(td.allclose(copy));
}

// Ports tensordict's test_methods.py::test_lock and test_lock_write on the
// sub_td fixtures: a sub-tensordict's lock is its source's (_td.py:4803), and
// locking or unlocking the view itself raises (_td.py:4816).
TEST_CASE("a sub-tensordict's lock is its source's; locking the view raises", "[lock][sub]") {
  auto td = sample({4});
  auto sub = td.get_sub_tensordict({1});
  REQUIRE_FALSE(sub.is_locked());
  REQUIRE_THAT(TD_MESSAGE(sub.lock_()), Contains("Cannot lock a _SubTensorDict. Lock the parent tensordict instead."));
  REQUIRE_FALSE(td.is_locked());
  REQUIRE_FALSE(sub.is_locked());
  sub.unlock_();  // already unlocked: nothing to do
  td.lock_();
  REQUIRE(sub.is_locked());
  REQUIRE(sub.get_td("nested").is_locked());
  sub.lock_();  // already locked through its source: nothing to do
  REQUIRE_THAT(TD_MESSAGE(sub.unlock_()), Contains("Cannot unlock a _SubTensorDict. Unlock the parent tensordict instead."));
  REQUIRE_THAT(TD_MESSAGE(sub.set("new", at::zeros({}))), Contains("Cannot modify locked TensorDict"));
  REQUIRE_FALSE(td.contains("new"));
  sub.set_("a", at::ones({4}));  // in-place writes still reach the source
  REQUIRE(td.get("a").index({1}).eq(1).all().item<bool>());
  td.unlock_();
  REQUIRE_FALSE(sub.is_locked());
  REQUIRE_FALSE(sub.get_td("nested").is_locked());
}

// Ports tensordict's test_methods.py::test_reshape with lock=True: shape ops
// keep the lock (_td.py:2187 and its neighbours: _fast_apply(propagate_lock=True)),
// while indexing and copies give unlocked results (see below).
TEST_CASE("shape ops of a locked tensordict give locked results", "[lock]") {
  auto td = sample({2, 3});
  td.lock_();
  const std::vector<std::pair<std::string, TensorDictBase>> results = {
      {"view", td.view({6})},
      {"reshape", td.reshape({6})},
      {"permute", td.permute({1, 0})},
      {"transpose", td.transpose(0, 1)},
      {"squeeze", td.unsqueeze(0).squeeze(0)},
      {"squeeze all", td.unsqueeze(0).squeeze()},
      {"unsqueeze", td.unsqueeze(0)},
      {"expand", td.expand({5, 2, 3})},
      {"flatten", td.flatten(0, 1)},
      {"unflatten", td.unflatten(1, {3, 1})},
  };
  for (const auto& [name, held] : results) {
    const TensorDictBase& result = held;  // (clang 14 lambdas cannot capture structured bindings)
    INFO(name);
    REQUIRE(result.is_locked());
    REQUIRE(result.get_td("nested").is_locked());
    REQUIRE_THAT(TD_MESSAGE(TensorDict(result).set("new", at::zeros(result.batch_size()))), Contains("Cannot modify locked TensorDict"));
  }
  td.unlock_();
  REQUIRE_FALSE(td.view({6}).is_locked());
  REQUIRE_FALSE(td.permute({1, 0}).get_td("nested").is_locked());
}

TEST_CASE("locks reach nested tensordicts; a nested one cannot be unlocked alone") {
  auto td = sample({2});
  TensorDictBase nested = td.get_td("nested");
  td.lock_();
  REQUIRE(nested.is_locked());
  REQUIRE_THAT(TD_MESSAGE(nested.set("x", at::zeros({2}))), Contains("Cannot modify locked TensorDict"));
  REQUIRE_THAT(TD_MESSAGE(nested.unlock_()), Contains("part of a locked graph"));
  td.unlock_();
  REQUIRE_FALSE(td.is_locked());
  REQUIRE_FALSE(nested.is_locked());
  nested.set("x", at::zeros({2}));
  REQUIRE(td.contains({"nested", "x"}));
}

// Ports test_errors.py::test_lock_two_roots: a tensordict held by two locked
// roots cannot be unlocked through either (the call fails and relocks) until
// both are grouped under a common root, which unlocks them all.
TEST_CASE("a tensordict in two locked graphs: unlocking either root fails and relocks it") {
  TensorDict td;
  td.set({"a", "b", "c", "d"}, at::tensor(1.0));
  td.lock_();
  TensorDictBase a = td.get_td("a");
  TensorDictBase c = td.get_td({"a", "b", "c"});
  TensorDict other({{"a", a}});
  other.lock_();
  REQUIRE(TD_MESSAGE(other.unlock_()).rfind("Cannot unlock a tensordict that is part of a locked graph.", 0) == 0);
  REQUIRE(other.is_locked());
  REQUIRE(a.is_locked());
  REQUIRE_THAT(TD_MESSAGE(td.unlock_()), Contains("part of a locked graph"));
  REQUIRE(td.is_locked());
  REQUIRE(c.is_locked());
  REQUIRE_THROWS(td.set("new", at::tensor(0.0)));
  // Grouped under one root, both graphs unlock.
  TensorDict super({{"td", td}, {"other", other}});
  super.lock_();
  super.unlock_();
  REQUIRE_FALSE(td.is_locked());
  REQUIRE_FALSE(other.is_locked());
  REQUIRE_FALSE(c.is_locked());
  td.set("new", at::tensor(0.0));
  // Once the other root is unlocked, the first unlocks alone.
  td.lock_();
  other.lock_();
  super.lock_();
  super.unlock_();
  REQUIRE_FALSE(a.is_locked());
}

// Ports test_errors.py::test_nested_lock_erros: a nested tensordict of a
// locked root cannot be unlocked.
TEST_CASE("a nested tensordict of a locked root cannot be unlocked") {
  TensorDict td;
  td.set({"a", "b", "c", "d"}, at::tensor(1.0));
  td.lock_();
  REQUIRE_THAT(TD_MESSAGE(td.get_td("a").unlock_()), Contains("part of a locked graph"));
  REQUIRE_THAT(TD_MESSAGE(td.get_td({"a", "b"}).unlock_()), Contains("part of a locked graph"));
  REQUIRE(td.get_td({"a", "b"}).is_locked());
  td.unlock_();
  REQUIRE_FALSE(td.get_td({"a", "b", "c"}).is_locked());
}

TEST_CASE("LockGuard locks or unlocks for a scope and restores the state") {
  auto td = sample({2});
  {
    LockGuard guard(td);
    REQUIRE(td.is_locked());
    REQUIRE_THROWS(td.set("new", at::zeros({2})));
  }
  REQUIRE_FALSE(td.is_locked());
  td.lock_();
  {
    LockGuard guard(td, /*lock=*/false);
    REQUIRE_FALSE(td.is_locked());
    td.set("new", at::zeros({2}));
  }
  REQUIRE(td.is_locked());
  REQUIRE(td.contains("new"));
}

TEST_CASE("results of ops on a locked tensordict are new and unlocked") {
  auto td = sample({2});
  td.lock_();
  auto c = td.clone();
  REQUIRE_FALSE(c.is_locked());
  c.set("new", at::zeros({2}));
  REQUIRE_FALSE(td.index({0}).is_locked());
}
