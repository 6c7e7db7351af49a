// Runs the policy train_policy.py trained and exported in Python: on a
// TensorDict, then on the schema's generated struct.
//
//   run_policy policy.pt2
#include <ATen/ATen.h>
#include <tensordict/nn/aoti.h>

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
  robot::PolicyStep step({.obs = at::randn({3, 4})}, {3});
  policy(step);
  const float error = (step.action + step.obs.narrow(-1, 0, 2)).abs().max().item<float>();
  std::cout << step << "\nlargest distance to the target controller: " << error << "\n";
  return error < 0.5 ? 0 : 1;
}
