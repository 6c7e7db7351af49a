// Typed on the wire: a generated struct sent with init_remote arrives in
// Python as the @tensorclass `tensorclass-gen --lang python` makes of the
// same schema (schemas/rl.yaml: tc.rl.Observation, tc.rl.Transition), and
// Python's arrives here as the struct, validated (from_tensordict).
#include <ATen/ops/arange.h>
#include <ATen/ops/full.h>
#include <ATen/ops/ones.h>
#include <ATen/ops/zeros.h>

#include "mixed_rank.h"
#include "rl.tc.h"

namespace {

namespace td = tensordict;
using tc::rl::Observation;
using tc::rl::Transition;

// mixed_rank.py's observation(n, seed) and transition(n, seed).
Observation observation(int64_t n, double seed) {
  return Observation({.pixels = (at::arange(n * 3 * 2 * 2).reshape({n, 3, 2, 2}) + static_cast<int64_t>(seed)).to(at::kByte),
                      .state = at::arange(n * 4, at::kFloat).reshape({n, 4}) * seed},
                     {n});
}

Transition transition(int64_t n, double seed) {
  return Transition({.observation = observation(n, seed),
                     .action = at::full({n, 2}, seed),
                     .reward = at::full({n, 1}, seed + 1),
                     .done = at::zeros({n, 1}, at::kBool),
                     .terminated = at::ones({n, 1}, at::kBool),
                     .next = observation(n, seed + 1),
                     .env_name = "walk"},
                    {n});
}

void expect_observation(const Observation& got, const Observation& want, const std::string& what) {
  mixed::expect_equal(got.pixels, want.pixels, what + ".pixels");
  mixed::expect_equal(got.state, want.state, what + ".state");
}

mixed::Register typed("typed", [](const mixed::Rank& r) {
  if (r.rank == 0) {
    td::init_remote(observation(2, 3), r.group, 1);
    td::init_remote(transition(2, 5), r.group, 1);
  } else if (r.rank == 1) {
    expect_observation(td::from_remote_init<Observation>(r.group, 0), observation(2, 3), "Observation");
    const Transition got = td::from_remote_init<Transition>(r.group, 0);
    const Transition want = transition(2, 5);
    expect_observation(got.observation, want.observation, "Transition.observation");
    expect_observation(got.next, want.next, "Transition.next");
    mixed::expect_equal(got.action, want.action, "Transition.action");
    mixed::expect_equal(got.reward, want.reward, "Transition.reward");
    mixed::expect_equal(got.done, want.done, "Transition.done");
    mixed::expect_equal(got.terminated, want.terminated, "Transition.terminated");
    mixed::expect(got.env_name == "walk", "Transition.env_name");
  }
});

}  // namespace
