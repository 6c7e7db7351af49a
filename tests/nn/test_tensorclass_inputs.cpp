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

  // An output that is no field is dropped; one that breaks the schema leaves
  // the object unchanged.
  nntest::Policy q({.obs = torch::randn({3, 4}), .head = nntest::Head({}, {3})}, {3});
  tnn::TensorDictModule stray(actor, {"obs"}, {"logits"});
  stray->forward(q);
  CHECK(!q.action.defined());
  CHECK(!q.to_tensordict().contains("logits"));
  tnn::TensorDictModule wide(torch::nn::Linear(4, 3), {"obs"}, {"action"});
  CHECK(message_of([&] { wide->forward(q); }) == "Policy.action: dim 1 must be 2 (got 3)");
  CHECK(!q.action.defined());
  q.lock_();
  CHECK(message_of([&] { policy->forward(q); }).rfind("Cannot modify locked TensorDict", 0) == 0);
}

// The typed inference a user writes: module(step) on the holder, a sequence
// whose intermediate keys are no fields, and a module returning another
// generated class.
TEST_CASE("module(step), intermediate out_keys dropped, forward<Out> returns another class", "[module][tensorclass]") {
  torch::manual_seed(0);
  torch::nn::Linear net(4, 4);
  tnn::TensorDictSequential policy(
      {tnn::TensorDictModule(net, {"obs"}, {"params"}),
       tnn::TensorDictModule([](const at::Tensor& p) { return std::make_tuple(p.narrow(-1, 0, 2), p.narrow(-1, 2, 2).exp()); },
                             {"params"}, {"loc", "scale"}),
       tnn::TensorDictModule([](const at::Tensor& loc, const at::Tensor& scale) { return loc + scale; },
                             {"loc", "scale"}, {"action"})});
  const at::Tensor obs = torch::randn({3, 4});
  const at::Tensor params = net(obs);
  const at::Tensor loc = params.narrow(-1, 0, 2), scale = params.narrow(-1, 2, 2).exp();

  nntest::Policy step({.obs = obs, .head = nntest::Head({}, {3})}, {3});
  nntest::Policy& same = policy(step);  // the holder's call, as for a TensorDict
  CHECK(&same == &step);
  CHECK(torch::allclose(step.action, loc + scale));
  const TensorDict written = step.to_tensordict();
  CHECK((!written.contains("params") && !written.contains("loc") && !written.contains("scale")));

  nntest::Policy fresh({.obs = obs, .head = nntest::Head({}, {3})}, {3});
  const nntest::Gaussian out = policy.forward<nntest::Gaussian>(fresh);
  CHECK(torch::allclose(out.loc, loc));
  CHECK(torch::allclose(out.scale, scale));
  CHECK(torch::allclose(out.action, loc + scale));
  CHECK(out.batch_size() == at::IntArrayRef{3});
  CHECK(!fresh.action.defined());
  // From a TensorDict (written into, as forward(td) does), and through the
  // implementation.
  TensorDict td({{"obs", obs}}, {3});
  CHECK(torch::allclose(policy->forward<nntest::Gaussian>(td).loc, loc));
  CHECK(td.contains("params"));
  // A required field the module does not write is an error of Out's schema.
  tnn::TensorDictModule only_loc([](const at::Tensor& o) { return o.narrow(-1, 0, 2); }, {"obs"}, {"loc"});
  CHECK_THROWS(only_loc.forward<nntest::Gaussian>(fresh));
}
