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
  td.set("a", at::ones({2, 4}));  // existing key: written in place
  REQUIRE(td.get("a").data_ptr() == a.data_ptr());
  REQUIRE(at::equal(a, at::ones({2, 4})));
  td.set_({"nested", "c"}, at::zeros({2, 2, 3}));
  td.index_put_({0}, 5);
  REQUIRE(td.get("b").index({0}).item<int64_t>() == 5);
  td.set_at_("b", at::scalar_tensor(9, at::kLong), {1});
  REQUIRE(td.get("b").index({1}).item<int64_t>() == 9);
  REQUIRE_THAT(TD_MESSAGE(td.set("a", at::ones({2, 5}))), Contains("set_ failed for key 'a'"));
}

TEST_CASE("locks reach nested tensordicts; a nested one cannot be unlocked alone") {
  auto td = sample({2});
  TensorDictBase nested = td.get_td("nested");
  td.lock_();
  REQUIRE(nested.is_locked());
  REQUIRE_THAT(TD_MESSAGE(nested.set("x", at::zeros({2}))), Contains("Cannot modify locked TensorDict"));
  REQUIRE_THAT(TD_MESSAGE(nested.unlock_()), Contains("part of a locked tensordict"));
  td.unlock_();
  REQUIRE_FALSE(td.is_locked());
  REQUIRE_FALSE(nested.is_locked());
  nested.set("x", at::zeros({2}));
  REQUIRE(td.contains({"nested", "x"}));
}

TEST_CASE("a tensordict in two locked parents stays locked until both unlock") {
  TensorDict shared({{"x", at::zeros({2})}}, {2});
  TensorDict p1({{"child", shared}}, {2});
  TensorDict p2({{"child", shared}}, {2});
  REQUIRE(p1.get_td("child").impl() == p2.get_td("child").impl());
  p1.lock_();
  p2.lock_();
  p1.unlock_();
  REQUIRE_FALSE(p1.is_locked());
  REQUIRE(shared.is_locked());  // p2 still holds it locked
  REQUIRE_THAT(TD_MESSAGE(shared.unlock_()), Contains("part of a locked tensordict"));
  p2.unlock_();
  REQUIRE_FALSE(shared.is_locked());
  p1.lock_();
  p2.lock_();
  p2.unlock_();
  REQUIRE(shared.is_locked());  // now p1 holds it
  p1.unlock_();
  REQUIRE_FALSE(shared.is_locked());
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
