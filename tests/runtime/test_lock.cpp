// Locking: what a locked tensordict refuses and allows, nesting, guards (set()
// when locked, sub-tensordicts, shape ops and two locked roots are in
// tests/conformance/test_locks.cpp).
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
  REQUIRE(td.keys({.include_nested = true, .leaves_only = true}) == sample({2}).keys({.include_nested = true, .leaves_only = true}));
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

TEST_CASE("locks reach nested tensordicts, a nested one cannot be unlocked alone") {
  auto td = sample({2});
  TensorDict nested = td.get_td("nested");
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
    LockGuard guard(td, LockGuard::Unlock);
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
