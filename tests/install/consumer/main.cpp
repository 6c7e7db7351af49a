#include <ATen/ATen.h>
#include <tensordict/tensordict.h>

#include <iostream>

#include "step.tc.h"

#if CONSUMER_DISTRIBUTED
bool distributed_works();
#endif

int main() {
  tensordict::TensorDict td({{"obs", at::zeros({2, 3})}, {"reward", at::ones({2})}}, {2});
  auto both = tensordict::stack({td, td.clone()}, 0);
  if (both.batch_size() != at::IntArrayRef({2, 2})) return 1;
  std::cout << td.index({0}).unsqueeze(0).expand({2}) << "\n";

  // A generated tensorclass: typed ops return the typed class.
  consumer::Step step({.obs = at::zeros({2, 3}), .reward = at::ones({2})}, {2});
  consumer::Step rollout = consumer::Step::stack({step, step * 2}, 1);
  if (rollout.batch_size() != at::IntArrayRef({2, 2})) return 2;
  if (rollout.index({0, 1}).reward.item<float>() != 2.f) return 3;
  try {
    consumer::Step bad({.obs = at::zeros({2, 3}), .reward = at::ones({3})}, {2});
    return 4;
  } catch (const std::runtime_error&) {
  }
  std::cout << rollout.index({0}) << "\n";
  // HDF5 inside the package: a gzip-compressed file written and read back.
  td.to_h5("consumer_step.h5", {.gzip_level = 4});
  auto read = tensordict::PersistentTensorDict::from_h5("consumer_step.h5");
  if (!read.get("obs").equal(td.get("obs")) || !read.get("reward").equal(td.get("reward"))) return 6;
#if CONSUMER_DISTRIBUTED
  if (!distributed_works()) return 5;
#endif
  return 0;
}
