// Ports of tensordict's tests of locking: set() on a locked tensordict, the
// lock of a sub-tensordict, locks kept by shape ops, and a tensordict held by
// two locked graphs.
#include "../builders.h"
#include "fixtures.h"

using namespace conformance;
using Catch::Matchers::Contains;

using td_test::sample;

// Ports tensordict's test_methods.py::test_lock_write: tensordict's set() is
// never in place (_td.py:2617), so on a locked tensordict it raises for every
// key, existing ones included; set_() writes in place; update() sets, so it
// raises too, and update_() writes in place.
TEST_CASE(
    "a locked tensordict refuses set() of existing keys, set_ and update_ write in place "
    "(test_methods.py::test_lock_write)",
    "[conformance][test_methods.py]") {
  auto td = sample({2});
  const TensorDict copy(sample({2}).apply([](const at::Tensor& t) { return t + 1; }));
  td.lock_();
  for (const auto& item : copy.items({.include_nested = true})) {
    const auto& [key, value] = item;  // (clang 14 lambdas cannot capture structured bindings)
    INFO(key.repr());
    REQUIRE_THAT(CONF_MESSAGE(td.set(item.first, item.second)), Contains("Cannot modify locked TensorDict"));
  }
  REQUIRE_THAT(CONF_MESSAGE(td.update(copy)), Contains("Cannot modify locked TensorDict"));
  REQUIRE(td.allclose(sample({2})));
  for (const auto& [key, value] : copy.items({.include_nested = true, .leaves_only = true})) td.set_(key, value.tensor());
  REQUIRE(td.allclose(copy));
  td.update_(sample({2}));
  REQUIRE(td.allclose(sample({2})));
  td.unlock_();
  for (const auto& [key, value] : copy.items({.include_nested = true})) td.set(key, value);
  REQUIRE(td.allclose(copy));
}

// Ports tensordict's test_methods.py::test_lock and test_lock_write on the
// sub_td fixtures: a sub-tensordict's lock is its source's (_td.py:4803), and
// locking or unlocking the view itself raises (_td.py:4816).
TEST_CASE(
    "a sub-tensordict's lock is its source's, locking the view raises (test_methods.py::test_lock, test_lock_write)",
    "[conformance][test_methods.py]") {
  auto td = sample({4});
  auto sub = td.get_sub_tensordict({1});
  REQUIRE_FALSE(sub.is_locked());
  REQUIRE_THAT(CONF_MESSAGE(sub.lock_()),
               Contains("Cannot lock a _SubTensorDict. Lock the parent tensordict instead."));
  REQUIRE_FALSE(td.is_locked());
  REQUIRE_FALSE(sub.is_locked());
  sub.unlock_();  // already unlocked: nothing to do
  td.lock_();
  REQUIRE(sub.is_locked());
  REQUIRE(sub.get_td("nested").is_locked());
  sub.lock_();  // already locked through its source: nothing to do
  REQUIRE_THAT(CONF_MESSAGE(sub.unlock_()),
               Contains("Cannot unlock a _SubTensorDict. Unlock the parent tensordict instead."));
  REQUIRE_THAT(CONF_MESSAGE(sub.set("new", at::zeros({}))), Contains("Cannot modify locked TensorDict"));
  REQUIRE_FALSE(td.contains("new"));
  sub.set_("a", at::ones({4}));  // in-place writes still reach the source
  REQUIRE(td.get("a").index({1}).eq(1).all().item<bool>());
  td.unlock_();
  REQUIRE_FALSE(sub.is_locked());
  REQUIRE_FALSE(sub.get_td("nested").is_locked());
}

// Ports tensordict's test_methods.py::test_reshape with lock=True: shape ops
// keep the lock (_td.py:2187 and its neighbours: _fast_apply(propagate_lock=True)),
// while indexing and copies give unlocked results (tests/runtime/test_lock.cpp).
TEST_CASE("shape ops of a locked tensordict give locked results (test_methods.py::test_reshape)",
          "[conformance][test_methods.py]") {
  auto td = sample({2, 3});
  td.lock_();
  const std::vector<std::pair<std::string, TensorDict>> results = {
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
    const TensorDict& result = held;  // (clang 14 lambdas cannot capture structured bindings)
    INFO(name);
    REQUIRE(result.is_locked());
    REQUIRE(result.get_td("nested").is_locked());
    REQUIRE_THAT(CONF_MESSAGE(TensorDict(result).set("new", at::zeros(result.batch_size()))),
                 Contains("Cannot modify locked TensorDict"));
  }
  td.unlock_();
  REQUIRE_FALSE(td.view({6}).is_locked());
  REQUIRE_FALSE(td.permute({1, 0}).get_td("nested").is_locked());
}

// Ports test_errors.py::test_lock_two_roots: a tensordict held by two locked
// roots cannot be unlocked through either (the call fails and relocks) until
// both are grouped under a common root, which unlocks them all.
TEST_CASE(
    "a tensordict in two locked graphs: unlocking either root fails and relocks it "
    "(test_errors.py::test_lock_two_roots)",
    "[conformance][test_errors.py]") {
  TensorDict td;
  td.set({"a", "b", "c", "d"}, at::tensor(1.0));
  td.lock_();
  TensorDict a = td.get_td("a");
  TensorDict c = td.get_td({"a", "b", "c"});
  TensorDict other({{"a", a}});
  other.lock_();
  REQUIRE(CONF_MESSAGE(other.unlock_()).rfind("Cannot unlock a tensordict that is part of a locked graph.", 0) == 0);
  REQUIRE(other.is_locked());
  REQUIRE(a.is_locked());
  REQUIRE_THAT(CONF_MESSAGE(td.unlock_()), Contains("part of a locked graph"));
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
