// consolidate(), to(device) and pin_memory() of generated tensorclasses: the
// dynamic core's mechanism through the tensordict form, with the static type,
// non-tensor fields and nested tensorclasses kept.
#include <ATen/ATen.h>
#include <catch2/catch.hpp>
#include <tensordict/tensordict.h>

#include <type_traits>

#include "../message_of.h"
#include "tc_obs.tc.h"

using Catch::Matchers::Contains;
using tct::Observation;
using tct::common::Agent;

namespace {

Observation make(int64_t batch) {
  Observation::Fields f;
  f.pixels = at::arange(batch * 3 * 4 * 5).reshape({batch, 3, 4, 5}).to(at::kByte);
  f.reward = at::arange(batch).to(at::kFloat) + 0.5;
  f.agent = Agent({.pos = at::arange(batch * 2).reshape({batch, 2}).to(at::kFloat),
                   .vel = -at::arange(batch * 2).reshape({batch, 2}).to(at::kFloat)},
                  {batch});
  f.task = "run";
  f.scale = 2.5;
  return Observation(std::move(f), {batch});  // depth (optional) left unset
}

const c10::StorageImpl* storage_of(const at::Tensor& t) { return t.storage().unsafeGetStorageImpl(); }

}  // namespace

TEST_CASE("a tensorclass consolidates into one storage and keeps its type and non-tensor fields", "[consolidate]") {
  const Observation o = make(3);
  const auto c = o.consolidate();
  static_assert(std::is_same_v<std::remove_cv_t<decltype(c)>, Observation>);
  REQUIRE(c.is_consolidated());
  REQUIRE_FALSE(o.is_consolidated());
  REQUIRE(c.is_locked());
  const at::Tensor storage = *c.consolidated_storage();
  for (const at::Tensor* t : {&c.pixels, &c.reward, &c.agent.pos, &c.agent.vel}) REQUIRE(storage_of(*t) == storage_of(storage));
  REQUIRE(at::equal(c.pixels, o.pixels));
  REQUIRE(at::equal(c.reward, o.reward));
  REQUIRE(at::equal(c.agent.pos, o.agent.pos));
  REQUIRE(at::equal(c.agent.vel, o.agent.vel));
  REQUIRE_FALSE(c.depth.defined());
  REQUIRE(c.task == "run");
  REQUIRE(c.scale == 2.5);
  REQUIRE(c.batch_size() == o.batch_size());
  REQUIRE(c.agent.batch_size() == o.agent.batch_size());

  // A field replaced by another tensor: no longer one storage.
  auto replaced = c;
  replaced.reward = at::zeros({3});
  REQUIRE_FALSE(replaced.is_consolidated());
  // unlock_ ends it (tensordict's rule); moving to where it is keeps it.
  auto unlocked = c;
  unlocked.unlock_();
  REQUIRE_FALSE(unlocked.is_consolidated());
  REQUIRE(c.to(at::Device(at::kCPU)).is_consolidated());
  REQUIRE(c.clone().is_consolidated() == false);
}

TEST_CASE("tensorclass consolidate errors name the field", "[consolidate]") {
  Observation o = make(2);
  o.reward = o.reward.to_sparse();
  REQUIRE_THAT(td_test::message_of([&] { (void)o.consolidate(); }),
               Contains("consolidate failed for key 'reward': a tensor of layout Sparse cannot be consolidated"));
  // A field that requires grad is copied detached (tensordict 0.15.3).
  Observation grad = make(2);
  grad.reward = grad.reward.clone().requires_grad_();
  const auto c = grad.consolidate();
  REQUIRE(c.is_consolidated());
  REQUIRE_FALSE(c.reward.requires_grad());
  REQUIRE(at::equal(c.reward, grad.reward));
}

TEST_CASE("a consolidated tensorclass moves to the GPU and back as one storage", "[consolidate][cuda]") {
  if (!at::hasCUDA()) {
    SUCCEED("no CUDA device: run on a GPU machine");
    return;
  }
  const at::Device gpu(at::kCUDA, 0);
  const Observation o = make(4);
  const auto c = o.consolidate({.device = std::nullopt, .pin_memory = true, .non_blocking = false});
  REQUIRE(c.consolidated_storage()->is_pinned());
  const Observation g = c.to(gpu, {.non_blocking = /*non_blocking=*/true});
  tensordict::synchronize(gpu);
  REQUIRE(g.is_consolidated());
  REQUIRE(g.device() == gpu);
  REQUIRE(g.agent.pos.device() == gpu);
  REQUIRE(g.task == "run");
  const Observation back = g.to(at::Device(at::kCPU));
  REQUIRE(back.is_consolidated());
  REQUIRE(at::equal(back.pixels, o.pixels));
  REQUIRE(at::equal(back.agent.vel, o.agent.vel));
  const Observation plain = o.to(gpu);
  REQUIRE_FALSE(plain.is_consolidated());
  REQUIRE(at::equal(plain.reward.cpu(), o.reward));
  REQUIRE(o.pin_memory().pixels.is_pinned());
}
