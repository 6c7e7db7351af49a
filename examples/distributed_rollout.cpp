// Actors and a learner in separate processes, over torch's c10d (Gloo):
// each actor builds a rollout and sends it to the learner, which stacks the
// rollouts, trains one step and broadcasts its new weights back.
//
//   ./distributed_rollout_example [world_size]     # forks world_size processes on loopback (default 3)
//
// As torchrun starts them (one process per rank, on one or several machines):
//
//   MASTER_ADDR=10.0.0.1 MASTER_PORT=29500 WORLD_SIZE=3 RANK=0 ./distributed_rollout_example   # the learner
//   MASTER_ADDR=10.0.0.1 MASTER_PORT=29500 WORLD_SIZE=3 RANK=1 ./distributed_rollout_example   # actors...
//
// Rank 0 is the learner and hosts the TCPStore the ranks meet through.
#include <torch/torch.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <torch/csrc/distributed/c10d/TCPStore.hpp>
#include <unistd.h>

#include <tensordict/distributed.h>
#include <tensordict/tensordict.h>

#include <chrono>
#include <cstdlib>
#include <iostream>
#include <string>
#include <thread>
#include <vector>

namespace td = tensordict;
using td::TensorDict;

namespace {

constexpr int64_t kSteps = 16, kEnvs = 4, kObs = 6, kActions = 2, kIterations = 3;

struct Settings {
  std::string master_addr = "127.0.0.1";
  int master_port = 29500;
  int rank = 0, world_size = 3;
};

// The policy's weights as a tensordict: what the learner broadcasts.
TensorDict weights_of(torch::nn::Linear& policy) {
  return TensorDict({{"weight", policy->weight.detach()}, {"bias", policy->bias.detach()}}, {});
}

// One actor's rollout: [time, env] steps of a linear policy in a toy environment.
TensorDict rollout(torch::nn::Linear& policy, int rank) {
  torch::NoGradGuard no_grad;
  auto obs = torch::randn({kSteps, kEnvs, kObs});
  auto action = torch::tanh(policy(obs)) + 0.1 * torch::randn({kSteps, kEnvs, kActions});
  // The reward prefers actions close to the first two observation features.
  auto reward = -(action - obs.narrow(-1, 0, kActions)).pow(2).sum(-1, /*keepdim=*/true);
  return TensorDict({{"observation", obs},
                     {"action", action},
                     {"next", TensorDict({{"reward", reward}, {"done", torch::zeros({kSteps, kEnvs, 1}, torch::kBool)}},
                                         {kSteps, kEnvs})}},
                    {kSteps, kEnvs});
}

int run(const Settings& s) {
  if (s.world_size < 2) throw std::invalid_argument("distributed_rollout needs a learner and at least one actor: WORLD_SIZE >= 2");
  c10d::TCPStoreOptions store_options;
  store_options.port = static_cast<std::uint16_t>(s.master_port);
  store_options.isServer = s.rank == 0;
  store_options.numWorkers = static_cast<std::size_t>(s.world_size);
  store_options.timeout = std::chrono::seconds(60);
  auto store = c10::make_intrusive<c10d::TCPStore>(s.master_addr, store_options);
  // On one machine every rank listens on loopback; across machines, on the
  // address its hostname resolves to (as torch.distributed does).
  const bool local = s.master_addr == "127.0.0.1" || s.master_addr == "localhost";
  auto group = td::gloo_process_group(store, s.rank, s.world_size, std::chrono::seconds(60),
                                      local ? std::optional<std::string>("127.0.0.1") : std::nullopt);

  torch::manual_seed(s.rank);
  torch::nn::Linear policy(kObs, kActions);
  TensorDict weights = weights_of(policy);
  // broadcast returns rank 0's weights; update_ writes them into this policy's parameters.
  weights.update_(td::broadcast(weights, group, /*src=*/0));  // every actor starts from the learner's weights
  torch::optim::SGD optimizer(policy->parameters(), torch::optim::SGDOptions(0.05));

  std::vector<td::TensorDict> inbox;  // the learner's receive buffers, one per actor
  for (int64_t it = 0; it < kIterations; ++it) {
    if (s.rank != 0) {
      TensorDict mine = rollout(policy, s.rank);
      // The first rollout carries its structure; later ones reuse the learner's buffer.
      if (it == 0) {
        td::init_remote(mine, group, 0);
      } else {
        td::send(mine, group, 0);
      }
    } else {
      for (int actor = 1; actor < s.world_size; ++actor) {
        if (it == 0) {
          inbox.push_back(td::from_remote_init(group, actor));
        } else {
          td::recv(inbox[actor - 1], group, actor);
        }
      }
      TensorDict batch = td::stack(inbox, 0);  // [actors, time, env]
      // One step of reward-weighted regression of the actions onto the policy.
      auto advantage = batch.get({"next", "reward"}) - batch.get({"next", "reward"}).mean();
      auto prediction = torch::tanh(policy(batch.get("observation")));
      auto loss = ((prediction - batch.get("action")).pow(2).sum(-1, true) * torch::exp(advantage)).mean();
      optimizer.zero_grad();
      loss.backward();
      optimizer.step();
      std::cout << "learner: iteration " << it << ", batch " << batch.batch_size() << ", mean reward "
                << batch.get({"next", "reward"}).mean().item<double>() << ", loss " << loss.item<double>() << std::endl;
    }
    weights = weights_of(policy);
    weights.update_(td::broadcast(weights, group, 0));  // the actors' policies now hold the learner's new weights
  }
  // Every rank agrees on the final weights: their sum is world_size times the learner's.
  TensorDict total(weights.clone());
  td::all_reduce(total, group);
  const bool agree = torch::allclose(total.get("weight"), weights.get("weight") * s.world_size);
  std::cout << "rank " << s.rank << ": done, weights agree across ranks: " << (agree ? "yes" : "no") << std::endl;
  return agree ? 0 : 1;
}

int env_int(const char* name, int fallback) {
  const char* v = std::getenv(name);
  return v ? std::stoi(v) : fallback;
}

// A port the kernel reports free now (the store binds it a moment later).
int free_port() {
  const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t len = sizeof addr;
  if (fd < 0 || ::bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0 ||
      ::getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len) != 0) {
    throw std::runtime_error("no free port on loopback");
  }
  ::close(fd);
  return ntohs(addr.sin_port);
}

// No RANK in the environment: this process forks every rank on loopback and
// waits for them (two minutes at most).
int fork_ranks(int world_size) {
  Settings s;
  s.world_size = world_size;
  s.master_port = free_port();
  std::vector<pid_t> pids;
  for (int rank = 0; rank < world_size; ++rank) {
    const pid_t pid = ::fork();
    if (pid == 0) {
      s.rank = rank;
      int code = 1;
      try {
        code = run(s);
      } catch (const std::exception& e) {
        std::cerr << "rank " << rank << ": " << e.what() << std::endl;
      }
      std::_Exit(code);
    }
    pids.push_back(pid);
  }
  int failed = 0;
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::minutes(2);
  for (std::size_t left = pids.size(); left > 0;) {
    for (auto& pid : pids) {
      int status = 0;
      if (pid > 0 && ::waitpid(pid, &status, WNOHANG) == pid) {
        failed += !(WIFEXITED(status) && WEXITSTATUS(status) == 0);
        pid = -1;
        --left;
      }
    }
    if (left > 0 && std::chrono::steady_clock::now() > deadline) {
      for (auto pid : pids) {
        if (pid > 0) ::kill(pid, SIGKILL);
      }
      std::cerr << "ranks still running after two minutes: killed\n";
      return 1;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  return failed == 0 ? 0 : 1;
}

}  // namespace

int main(int argc, char** argv) {
  try {
    if (!std::getenv("RANK")) return fork_ranks(argc > 1 ? std::stoi(argv[1]) : 3);
    Settings s;
    if (const char* addr = std::getenv("MASTER_ADDR")) s.master_addr = addr;
    s.master_port = env_int("MASTER_PORT", 29500);
    s.rank = env_int("RANK", 0);
    s.world_size = env_int("WORLD_SIZE", 1);
    return run(s);
  } catch (const std::exception& e) {
    std::cerr << e.what() << std::endl;
    return 1;
  }
}
