// Locking: what a locked tensordict refuses and allows, nesting, guards (set()
// when locked, sub-tensordicts, shape ops and two locked roots are in
// tests/conformance/test_locks.cpp).
#include "helpers.h"

#include <nlohmann/json.hpp>

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

// Expected values: tensordict 0.15.3 run in the venv (pasted): a locked
// TensorDict's or lazy stack's to(torch.float64) and to("cpu") are locked,
// their nested tensordicts too; a locked _SubTensorDict's to() is a dense
// TensorDict, unlocked, as is a PersistentTensorDict's.
TEST_CASE("to(dtype) and to(device) keep the lock of a dense tensordict or a lazy stack") {
  TensorDict dense({{"a", at::zeros({3})}, {"b", TensorDict({{"c", at::zeros({3, 2})}}, {3})}}, {3});
  TensorDict lazy = lazy_stack({TensorDict({{"a", at::zeros({3})}}, {}), TensorDict({{"a", at::zeros({3})}}, {})}, 0);
  for (TensorDict td : {dense, lazy}) {
    INFO(td.type_name());
    td.lock_();
    for (const TensorDict& moved : {td.to(at::kDouble), td.to(at::Device(at::kCPU)), td.cpu(), td.to_float()}) {
      CHECK(moved.is_locked());
      CHECK(moved.kind() == td.kind());
      CHECK_THAT(TD_MESSAGE(TensorDict(moved).set("new", at::zeros({td.len()}))), Contains("Cannot modify locked TensorDict"));
    }
    td.unlock_();
    CHECK_FALSE(td.to(at::kDouble).is_locked());
    CHECK_FALSE(td.to(at::Device(at::kCPU)).is_locked());
  }
  CHECK(dense.lock_().to(at::kDouble).get_td("b").is_locked());
  dense.unlock_();
  // A locked source's sub-view: the dense copy comes unlocked, as in tensordict.
  TensorDict source({{"a", at::zeros({4, 3})}}, {4, 3});
  source.lock_();
  const TensorDict sub = source.get_sub_tensordict({1});
  CHECK(sub.is_locked());
  CHECK_FALSE(sub.to(at::kDouble).is_locked());
  CHECK_FALSE(sub.to(at::Device(at::kCPU)).is_locked());
}

TEST_CASE("to(device) returns the tensordict already there, and gives a device-less one the device") {
  TensorDict loose({{"a", at::zeros({3})}, {"b", at::ones({3})}}, {3});
  // tensordict 0.15.3: TensorDict(a=..., batch_size=[3]).to("cpu") is a new
  // tensordict with device cpu, sharing the tensors.
  const TensorDict placed = loose.to(at::Device(at::kCPU));
  CHECK(placed.impl() != loose.impl());
  CHECK(placed.device() == at::Device(at::kCPU));
  CHECK_FALSE(loose.device().has_value());
  CHECK(placed.get("a").is_same(loose.get("a")));
  // ... and a tensordict with that device is returned as it is (`is td`).
  CHECK(placed.to(at::Device(at::kCPU)).impl() == placed.impl());
  CHECK(placed.cpu().impl() == placed.impl());
  // A consolidated device-less one: a new consolidated one over the same
  // storage (tensordict: is_consolidated() and the same data_ptr).
  const TensorDict consolidated = loose.consolidate();
  const TensorDict moved = consolidated.to(at::Device(at::kCPU));
  CHECK(moved.impl() != consolidated.impl());
  CHECK(moved.device() == at::Device(at::kCPU));
  CHECK(moved.is_consolidated());
  CHECK(moved.get("a").data_ptr() == consolidated.get("a").data_ptr());
  CHECK(moved.to(at::Device(at::kCPU)).impl() == moved.impl());
  if (at::hasCUDA()) {
    // The same rules on a GPU: tensordict 0.15.3's td.to("cuda:0") is a new
    // tensordict on cuda:0, and `on_gpu.to("cuda:0") is on_gpu`.
    const at::Device gpu(at::kCUDA, 0);
    const TensorDict on_gpu = loose.to(gpu);
    CHECK(on_gpu.impl() != loose.impl());
    CHECK(on_gpu.device() == gpu);
    CHECK(on_gpu.get("a").device() == gpu);
    CHECK(on_gpu.to(gpu).impl() == on_gpu.impl());
    CHECK(on_gpu.cuda().impl() == on_gpu.impl());
    CHECK(on_gpu.to(at::Device(at::kCPU)).impl() != on_gpu.impl());
  }
}
