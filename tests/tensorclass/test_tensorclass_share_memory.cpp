// share_memory_() and is_shared() of generated tensorclasses and of lazy
// stacks of them: the dynamic core moves the tensors (through the tensordict
// form, which holds the same storages), the typed layer keeps the mark with
// tensordict's rules. Expectations: what tensordict 0.15.3 does with a
// @tensorclass of the same fields.
#include <ATen/ATen.h>
#include <ATen/MapAllocator.h>
#include <catch2/catch.hpp>
#include <sys/wait.h>
#include <tensordict/tensorclass_lazy.h>
#include <tensordict/tensordict.h>
#include <unistd.h>

#include <vector>

#include "../message_of.h"
#include "../temp_dir.h"
#include "tc_obs.tc.h"

using Catch::Matchers::Contains;
using tct::Observation;
using tct::common::Agent;
using td_test::message_of;
using td_test::TempDir;
using namespace at::indexing;

namespace {

Observation make(int64_t batch) {
  Observation::Fields f;
  f.pixels = at::arange(batch * 3 * 4 * 5).reshape({batch, 3, 4, 5}).to(at::kByte);
  f.reward = at::arange(batch).to(at::kFloat) + 0.5;
  f.agent = Agent({.pos = at::arange(batch * 2).reshape({batch, 2}).to(at::kFloat),
                   .vel = -at::arange(batch * 2).reshape({batch, 2}).to(at::kFloat)},
                  {batch});
  f.task = "run";
  return Observation(std::move(f), {batch});
}

// libtorch's record of a shared-memory mapping: what torch's Tensor.is_shared() asks.
bool in_shared_memory(const at::Tensor& t) { return at::MapAllocator::fromDataPtr(t.storage().data_ptr()) != nullptr; }

bool shared_and_locked(const Observation& o) { return o.is_shared() && o.is_locked(); }

}  // namespace

TEST_CASE("a tensorclass's share_memory_ moves its tensors in place, marks and locks it and its nested members",
          "[tensorclass][share_memory]") {
  Observation o = make(3);
  const Observation before = o.clone();
  const at::Tensor held = o.reward;  // the member itself, taken before
  REQUIRE_FALSE(o.is_shared());
  REQUIRE(&o.share_memory_() == &o);
  for (const at::Tensor* t : {&o.pixels, &o.reward, &o.agent.pos, &o.agent.vel}) REQUIRE(in_shared_memory(*t));
  REQUIRE(in_shared_memory(held));
  REQUIRE(held.data_ptr() == o.reward.data_ptr());
  REQUIRE(at::equal(o.pixels, before.pixels));
  REQUIRE(at::equal(o.agent.vel, before.agent.vel));
  REQUIRE(o.task == "run");
  REQUIRE(shared_and_locked(o));
  REQUIRE(o.agent.is_shared());
  REQUIRE(o.agent.is_locked());
  REQUIRE_THAT(message_of([&] { o.set("reward", at::zeros({3})); }), Contains("locked"));
  // unlock_ ends the mark; the tensors stay in shared memory.
  o.unlock_();
  REQUIRE_FALSE(o.is_shared());
  REQUIRE_FALSE(o.agent.is_shared());
  REQUIRE(in_shared_memory(o.reward));
  o.lock_();
  REQUIRE_FALSE(o.is_shared());
}

TEST_CASE("a shared tensorclass's views keep the mark as tensordict's do, copies do not", "[tensorclass][share_memory]") {
  Observation o = make(4);
  o.share_memory_();
  for (const auto& [label, view] : std::vector<std::pair<const char*, Observation>>{
           {"index 0", o.index({0})},
           {"index [0:2]", o.index({Slice(0, 2)})},
           {"index None", o.index({None})},
           {"unbind", o.unbind(0).back()},
           {"split", o.split(2, 0).back()},
           {"chunk", o.chunk(2, 0).front()},
           {"unsqueeze", o.unsqueeze(0)},
           {"squeeze", o.unsqueeze(0).squeeze(0)},
           {"view", o.view({2, 2})},
           {"permute", o.view({2, 2}).permute({1, 0})},
           {"transpose", o.view({2, 2}).transpose(0, 1)},
       }) {
    INFO(label);
    REQUIRE(shared_and_locked(view));
    REQUIRE(view.agent.is_shared());
    REQUIRE(in_shared_memory(view.reward));
  }
  for (const auto& [label, copy] : std::vector<std::pair<const char*, Observation>>{
           {"index [1:]", o.index({Slice(1, None)})},
           {"index tensor", o.index({at::tensor({0, 1})})},
           {"clone", o.clone()},
           {"reshape", o.view({2, 2}).reshape({4})},
           {"apply", o.apply([](const at::Tensor& t) { return t + 0; })},
       }) {
    INFO(label);
    REQUIRE_FALSE(copy.is_shared());
    REQUIRE_FALSE(copy.agent.is_shared());
  }
}

TEST_CASE("a tensorclass is memory-mapped or in shared memory, not both", "[tensorclass][share_memory][memmap]") {
  TempDir tmp;
  Observation mapped = make(2).memmap((tmp / "m").string());
  REQUIRE_FALSE(mapped.is_shared());
  REQUIRE_THAT(message_of([&] { mapped.share_memory_(); }),
               Contains("memmap and shared memory are mutually exclusive features."));
  Observation shared = make(2);
  shared.share_memory_();
  REQUIRE_THAT(message_of([&] { shared.memmap_((tmp / "s").string()); }),
               Contains("memmap and shared memory are mutually exclusive features."));
  REQUIRE(shared.is_shared());
  const Observation copy = shared.memmap((tmp / "c").string());
  REQUIRE(copy.is_memmap());
  REQUIRE_FALSE(copy.is_shared());
}

TEST_CASE("a tensorclass's repr reports share_memory_", "[tensorclass][share_memory][repr]") {
  Observation o = make(2);
  o.share_memory_();
  tensordict::set_printoptions detailed({.compact = false});
  const std::string text = o.repr();
  REQUIRE_THAT(text, Contains("reward=Tensor(shape=torch.Size([2]), device=cpu, dtype=torch.float32, is_shared=True)"));
  REQUIRE_THAT(text, Contains("    is_shared=True)"));
}

TEST_CASE("a process forked after a tensorclass's share_memory_ writes into its fields", "[tensorclass][share_memory][fork]") {
  Observation o = make(2);
  o.share_memory_();
  const pid_t pid = ::fork();
  if (pid == 0) {
    o.reward.fill_(7);  // a write in place, which the lock allows
    ::_exit(0);
  }
  int status = 0;
  ::waitpid(pid, &status, 0);
  REQUIRE(WIFEXITED(status));
  REQUIRE(o.reward.eq(7).all().item<bool>());
}

TEST_CASE("share_memory_ of a lazy stack of tensorclasses shares every member, whose marks is_shared reads",
          "[tensorclass][share_memory][lazy]") {
  Observation a = make(2), b = make(2);
  auto stack = tensordict::lazy_stack(std::vector<Observation>{a, b}, 0);
  REQUIRE_FALSE(stack.is_shared());
  REQUIRE(&stack.share_memory_() == &stack);
  REQUIRE(stack.is_shared());
  for (const Observation& m : stack.members()) {
    REQUIRE(shared_and_locked(m));
    REQUIRE(in_shared_memory(m.agent.pos));
  }
  // The members are values: a and b are copies whose tensors are the same
  // storages, moved in place.
  REQUIRE(in_shared_memory(a.pixels));
  REQUIRE_FALSE(a.is_shared());

  Observation c = make(2), d = make(2);
  c.share_memory_();
  const auto mixed = tensordict::lazy_stack(std::vector<Observation>{c, d}, 0);
  REQUIRE_THAT(message_of([&] { (void)mixed.is_shared(); }),
               Contains("tensordicts shared status mismatch, got 1 shared tensordicts and 1 non shared tensordict"));
}
