// Live weights over the wire: a Python learner (rank 0) sends
// TensorDict.from_module(policy).data with tensordict's own send, isend and
// broadcast; this C++ actor (rank 1) receives each into the exported
// policy's update (recv, then to_module) and checks its outputs against
// Python eager's with the old and the new weights, to 1e-5: an MLP, then a
// Gaussian policy.
//
// Scenario "weights": TENSORCLASS_AOTI_PACKAGES names the directory of the
// aoti suite's packages (tests/aoti/export_cases.py): mlp.pt2, its inputs, and the outputs Python
// computed with the exported weights (mlp_expected) and with the learner's
// new ones (mlp_expected_new).
#include <ATen/ATen.h>
#include <tensordict/memmap.h>
#include <tensordict/nn/aoti.h>
#include <tensordict/nn/params.h>

#include <cstdlib>

#include "mixed_rank.h"

namespace {

namespace td = tensordict;
namespace tnn = tensordict::nn;

void expect_close(const at::Tensor& got, const at::Tensor& want, const std::string& what) {
  mixed::expect(got.sizes() == want.sizes() && at::allclose(got, want, 1e-5, 1e-5), what);
}

mixed::Register weights("weights", [](const mixed::Rank& r) {
  const char* packages = std::getenv("TENSORCLASS_AOTI_PACKAGES");
  mixed::expect(packages != nullptr, "weights: TENSORCLASS_AOTI_PACKAGES names the aoti suite's packages");
  const std::string dir = packages;
  tnn::AOTIModule policy(dir + "/mlp.pt2");
  const td::TensorDict inputs = td::load_memmap(dir + "/mlp_inputs");
  const at::Tensor old_action = td::load_memmap(dir + "/mlp_expected").get("action");
  const at::Tensor new_action = td::load_memmap(dir + "/mlp_expected_new").get("action");
  auto action = [&] { return policy(inputs.clone()).get("action"); };
  expect_close(action(), old_action, "outputs with the exported weights");

  // The receive buffers: the policy's weights, keyed as the learner's
  // from_module keys them.
  td::TensorDict params = tnn::from_module(policy);
  // tensordict's send (one message per leaf, sorted keys).
  td::recv(params, r.group, 0);
  params.to_module(policy).release();
  expect_close(action(), new_action, "outputs after the weights sent with send()");

  // isend: the exported weights back.
  td::irecv(params, r.group, 0).wait();
  params.to_module(policy).release();
  expect_close(action(), old_action, "outputs after the weights sent with isend()");

  // broadcast from the learner.
  td::broadcast(params, r.group, 0).to_module(policy).release();
  expect_close(action(), new_action, "outputs after the weights sent with broadcast()");

  // A Gaussian policy (loc, scale, action and its log-probability).
  tnn::AOTIModule gaussian(dir + "/gaussian.pt2");
  const td::TensorDict obs = td::load_memmap(dir + "/gaussian_inputs");
  auto expect_outputs = [&](const std::string& expected, const std::string& what) {
    const td::TensorDict got = gaussian(obs.clone());
    const td::TensorDict want = td::load_memmap(dir + "/" + expected);
    for (const char* key : {"loc", "scale", "action", "action_log_prob"}) {
      expect_close(got.get(key), want.get(key), what + ": " + key);
    }
  };
  expect_outputs("gaussian_expected", "the Gaussian policy with its exported weights");
  // One call, no copy of its own: received straight into the package's
  // inactive buffer, then swapped in.
  gaussian->update_weights([&](const td::TensorDict& params) { td::recv(params, r.group, 0); });
  expect_outputs("gaussian_expected_new", "the Gaussian policy after the weights received into update_weights()");
});

}  // namespace
