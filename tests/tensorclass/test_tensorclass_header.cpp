// Tensorclasses declared as annotated C++ headers: the struct (and any
// constructor) is the user's, the field table is generated, and init_ sets
// the batch size and validates. schemas/tc_header.h is the example of
// docs/schema-language.md; the generator tests' agent_header.h is compiled here
// against the real runtime too (its tests only use stand-ins).
#include <ATen/ATen.h>
#include <catch2/catch.hpp>

#include "../message_of.h"
#include "agent_header.tc.h"
#include "tc_header.tc.h"

// Every non-template member of TensorClass compiles for these user structs.
template class tensordict::TensorClass<tch::Observation>;
template class tensordict::TensorClass<rl::Observation>;

tch::Observation::Observation(at::Tensor px, at::Tensor r, Agent a, tensordict::BatchSizeArg batch_size)
    : pixels(std::move(px)), reward(std::move(r)), agent(std::move(a)) {
  init_(std::move(batch_size));
}

namespace {

tch::Agent make_agent(at::IntArrayRef batch) {
  tch::Agent agent;
  std::vector<int64_t> shape = batch.vec();
  shape.push_back(2);
  agent.pos = at::zeros(shape);
  return agent;
}

}  // namespace

TEST_CASE("header schema: the user's constructor validates through init_", "[tensorclass][header]") {
  tch::Observation obs(at::zeros({4, 2, 3, 8, 8}, at::kByte), at::ones({4, 2}), make_agent({4, 2}), {4, 2});
  CHECK(obs.batch_size().vec() == std::vector<int64_t>{4, 2});
  CHECK((obs.names() == tensordict::Names{"env", "time"}));
  CHECK(obs.agent.batch_size().vec() == std::vector<int64_t>{4, 2});  // taken from the parent
  CHECK(tch::Observation::schema().fields[0].doc == "RGB frame");

  const tch::Observation first = obs.index({0});
  CHECK(first.pixels.sizes().vec() == std::vector<int64_t>{2, 3, 8, 8});
  CHECK(first.agent.pos.sizes().vec() == std::vector<int64_t>{2, 2});

  CHECK(td_test::message_of([&] {
          tch::Observation(at::zeros({4, 2, 3, 8, 8}), at::ones({4, 2}), make_agent({4, 2}), {4, 2});
        }) == "Observation.pixels: dtype must be uint8 (got float32)");
}

TEST_CASE("header schema: without a constructor, set the fields and call init_", "[tensorclass][header]") {
  rl::Agent agent;
  agent.pos = at::zeros({3, 1, 2});
  agent.vel = at::zeros({3, 1, 2});
  rl::Observation obs;
  obs.pixels = at::zeros({3, 1, 3, 4, 5}, at::kByte);
  obs.reward = at::zeros({3, 1});
  obs.agent = agent;
  obs.init_({3, 1});
  CHECK(obs.task == "pick \"red\"");  // the member initializer
  CHECK((obs.names() == tensordict::Names{"env", "time"}));
  CHECK(obs.clone().agent.pos.sizes().vec() == std::vector<int64_t>{3, 1, 2});
  obs.pixels = at::zeros({3, 1, 3, 4, 5});
  CHECK(td_test::message_of([&] { obs.validate(); }) == "Observation.pixels: dtype must be uint8 (got float32)");
}
