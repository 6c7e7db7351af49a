// A small RL-style rollout handled with a dynamic TensorDict: build steps,
// stack them into a trajectory, index and reshape it, move it, print it.
#include <ATen/ATen.h>
#include <tensordict/tensordict.h>

#include <iostream>
#include <vector>

using tensordict::TensorDict;
using tensordict::TensorDictBase;
using namespace at::indexing;

int main() {
  constexpr int64_t num_envs = 4;
  constexpr int64_t steps = 8;

  // One step of `num_envs` environments: observations nested under "obs".
  std::vector<TensorDictBase> trajectory;
  for (int64_t t = 0; t < steps; ++t) {
    TensorDict step({{"obs", TensorDict({{"pixels", at::rand({num_envs, 3, 8, 8})}, {"pos", at::randn({num_envs, 2})}})},
                     {"action", at::randint(0, 4, {num_envs}, at::kLong)},
                     {"reward", at::randn({num_envs, 1})},
                     {"done", at::zeros({num_envs, 1}, at::kBool)}},
                    {num_envs});
    trajectory.push_back(step);
  }

  // [envs, time]: stack along a new batch dim.
  auto rollout = tensordict::stack(trajectory, 1);
  std::cout << "rollout:\n" << rollout << "\n\n";

  // The last two steps of every environment, and environment 0 alone.
  auto tail = rollout.index({Ellipsis, Slice(-2, None)});
  auto env0 = rollout.index({0});
  std::cout << "tail batch size: " << tail.batch_size() << ", env 0 batch size: " << env0.batch_size() << "\n";

  // Transitions with a positive reward, gathered across envs and time.
  auto good = rollout.index({rollout.get("reward").squeeze(-1) > 0});
  std::cout << "transitions with reward > 0: " << good.len() << "\n";

  // Flatten [envs, time] into one batch of samples and split into minibatches.
  auto samples = rollout.reshape({-1});
  auto minibatches = samples.split(num_envs * steps / 4);
  std::cout << "minibatches: " << minibatches.size() << " of " << minibatches.front().batch_size() << "\n";

  // Zero the rewards of environment 1 in place, through the index.
  rollout.set_at_("reward", at::zeros({steps, 1}), {1});
  std::cout << "env 1 reward sum after reset: " << rollout.get("reward").index({1}).sum().item<float>() << "\n";

  // dtype and device moves keep the structure.
  auto doubles = rollout.select({{"obs", "pos"}, "reward"}).to(at::kDouble).cpu();
  std::cout << "\nselected, float64, on " << *doubles.device() << ":\n" << doubles << "\n";
  return 0;
}
