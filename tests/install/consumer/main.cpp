#include <ATen/ATen.h>
#include <tensordict/tensordict.h>

#include <iostream>

int main() {
  tensordict::TensorDict td({{"obs", at::zeros({2, 3})}, {"reward", at::ones({2})}}, {2});
  auto both = tensordict::stack({td, td.clone()}, 0);
  if (both.batch_size() != at::IntArrayRef({2, 2})) return 1;
  std::cout << td.index({0}).unsqueeze(0).expand({2}) << "\n";
  return 0;
}
