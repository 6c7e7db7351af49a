#!/usr/bin/env python3
"""The TorchRL learner of the loop: SAC (torchrl.objectives) on Pendulum-v1.

With C++ actors (``--collector cpp``, rank 0 of one torch.distributed group;
launch.py starts it with the actors): each round it sends every actor a
control message ([weights version, stop]) and, when the version changed, its
policy network's weights (``TensorDict.from_module(net).data.send``); then
receives each actor's rollout (a pendulum::Transition of batch [envs, steps],
tensordict's ``recv``) and probe, extends a TorchRL replay buffer with the
rollouts and trains. The actors load the weights into their running
packages.

With TorchRL's own collector (``--collector torchrl``): the same learner,
the same networks and settings, fed by ``Collector`` (one process; ``SyncDataCollector``
before TorchRL 0.14) or ``MultiSyncCollector`` (``MultiSyncDataCollector``) (``--actors`` worker processes) over
``GymEnv("Pendulum-v1")``, for comparison.

Modes:
  train  until the mean return of the last 10 episodes reaches --target
         (or --max-frames); logs every episode (frames, wall time, return)
         to --log as CSV.
  test   a few rounds with a few updates each; checks that rollouts arrive,
         that the weights change each round and that every actor's probe (its
         deterministic action on fixed observations) equals this network's
         with the weights of the version the actor reports. Exit 1 otherwise.
  bench  receives --rounds rounds without training; prints the frames per
         second (rounds after the first) as a JSON line.
"""

from __future__ import annotations

import argparse
import csv
import json
import os
import sys
import time
from collections import deque

import torch
from common import ACT, deterministic_action, make_actor, make_policy_net, make_qvalue, probe_template, rollout_template
from tensordict import TensorDict
from torchrl.data import LazyTensorStorage, TensorDictReplayBuffer
from torchrl.objectives import SACLoss, SoftUpdate


def parse() -> argparse.Namespace:
    p = argparse.ArgumentParser()
    p.add_argument("--mode", choices=("train", "test", "bench"), default="train")
    p.add_argument("--collector", choices=("cpp", "torchrl"), default="cpp")
    p.add_argument("--actors", type=int, default=2, help="torchrl: collector worker processes (cpp: WORLD_SIZE - 1)")
    p.add_argument("--envs", type=int, default=1, help="environments per actor process")
    p.add_argument("--steps", type=int, default=50, help="steps per environment and round")
    p.add_argument("--utd", type=float, default=1.0, help="gradient updates per collected frame")
    p.add_argument("--batch", type=int, default=256)
    p.add_argument("--lr", type=float, default=1e-3)
    p.add_argument("--init-frames", type=int, default=1000, help="frames collected before the first update")
    p.add_argument("--weights-every", type=int, default=1, help="rounds between weight sends")
    p.add_argument("--target", type=float, default=-250.0)
    p.add_argument("--max-frames", type=int, default=60_000)
    p.add_argument("--rounds", type=int, default=4, help="test and bench modes")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--threads", type=int, default=1, help="torch threads of the learner")
    p.add_argument("--log", help="train: CSV of episodes (frames, wall_s, return)")
    return p.parse_args()


class Learner:
    def __init__(self, args):
        self.args = args
        self.net = make_policy_net(args.seed)
        self.actor = make_actor(self.net)
        self.loss = SACLoss(actor_network=self.actor, qvalue_network=make_qvalue(args.seed + 1), num_qvalue_nets=2,
                            target_entropy=-float(ACT))
        self.loss.make_value_estimator(gamma=0.99)
        self.target = SoftUpdate(self.loss, eps=0.995)
        self.optim = torch.optim.Adam(self.loss.parameters(), lr=args.lr)
        self.buffer = TensorDictReplayBuffer(storage=LazyTensorStorage(100_000), batch_size=args.batch)
        self.frames = 0
        self.updates = 0
        self.owed = 0.0  # updates due (utd * frames), not yet run
        self.returns: deque = deque(maxlen=10)
        self.episodes = 0
        self.waiting_s = 0.0  # time spent waiting for the collectors' data
        self.start = time.monotonic()
        self.log = None
        if args.log:
            os.makedirs(os.path.dirname(os.path.abspath(args.log)), exist_ok=True)
            self.log_file = open(args.log, "w", newline="")
            self.log = csv.writer(self.log_file)
            self.log.writerow(["frames", "wall_s", "return", "updates", "waiting_s"])

    def weights(self) -> TensorDict:
        return TensorDict.from_module(self.net).data

    def add(self, batch: TensorDict) -> None:
        """Extends the buffer with a rollout and logs the episodes it ends."""
        flat = batch.reshape(-1)
        self.buffer.extend(flat.select("observation", "action", ("next", "observation"), ("next", "reward"),
                                       ("next", "done"), ("next", "terminated"), ("next", "truncated")))
        self.frames += flat.numel()
        done = flat["next", "done"].squeeze(-1)
        wall = time.monotonic() - self.start
        for ret in flat["next", "episode_reward"][done].squeeze(-1).tolist():
            self.returns.append(ret)
            self.episodes += 1
            if self.log:
                self.log.writerow([self.frames, f"{wall:.3f}", f"{ret:.3f}", self.updates, f"{self.waiting_s:.3f}"])
        if self.log:
            self.log_file.flush()

    def train(self, new_frames: int) -> None:
        if self.frames < self.args.init_frames:
            return
        self.owed += self.args.utd * new_frames
        while self.owed >= 1:
            self.owed -= 1
            sample = self.buffer.sample()
            losses = self.loss(sample)
            total = losses["loss_actor"] + losses["loss_qvalue"] + losses["loss_alpha"]
            self.optim.zero_grad()
            total.backward()
            self.optim.step()
            self.target.step()
            self.updates += 1

    def mean_return(self) -> float:
        return sum(self.returns) / len(self.returns) if len(self.returns) == 10 else float("-inf")

    def reached(self) -> bool:
        return self.mean_return() >= self.args.target

    def report(self, label: str) -> None:
        wall = time.monotonic() - self.start
        print(f"learner ({label}): {self.frames} frames, {self.episodes} episodes, {self.updates} updates, "
              f"{wall:.1f} s ({self.waiting_s:.1f} s waiting for data), "
              f"mean return of the last 10 episodes {self.mean_return():.1f}", flush=True)


def run_cpp(args) -> int:
    import torch.distributed as dist

    dist.init_process_group("gloo")
    actors = range(1, dist.get_world_size())
    learner = Learner(args)
    control = TensorDict(control=torch.zeros(2, dtype=torch.int64))
    version, sent = 1, {a: 0 for a in actors}
    expected = {}  # version -> (probe observations -> deterministic actions), computed on demand
    probe_history = {}  # version -> the probe actions the actors reported
    failures = []
    bench_start = None
    round_ = 0
    while True:
        stop = (
            (args.mode == "train" and (learner.reached() or learner.frames >= args.max_frames))
            or (args.mode != "train" and round_ >= args.rounds)
        )
        if version not in expected:
            expected[version] = {k: v.clone() for k, v in learner.net.state_dict().items()}
        for a in actors:
            control["control"] = torch.tensor([version, int(stop)])
            control.send(dst=a)
            if not stop and sent[a] != version:
                learner.weights().send(dst=a)
                sent[a] = version
        if stop:
            break
        new_frames = 0
        for a in actors:
            waiting = time.monotonic()
            rollout = rollout_template(args.envs, args.steps)
            rollout.recv(src=a)
            probe = probe_template()
            probe.recv(src=a)
            learner.waiting_s += time.monotonic() - waiting
            new_frames += rollout.numel()
            if args.mode == "bench":
                continue
            learner.add(rollout)
            failures += check(a, rollout, probe, expected, probe_history, learner)
        round_ += 1
        if args.mode == "bench":
            if round_ == 1:
                bench_start, bench_frames = time.monotonic(), 0
            else:
                bench_frames += new_frames
            continue
        if args.mode == "test":
            # A few updates, so that every round's weights differ.
            learner.owed, learner.args.init_frames = 16, 0
            learner.train(0)
        else:
            learner.train(new_frames)
        if round_ % args.weights_every == 0:
            version += 1
        if args.mode == "train" and round_ % 20 == 0:
            learner.report("cpp actors")
    if args.mode == "bench":
        elapsed = time.monotonic() - bench_start
        print(json.dumps({"collector": "cpp", "frames": bench_frames, "seconds": elapsed, "fps": bench_frames / elapsed}))
    elif args.mode == "test":
        versions = sorted(probe_history)
        want_frames = args.rounds * len(actors) * args.envs * args.steps
        if learner.frames != want_frames or len(learner.buffer) != want_frames:
            failures.append(f"{learner.frames} frames arrived ({len(learner.buffer)} in the replay buffer), "
                            f"expected {want_frames}")
        if len(versions) < 2:
            failures.append(f"the probes came with versions {versions}: the weights never changed")
        for v0, v1 in zip(versions, versions[1:]):
            if torch.allclose(probe_history[v0], probe_history[v1], atol=1e-4):
                failures.append(f"the actors' actions did not change from weights version {v0} to {v1}")
        print(f"learner: {round_} rounds, {learner.frames} frames from {len(actors)} actors, weights versions seen "
              f"{versions}, {learner.updates} updates")
    else:
        learner.report("cpp actors, done")
    dist.destroy_process_group()
    for f in failures:
        print("FAIL:", f, file=sys.stderr)
    return 1 if failures else 0


def check(actor, rollout, probe, expected, probe_history, learner) -> list:
    """The test mode's checks on one actor's round."""
    out = []
    obs = rollout["observation"]
    if not torch.allclose(obs[..., 0] ** 2 + obs[..., 1] ** 2, torch.ones(()), atol=1e-5):
        out.append(f"actor {actor}: observations off the unit circle")
    if obs[..., 2].abs().max() > 8 or rollout["action"].abs().max() > 2:
        out.append(f"actor {actor}: velocity or action out of bounds")
    reward = rollout["next", "reward"]
    if reward.max() > 0 or reward.min() < -16.2736044 - 1e-4:
        out.append(f"actor {actor}: rewards out of Pendulum's range")
    version = int(probe["version"][0])
    if version not in expected:
        return out + [f"actor {actor}: probe of unknown weights version {version}"]
    net = make_policy_net()
    net.load_state_dict(expected[version])
    want = deterministic_action(net, probe["observation"])
    if not torch.allclose(probe["action"], want, atol=1e-5, rtol=0):
        out.append(f"actor {actor}: actions with weights version {version} are {probe['action'].flatten().tolist()}, "
                   f"the learner's network gives {want.flatten().tolist()}")
    probe_history.setdefault(version, probe["action"].clone())
    return out


def run_torchrl(args) -> int:
    # TorchRL 0.14's names for SyncDataCollector and MultiSyncDataCollector.
    from torchrl.collectors import Collector, MultiSyncCollector
    from torchrl.envs import GymEnv, RewardSum, SerialEnv, TransformedEnv

    def make_env():
        # Several environments per process: stepped one after the other in
        # the collecting process, with one policy call for all (as a C++
        # actor steps its batch). GymEnv(num_envs=...) would start a process
        # per environment (gymnasium's AsyncVectorEnv).
        env = SerialEnv(args.envs, lambda: GymEnv("Pendulum-v1")) if args.envs > 1 else GymEnv("Pendulum-v1")
        return TransformedEnv(env, RewardSum())

    learner = Learner(args)
    frames_per_batch = args.actors * args.envs * args.steps
    total = args.max_frames if args.mode == "train" else frames_per_batch * (args.rounds + 1)
    if args.actors == 1:
        collector = Collector(make_env, learner.actor, frames_per_batch=frames_per_batch, total_frames=total)
    else:
        # Worker processes with one torch thread each (num_sub_threads), as
        # the C++ actors.
        collector = MultiSyncCollector([make_env] * args.actors, learner.actor, frames_per_batch=frames_per_batch,
                                       total_frames=total, num_threads=args.threads, num_sub_threads=1)
    collector.set_seed(args.seed)
    learner.start = time.monotonic()
    bench_start, bench_frames = None, 0
    waiting = time.monotonic()
    for i, batch in enumerate(collector):
        learner.waiting_s += time.monotonic() - waiting
        if args.mode == "bench":
            if i == 0:
                bench_start = time.monotonic()
            else:
                bench_frames += batch.numel()
            if i >= args.rounds:
                break
            continue
        learner.add(batch)
        learner.train(batch.numel())
        collector.update_policy_weights_()
        if args.mode == "train":
            if (i + 1) % 20 == 0:
                learner.report("TorchRL collector")
            if learner.reached():
                break
        waiting = time.monotonic()
    collector.shutdown()
    if args.mode == "bench":
        elapsed = time.monotonic() - bench_start
        print(json.dumps({"collector": "torchrl", "frames": bench_frames, "seconds": elapsed,
                          "fps": bench_frames / elapsed}))
    else:
        learner.report("TorchRL collector, done")
    return 0


def main() -> int:
    args = parse()
    torch.set_num_threads(args.threads)
    torch.manual_seed(args.seed)
    return run_cpp(args) if args.collector == "cpp" else run_torchrl(args)


if __name__ == "__main__":
    sys.exit(main())
