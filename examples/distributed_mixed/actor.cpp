// A C++ actor beside a Python learner (learner.py), in one torch.distributed
// group: each round the actor plays a rollout with the current weights,
// sends it to the learner (rank 0), and receives the learner's new weights.
//
//   MASTER_ADDR=127.0.0.1 MASTER_PORT=29500 WORLD_SIZE=3 RANK=0 python learner.py &
//   MASTER_ADDR=127.0.0.1 MASTER_PORT=29500 WORLD_SIZE=3 RANK=1 ./distributed_mixed_actor &
//   MASTER_ADDR=127.0.0.1 MASTER_PORT=29500 WORLD_SIZE=3 RANK=2 ./distributed_mixed_actor
//
// (CTest starts the three with tests/distributed/mixed/run_mixed.py.)
#include <ATen/ATen.h>

#include <tensordict/distributed.h>
#include <tensordict/tensordict.h>

#include <iostream>

namespace td = tensordict;
using td::TensorDict;

namespace {

// Shared with learner.py: the rollout's and the weights' structure.
constexpr int64_t kSteps = 8, kObs = 4, kActions = 2, kRounds = 3;

TensorDict play(const TensorDict& weights, int rank, int round) {
  const at::Tensor obs = at::arange(kSteps * kObs, at::kFloat).reshape({kSteps, kObs}) / 10.0 + rank + round;
  const at::Tensor action = at::tanh(obs.matmul(weights.get("w")) + weights.get("b"));
  return TensorDict({{"observation", obs},
                     {"action", action},
                     {"reward", -action.pow(2).sum(-1, true)},
                     {"next", TensorDict({{"observation", obs + 1}}, {kSteps})}},
                    {kSteps});
}

}  // namespace

int main() {
  try {
    const auto group = td::init_process_group();
    const int rank = group->getRank();
    TensorDict weights({{"w", at::zeros({kObs, kActions})}, {"b", at::zeros({kActions})}}, {});
    for (int round = 0; round < kRounds; ++round) {
      td::send(play(weights, rank, round), group, /*dst=*/0);
      td::recv(weights, group, /*src=*/0);  // the learner's new weights, in place
      // learner.py's update is deterministic: check what arrived.
      if (!at::equal(weights.get("b"), at::full({kActions}, 0.5 * (round + 1)))) {
        std::cerr << "actor " << rank << ": unexpected weights after round " << round << "\n";
        return 1;
      }
    }
    std::cout << "actor " << rank << ": " << kRounds << " rounds, final b " << weights.get("b") << "\n";
    return 0;
  } catch (const std::exception& e) {
    std::cerr << "actor: " << e.what() << "\n";
    return 1;
  }
}
