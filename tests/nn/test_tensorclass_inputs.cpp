// nn modules run on generated tensorclasses: in_keys/out_keys name fields.
#include "nn_test.h"
#include "nn_policy.tc.h"

TEST_CASE("a module runs on a generated tensorclass, writing its fields", "[module][tensorclass]") {
  torch::manual_seed(0);
  torch::nn::Linear actor(4, 2), critic(4, 1);
  tnn::TensorDictSequential policy(
      {tnn::TensorDictModule(actor, {"obs"}, {"action"}), tnn::TensorDictModule(critic, {"obs"}, {{"head", "value"}})});
  nntest::Policy p({.obs = torch::randn({3, 4}), .head = nntest::Head({}, {3}), .env = "pendulum"}, {3});
  const void* obs = p.obs.data_ptr();
  nntest::Policy& out = policy->forward(p);
  CHECK(&out == &p);
  REQUIRE(p.action.defined());
  CHECK(torch::allclose(p.action, actor(p.obs)));
  CHECK(torch::allclose(p.head.value, critic(p.obs)));
  CHECK(p.obs.data_ptr() == obs);
  CHECK(p.env == "pendulum");
  p.validate();

  // An output that is no field, or breaks the schema, leaves the object unchanged.
  nntest::Policy q({.obs = torch::randn({3, 4}), .head = nntest::Head({}, {3})}, {3});
  tnn::TensorDictModule stray(actor, {"obs"}, {"logits"});
  CHECK_THROWS_AS(stray->forward(q), KeyError);
  CHECK(message_of([&] { stray->forward(q); }) ==
        "Policy.from_tensordict: key 'logits' is not a field of Policy (from_tensordict(td, {.strict = false}) ignores extra keys)");
  tnn::TensorDictModule wide(torch::nn::Linear(4, 3), {"obs"}, {"action"});
  CHECK(message_of([&] { wide->forward(q); }) == "Policy.action: dim 1 must be 2 (got 3)");
  CHECK(!q.action.defined());
  q.lock_();
  CHECK(message_of([&] { policy->forward(q); }).rfind("Cannot modify locked TensorDict", 0) == 0);
}
