// Runs the policy train_policy.py trained and exported in Python: on a
// TensorDict, then on the schema's generated struct; then loads the weights
// the learner trained on (policy.pt2.weights) into the running package and
// runs again, closer to the target.
//
//   run_policy policy.pt2
#include <ATen/ATen.h>
#include <tensordict/memmap.h>
#include <tensordict/nn/aoti.h>
#include <tensordict/nn/params.h>

#include <iostream>

#include "robot.tc.h"  // generated from robot.yaml, like the Python trainer's robot.PolicyStep

int main(int argc, char** argv) {
  if (argc != 2) {
    std::cerr << "usage: run_policy POLICY.pt2 (written by train_policy.py)\n";
    return 2;
  }
  tensordict::nn::AOTIModule policy(argv[1]);
  std::cout << policy << "\n";

  // On a TensorDict: every out_key is written (params, loc, scale, action,
  // action_log_prob), at any batch size.
  tensordict::TensorDict td({{"obs", at::randn({5, 4})}}, {5});
  policy(td);
  std::cout << "keys written: " << td.keys().size() << ", action " << td.get("action").sizes() << "\n";

  // On the generated struct: the fields are set (validated against the
  // schema), the intermediate keys are dropped.
  robot::PolicyStep step({.obs = at::randn({256, 4})}, {256});
  policy(step);
  auto distance = [&] { return (step.action + step.obs.narrow(-1, 0, 2)).abs().mean().item<float>(); };
  const float exported = distance();
  std::cout << step.index({at::indexing::Slice(0, 3)}) << "\nmean distance to the target controller: " << exported << "\n";

  // The learner's new weights, keyed as its TensorDict.from_module(policy):
  // swapped in whole, no recompiling.
  tensordict::load_memmap(std::string(argv[1]) + ".weights").to_module(policy).release();
  policy(step);
  const float updated = distance();
  std::cout << "with the learner's new weights: " << updated << "\n";
  return updated < exported && updated < 0.5 ? 0 : 1;
}
