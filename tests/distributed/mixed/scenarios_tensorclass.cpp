// A generated struct (schemas/rl.yaml's Transition) between a C++ rank and a
// Python rank that holds a tensordict of the same fields: its tensor fields
// travel in tensordict's protocol, each side keeps its non-tensor ones.
// Scenario "tensorclass": rank 0 sends transition(r) to every rank r, which
// answers transition(100 + r); mixed_rank.py's transition_td() mirrors it.
#include <fmt/format.h>

#include "mixed_rank.h"
#include "rl.tc.h"

namespace {

namespace td = tensordict;
using tc::rl::Observation;
using tc::rl::Transition;

Observation observation(int64_t v) {
  return Observation({.pixels = (at::arange(3 * 3 * 2 * 2).reshape({3, 3, 2, 2}) + v).to(at::kByte),
                      .state = at::arange(3 * 4, at::kFloat).reshape({3, 4}) * double(v)},
                     {3});
}

Transition transition(int64_t v) {
  return Transition({.observation = observation(v),
                     .action = at::full({3, 2}, double(v)),
                     .reward = at::full({3, 1}, double(v + 1)),
                     .done = at::zeros({3, 1}, at::kBool),
                     .terminated = at::ones({3, 1}, at::kBool),
                     .next = observation(v + 1),
                     .env_name = "walk"},
                    {3});
}

void expect_transition(const Transition& got, int64_t v, const std::string& what) {
  const Transition want = transition(v);
  mixed::expect_equal(got.observation.pixels, want.observation.pixels, what + ": observation.pixels");
  mixed::expect_equal(got.observation.state, want.observation.state, what + ": observation.state");
  mixed::expect_equal(got.action, want.action, what + ": action");
  mixed::expect_equal(got.reward, want.reward, what + ": reward");
  mixed::expect_equal(got.done, want.done, what + ": done");
  mixed::expect_equal(got.terminated, want.terminated, what + ": terminated");
  mixed::expect_equal(got.next.pixels, want.next.pixels, what + ": next.pixels");
  mixed::expect_equal(got.next.state, want.next.state, what + ": next.state");
}

mixed::Register tensorclass("tensorclass", [](const mixed::Rank& r) {
  if (r.rank == 0) {
    for (int peer = 1; peer < r.world; ++peer) {
      td::send(transition(peer), r.group, peer);
      Transition got = transition(-7);
      td::recv(got, r.group, peer);
      expect_transition(got, 100 + peer, fmt::format("from rank {}", peer));
    }
  } else {
    Transition got = transition(-7);
    td::recv(got, r.group, 0);
    expect_transition(got, r.rank, "from rank 0");
    td::send(transition(100 + r.rank), r.group, 0);
  }
});

}  // namespace
