// A small RL-style rollout, twice: with generated tensorclasses from
// schemas/rl.yaml (typed: every op returns the struct) feeding a torch::nn
// policy, then with a dynamic TensorDict: build steps, stack them into a
// trajectory, index and reshape it, move it, print it.
#include <torch/torch.h>
#include <tensordict/tensordict.h>

#if TENSORCLASS_EXAMPLE_TYPED
#include "rl.tc.h"
#endif

#include <filesystem>
#include <iostream>
#include <vector>

using tensordict::TensorDict;
using tensordict::TensorDict;
using namespace at::indexing;

#if TENSORCLASS_EXAMPLE_TYPED
// Typed: a rollout of generated Transitions, indexed, stacked, cast, and fed
// to a small policy.
void typed_rollout(int64_t num_envs, int64_t steps) {
  using tc::rl::Observation;
  using tc::rl::Transition;
  auto observe = [&] {
    return Observation({.pixels = torch::randint(0, 256, {num_envs, 3, 8, 8}).to(torch::kUInt8),
                        .state = torch::randn({num_envs, 4})},
                       {num_envs});
  };
  torch::nn::Sequential policy(torch::nn::Linear(3 * 8 * 8 + 4, 32), torch::nn::ReLU(), torch::nn::Linear(32, 2));
  std::vector<Transition> steps_list;
  Observation obs = observe();
  for (int64_t t = 0; t < steps; ++t) {
    // The policy reads the typed observation's members directly.
    torch::NoGradGuard no_grad;
    auto features = torch::cat({obs.pixels.flatten(1).to(torch::kFloat) / 255, obs.state}, 1);
    Observation next = observe();
    steps_list.push_back(Transition({.observation = obs,
                                     .action = policy->forward(features),
                                     .reward = torch::randn({num_envs, 1}),
                                     .done = torch::zeros({num_envs, 1}, torch::kBool),
                                     .terminated = torch::zeros({num_envs, 1}, torch::kBool),
                                     .next = next,
                                     .env_name = "pixels-v0"},
                                    {num_envs}));
    obs = next;
  }
  Transition rollout = Transition::stack(steps_list, 1);  // [envs, time], still a Transition
  std::cout << "typed rollout:\n" << rollout << "\n\n";
  Transition last = rollout.index({Ellipsis, -1});
  Transition good = rollout.index({rollout.reward.squeeze(-1) > 0});
  std::cout << "last step batch size: " << last.batch_size() << ", rewarded transitions: " << good.len() << "\n";
  // The schema declares uint8 pixels and float32 state, so a typed to(kDouble)
  // is refused; the tensordict form leaves the schema and casts freely.
  Observation flat = rollout.observation.reshape({-1});
  torch::Tensor state64 = flat.to_tensordict().to(torch::kDouble).get("state");
  std::cout << "flattened observations, float64 state: " << state64.sizes() << " " << state64.dtype() << "\n";
  try {
    Observation({.pixels = torch::zeros({2, 4, 8, 8}, torch::kUInt8), .state = torch::zeros({2, 4})}, {2});
  } catch (const std::exception& e) {
    std::cout << "validation: " << e.what() << "\n";
  }

  // Saved in tensordict's memmap layout (Python loads it as tc.rl.Transition),
  // loaded back memory-mapped and validated against the schema.
  const std::string prefix = (std::filesystem::temp_directory_path() / "tensorclass_rollout_example").string();
  tensordict::remove_tree(prefix);
  rollout.memmap(prefix);
  Transition loaded = Transition::load_memmap(prefix);
  std::cout << "saved to " << prefix << " and loaded back: batch size " << loaded.batch_size() << ", rewards equal: "
            << std::boolalpha << torch::equal(loaded.reward, rollout.reward) << "\n\n";
  tensordict::remove_tree(prefix);
}
#endif

int main() {
  constexpr int64_t num_envs = 4;
  constexpr int64_t steps = 8;
#if TENSORCLASS_EXAMPLE_TYPED
  typed_rollout(num_envs, steps);
#endif

  // One step of `num_envs` environments: observations nested under "obs".
  std::vector<TensorDict> trajectory;
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
