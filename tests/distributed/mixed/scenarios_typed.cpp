// Typed on the wire: a generated struct sent with init_remote arrives in
// Python as the @tensorclass `tensorclass-gen --lang python` makes of the
// same schema (schemas/rl.yaml: tc.rl.Observation, tc.rl.Transition), and
// Python's arrives here as the struct, validated (from_tensordict).
#include "../rl_samples.h"
#include "mixed_rank.h"

namespace {

namespace td = tensordict;
using tc::rl::Observation;
using tc::rl::Transition;
using td_test::observation;
using td_test::transition;

void expect_observation(const Observation& got, const Observation& want, const std::string& what) {
  mixed::expect_equal(got.pixels, want.pixels, what + ".pixels");
  mixed::expect_equal(got.state, want.state, what + ".state");
}

void expect_transition(const Transition& got, const Transition& want, const std::string& what) {
  expect_observation(got.observation, want.observation, what + ".observation");
  expect_observation(got.next, want.next, what + ".next");
  mixed::expect_equal(got.action, want.action, what + ".action");
  mixed::expect_equal(got.reward, want.reward, what + ".reward");
  mixed::expect_equal(got.done, want.done, what + ".done");
  mixed::expect_equal(got.terminated, want.terminated, what + ".terminated");
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
  // broadcast sends the class too (tensordict's _tensorclass_type).
  const Observation mine = r.rank == 0 ? observation(2, 7) : observation(2, 0);
  expect_observation(td::broadcast(mine, r.group, 0), observation(2, 7), "broadcast Observation");
  // Point to point into the same structure: rank 0 sends, with send then
  // isend, and rank 1 receives, with recv then irecv; then the other way
  // round. On a Python rank the receiver is a tc.rl.Transition, whose nested
  // Observations take part.
  const auto exchange = [&](int from, int to, double seed) {
    if (r.rank == from) {
      td::send(transition(2, seed), r.group, to);
      td::isend(transition(2, seed + 2), r.group, to).wait();
    } else if (r.rank == to) {
      Transition got = transition(2, 0);
      td::recv(got, r.group, from);
      expect_transition(got, transition(2, seed), "recv Transition");
      td::irecv(got, r.group, from).wait();
      expect_transition(got, transition(2, seed + 2), "irecv Transition");
    }
  };
  exchange(0, 1, 9);
  exchange(1, 0, 13);
});

}  // namespace
