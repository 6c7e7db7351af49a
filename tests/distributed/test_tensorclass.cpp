// Generated tensorclasses travel through their fields' tensordict (schemas/rl.yaml).
#include <catch2/catch.hpp>

#include "rl_samples.h"
#include "samples.h"

using namespace td_test;
namespace td = tensordict;
using tc::rl::Observation;
using tc::rl::Transition;

TEST_CASE("tensorclasses: send, recv, all_reduce, broadcast, gather_and_stack, from_remote_init", "[distributed][tensorclass]") {
  const std::string failures = run_ranks(2, [](const Rank& r) {
    if (r.rank == 0) {
      td::send(transition(3, 2), r.group, 1, packed());
    } else {
      Transition got = transition(3, 0);
      const void* before = got.observation.state.data_ptr();
      td::recv(got, r.group, 0, packed());
      check_equal(got.to_tensordict(), transition(3, 2).to_tensordict(), "recv");
      check(got.observation.state.data_ptr() == before, "received into the fields themselves");
    }

    Observation mine = observation(2, r.rank + 1);
    td::all_reduce(mine, r.group, packed_reduce());
    check(at::equal(mine.state, observation(2, 1).state + observation(2, 2).state), "all_reduce state");

    Observation shared = observation(2, r.rank == 1 ? 7 : 0);
    td::broadcast(shared, r.group, 1, {.protocol = td::WireProtocol::packed});
    check_equal(shared.to_tensordict(), observation(2, 7).to_tensordict(), "broadcast");

    if (r.rank == 0) {
      Observation stacked = observation(1, 0).unsqueeze(0);  // batch [world - 1, 1]
      td::gather_and_stack(stacked, r.group, 0, {.protocol = td::WireProtocol::packed});
      check_equal(stacked.index({0}).to_tensordict(), observation(1, 5).to_tensordict(), "gather_and_stack");
      td::init_remote(transition(2, 4), r.group, 1, {.protocol = td::WireProtocol::packed});
    } else {
      td::gather_and_stack(observation(1, 5), r.group, 0, {.protocol = td::WireProtocol::packed});
      const auto got = td::from_remote_init<Transition>(r.group, 0, {.protocol = td::WireProtocol::packed});
      check_equal(got.to_tensordict(), transition(2, 4).to_tensordict(), "from_remote_init");
    }
  });
  REQUIRE(failures == "");
}
