// A C++ actor of the TorchRL loop: steps a batch of Pendulum-v1 environments
// (pendulum.h) with the exported policy network (an AOTIModule on the
// generated pendulum::PolicyStep), and sends each rollout, a
// pendulum::Transition of batch [envs, steps] keyed as TorchRL's collectors
// key theirs, to the Python learner (learner.py, rank 0) with tensordict's
// protocol. Between rollouts the learner says whether to go on and, when it
// has new weights, sends them: they are received straight into the running
// package (update_weights), no export, no file.
//
//   torchrl_actor POLICY.pt2 [--envs N] [--steps T] [--seed S]
//
// MASTER_ADDR, MASTER_PORT, RANK (>= 1), WORLD_SIZE as torchrun sets them;
// launch.py starts the learner and the actors together.
//
// Each round, after the rollout, the actor also sends a pendulum::Probe: the
// deterministic action (2 tanh(loc), TanhNormal's deterministic sample) on
// fixed observations, with the version of the weights it acted with, so
// that the learner can check that the actors act with the weights it sent.
#include <ATen/ATen.h>
#include <ATen/Parallel.h>

#include <tensordict/distributed.h>
#include <tensordict/nn/aoti.h>
#include <tensordict/tensordict.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdlib>
#include <iostream>
#include <random>
#include <string>

#include "pendulum.h"
#include "pendulum.tc.h"  // generated from pendulum.yaml

namespace td = tensordict;
using td::TensorDict;

namespace {

// TorchRL's TanhNormal(low=-2, high=2) with its safe tanh: tanh clamped to
// 1 - float32's resolution, then scaled to the action's bounds.
float tanh_normal(float x) {
  constexpr float kLim = 1.0f - 1e-6f;
  return 2.0f * std::clamp(std::tanh(x), -kLim, kLim);
}

struct Options {
  std::string policy;
  int64_t envs = 1, steps = 200;
  uint64_t seed = 0;
};

Options parse(int argc, char** argv) {
  Options o;
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    auto value = [&]() -> std::string {
      if (i + 1 >= argc) throw std::invalid_argument(arg + " needs a value");
      return argv[++i];
    };
    if (arg == "--envs")
      o.envs = std::stoll(value());
    else if (arg == "--steps")
      o.steps = std::stoll(value());
    else if (arg == "--seed")
      o.seed = std::stoull(value());
    else if (o.policy.empty() && arg.rfind("--", 0) != 0)
      o.policy = arg;
    else
      throw std::invalid_argument("unknown argument " + arg);
  }
  if (o.policy.empty() || o.envs < 1 || o.steps < 1)
    throw std::invalid_argument("usage: torchrl_actor POLICY.pt2 [--envs N] [--steps T] [--seed S]");
  return o;
}

}  // namespace

int main(int argc, char** argv) {
  try {
    const Options opt = parse(argc, argv);
    at::set_num_threads(1);  // one core per actor process
    const auto group = td::init_process_group();
    const int rank = group->getRank();
    td::nn::AOTIModule policy(opt.policy);

    const int64_t n = opt.envs, t_max = opt.steps;
    pendulum::Pendulum env(n, opt.seed * 1000003 + static_cast<uint64_t>(rank));
    std::mt19937_64 noise_rng(opt.seed * 7919 + static_cast<uint64_t>(rank) + 1);
    std::normal_distribution<float> normal;

    // The rollout, written in place each round and sent whole.
    const auto f32 = at::TensorOptions().dtype(at::kFloat);
    const auto b8 = at::TensorOptions().dtype(at::kBool);
    pendulum::Transition rollout({.observation = at::zeros({n, t_max, 3}, f32),
                                  .action = at::zeros({n, t_max, 1}, f32),
                                  .next = pendulum::Next({.observation = at::zeros({n, t_max, 3}, f32),
                                                          .reward = at::zeros({n, t_max, 1}, f32),
                                                          .done = at::zeros({n, t_max, 1}, b8),
                                                          .terminated = at::zeros({n, t_max, 1}, b8),
                                                          .truncated = at::zeros({n, t_max, 1}, b8),
                                                          .episode_reward = at::zeros({n, t_max, 1}, f32)},
                                                         {n, t_max})},
                                 {n, t_max});
    float* r_obs = rollout.observation.data_ptr<float>();
    float* r_act = rollout.action.data_ptr<float>();
    float* r_next_obs = rollout.next.observation.data_ptr<float>();
    float* r_rew = rollout.next.reward.data_ptr<float>();
    bool* r_done = rollout.next.done.data_ptr<bool>();
    bool* r_term = rollout.next.terminated.data_ptr<bool>();
    bool* r_trunc = rollout.next.truncated.data_ptr<bool>();
    float* r_ret = rollout.next.episode_reward.data_ptr<float>();

    // The probe: fixed observations (angle, velocity pairs).
    constexpr int64_t kProbes = 5;
    const double probe_state[kProbes][2] = {{0.0, 0.0}, {1.5707963, 1.0}, {3.1415927, -3.0}, {-2.0, 5.0}, {0.5, -7.5}};
    pendulum::Probe probe({.observation = at::zeros({kProbes, 3}, f32),
                           .action = at::zeros({kProbes, 1}, f32),
                           .version = at::zeros({kProbes}, at::kLong)},
                          {kProbes});
    for (int64_t p = 0; p < kProbes; ++p) {
      float* o = probe.observation.data_ptr<float>() + 3 * p;
      o[0] = static_cast<float>(std::cos(probe_state[p][0]));
      o[1] = static_cast<float>(std::sin(probe_state[p][0]));
      o[2] = static_cast<float>(probe_state[p][1]);
    }

    at::Tensor obs = at::zeros({n, 3}, f32);  // the policy's input, the current observations
    float* cur = obs.data_ptr<float>();
    for (int64_t i = 0; i < n; ++i) env.observe(i, cur + 3 * i);
    std::vector<float> episode_return(n, 0.0f);

    TensorDict control({{"control", at::zeros({2}, at::kLong)}}, {});  // [weights version, stop]
    int64_t version = 0, rounds = 0, frames = 0;
    double collect_s = 0;
    for (;;) {
      td::recv(control, group, /*src=*/0);
      const at::Tensor c = control.get("control");
      const int64_t new_version = c[0].item<int64_t>();
      if (c[1].item<int64_t>() != 0) break;
      if (new_version != version) {
        // The learner's TensorDict.from_module(policy network).data, received
        // into the package's inactive weights, then swapped in whole.
        policy->update_weights([&](const TensorDict& p) { td::recv(p, group, /*src=*/0); });
        version = new_version;
      }
      const auto start = std::chrono::steady_clock::now();
      for (int64_t t = 0; t < t_max; ++t) {
        pendulum::PolicyStep step({.observation = obs}, {n});
        policy(step);  // sets loc and scale
        // NormalParamExtractor's halves are views with a stride of 2.
        const at::Tensor loc_t = step.loc.contiguous(), scale_t = step.scale.contiguous();
        const float* loc = loc_t.data_ptr<float>();
        const float* scale = scale_t.data_ptr<float>();
        for (int64_t i = 0; i < n; ++i) {
          const int64_t k = i * t_max + t;
          const float action = tanh_normal(loc[i] + scale[i] * normal(noise_rng));
          std::copy(cur + 3 * i, cur + 3 * i + 3, r_obs + 3 * k);
          r_act[k] = action;
          const auto s = env.step(i, action);
          env.observe(i, r_next_obs + 3 * k);
          episode_return[i] += static_cast<float>(s.reward);
          r_rew[k] = static_cast<float>(s.reward);
          r_term[k] = s.terminated;
          r_trunc[k] = s.truncated;
          r_done[k] = s.terminated || s.truncated;
          r_ret[k] = episode_return[i];
          if (r_done[k]) {
            env.reset(i);
            episode_return[i] = 0.0f;
            env.observe(i, cur + 3 * i);
          } else {
            std::copy(r_next_obs + 3 * k, r_next_obs + 3 * k + 3, cur + 3 * i);
          }
        }
      }
      collect_s += std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
      td::send(rollout, group, /*dst=*/0);

      pendulum::PolicyStep probe_step({.observation = probe.observation}, {kProbes});
      policy(probe_step);
      const at::Tensor probe_loc = probe_step.loc.contiguous();
      const float* loc = probe_loc.data_ptr<float>();
      for (int64_t p = 0; p < kProbes; ++p) probe.action.data_ptr<float>()[p] = tanh_normal(loc[p]);
      probe.version.fill_(version);
      td::send(probe, group, /*dst=*/0);
      ++rounds;
      frames += n * t_max;
    }
    std::cout << "actor " << rank << ": " << rounds << " rounds, " << frames << " frames, weights version " << version
              << ", " << (collect_s > 0 ? frames / collect_s : 0.0) << " frames/s while collecting\n";
    return 0;
  } catch (const std::exception& e) {
    std::cerr << "actor: " << e.what() << "\n";
    return 1;
  }
}
