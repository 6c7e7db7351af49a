// The second executable of the shared generated types: a tensorclass::nn
// module run on a generated Step writes its reward field.
#include <torch/torch.h>
#include <tensordict/nn.h>

#include <iostream>

#include "step.tc.h"

int main() {
  torch::manual_seed(0);
  torch::nn::Linear value(3, 1);
  tensordict::nn::TensorDictModule critic(
      [value](const at::Tensor& obs) mutable { return value(obs).squeeze(-1); }, {"obs"}, {"reward"});
  consumer::Step step({.obs = torch::randn({2, 3}), .reward = torch::zeros({2})}, {2});
  consumer::Step& same = critic(step);
  if (&same != &step) return 1;
  if (!torch::allclose(step.reward, value(step.obs).squeeze(-1))) return 2;
  if (step.env != "demo") return 3;
  std::cout << "policy: " << step << "\n";
  return 0;
}
