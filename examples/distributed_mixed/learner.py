#!/usr/bin/env python3
"""The Python learner beside C++ actors (actor.cpp): rank 0 of one torch.distributed group.

Each round it receives a rollout from every actor (tensordict's recv into a
tensordict of the same structure), takes one step, and sends its weights back.
Run it with RANK=0 and the actors with RANK=1.. (see actor.cpp).
"""

import sys

import torch
import torch.distributed as dist
from tensordict import TensorDict

STEPS, OBS, ACTIONS, ROUNDS = 8, 4, 2, 3  # shared with actor.cpp


def rollout_template() -> TensorDict:
    return TensorDict(
        observation=torch.zeros(STEPS, OBS),
        action=torch.zeros(STEPS, ACTIONS),
        reward=torch.zeros(STEPS, 1),
        next=TensorDict(observation=torch.zeros(STEPS, OBS), batch_size=[STEPS]),
        batch_size=[STEPS],
    )


def main() -> int:
    dist.init_process_group("gloo")
    world = dist.get_world_size()
    weights = TensorDict(w=torch.zeros(OBS, ACTIONS), b=torch.zeros(ACTIONS))
    for round_ in range(ROUNDS):
        rollouts = []
        for actor in range(1, world):
            rollout = rollout_template()
            rollout.recv(src=actor)
            expected_obs = torch.arange(STEPS * OBS, dtype=torch.float32).reshape(STEPS, OBS) / 10.0 + actor + round_
            if not torch.equal(rollout["observation"], expected_obs):
                print(f"learner: unexpected observations from actor {actor}", file=sys.stderr)
                return 1
            rollouts.append(rollout)
        batch = torch.stack(rollouts)
        # One (illustrative) step: the weights move with the mean reward; the
        # bias follows a fixed schedule the actors check.
        weights["w"] += 0.01 * batch["reward"].mean() * torch.ones(OBS, ACTIONS)
        weights["b"] = torch.full((ACTIONS,), 0.5 * (round_ + 1))
        for actor in range(1, world):
            weights.send(dst=actor)
        print(f"learner: round {round_}, {len(rollouts)} rollouts, mean reward {batch['reward'].mean():.4f}")
    dist.destroy_process_group()
    return 0


if __name__ == "__main__":
    sys.exit(main())
