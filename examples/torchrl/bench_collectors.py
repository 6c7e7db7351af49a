#!/usr/bin/env python3
"""Frames per second: C++ actors against TorchRL's own collector.

    python bench_collectors.py --actor build-torch2/examples/torchrl_actor --policy policy.pt2 \\
        [--configs 1x1 2x1 2x16] [--steps 200] [--out results/bench.json]

For each configuration PROCESSES x ENVS (environments per process), both
collectors run the same
policy network (common.make_policy_net, sampled as a TanhNormal in [-2, 2])
on Pendulum-v1 with the same number of collecting processes, delivering
batches of processes x envs x steps frames to one Python process:

- C++ actors (launch.py, learner.py --mode bench): each steps its envs
  (pendulum.h) with the exported package and sends its rollout with
  tensordict's protocol; the learner receives them.
- TorchRL: ``MultiSyncCollector`` (``MultiSyncDataCollector`` before TorchRL
  0.14; ``Collector`` for one process) over ``GymEnv("Pendulum-v1")`` with
  ``RewardSum`` (envs > 1: ``SerialEnv(envs, GymEnv)`` in each worker, one
  policy call for all its environments, as a C++ actor), the TorchRL actor
  over the same network, one torch thread per worker.

No training: frames per second over the batches after the first (which
includes start-up). Prints a table and the ratio; writes --out as JSON.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
from pathlib import Path

import launch

HERE = Path(__file__).resolve().parent


def last_json(text: str) -> dict:
    for line in reversed(text.splitlines()):
        if line.startswith("{"):
            return json.loads(line)
    raise RuntimeError(f"no result in the learner's output:\n{text}")


def main() -> int:
    p = argparse.ArgumentParser()
    p.add_argument("--actor", required=True)
    p.add_argument("--policy", required=True)
    p.add_argument("--configs", nargs="+", default=["1x1", "2x1", "2x16"], help="PROCESSESxENVS")
    p.add_argument("--steps", type=int, default=200)
    p.add_argument("--seconds", type=float, default=8.0, help="about how long each measurement runs")
    p.add_argument("--out")
    a = p.parse_args()
    results = []
    for config in a.configs:
        processes, envs = map(int, config.split("x"))
        batch = processes * envs * a.steps
        row = {"processes": processes, "envs_per_process": envs, "steps": a.steps, "frames_per_batch": batch}
        # A short probe run sizes each measurement to about --seconds.
        for name in ("torchrl", "cpp"):
            rounds = 3
            while True:
                if name == "cpp":
                    code, out = launch.run(a.actor, a.policy, processes, envs, a.steps,
                                           ["--mode", "bench", "--rounds", str(rounds)], deadline=600, echo=False)
                    if code != 0:
                        return 1
                else:
                    out = subprocess.run(
                        [sys.executable, str(HERE / "learner.py"), "--collector", "torchrl", "--mode", "bench",
                         "--actors", str(processes), "--envs", str(envs), "--steps", str(a.steps),
                         "--rounds", str(rounds)], capture_output=True, text=True, check=True).stdout
                r = last_json(out)
                if (r["seconds"] >= a.seconds * 0.7 and rounds >= 6) or rounds >= 5000:
                    break
                rounds = max(rounds + 1, int(rounds * a.seconds / max(r["seconds"], 1e-3)))
            row[name] = r
            print(f"{name:8s} {processes} process(es) x {envs:3d} envs: {r['fps']:10.0f} frames/s "
                  f"({r['frames']} frames in {r['seconds']:.2f} s)", flush=True)
        row["ratio"] = row["cpp"]["fps"] / row["torchrl"]["fps"]
        print(f"ratio (C++ actors / TorchRL): {row['ratio']:.1f}x", flush=True)
        results.append(row)
    if a.out:
        Path(a.out).write_text(json.dumps(results, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
