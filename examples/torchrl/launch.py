#!/usr/bin/env python3
"""Starts the TorchRL loop: the Python learner (rank 0) and C++ actors.

    python launch.py --actor build-torch2/examples/torchrl_actor --policy policy.pt2 \\
        [--actors 2] [--envs 1] [--steps 50] [--deadline S] [-- LEARNER ARGS...]

One torch.distributed group on a free loopback port (env://, as torchrun sets
it up): learner.py under this interpreter, then --actors C++ actor processes,
each stepping --envs environments for --steps steps a round. The arguments
after ``--`` go to learner.py (--mode, --log, ...). Passes when every process
exits 0; a failing or late process stops the others, and its output is
printed first.
"""

from __future__ import annotations

import argparse
import os
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def run(actor: str, policy: str, actors: int, envs: int, steps: int, learner_args: list, deadline: float,
        seed: int = 0, echo: bool = True) -> tuple:
    """Runs the loop; returns (exit code, the learner's output)."""
    port = free_port()
    world = actors + 1
    procs, logs = [], []
    for rank in range(world):
        env = dict(os.environ, MASTER_ADDR="127.0.0.1", MASTER_PORT=str(port), RANK=str(rank),
                   WORLD_SIZE=str(world), GLOO_SOCKET_IFNAME="lo", PYTHONDONTWRITEBYTECODE="1")
        if rank == 0:
            cmd = [sys.executable, str(HERE / "learner.py"), "--collector", "cpp", "--envs", str(envs),
                   "--steps", str(steps), "--seed", str(seed), *learner_args]
        else:
            cmd = [actor, policy, "--envs", str(envs), "--steps", str(steps), "--seed", str(seed)]
        log = tempfile.TemporaryFile(mode="w+")
        logs.append(log)
        # The learner's output streams through when echoing (training runs long).
        out = None if (rank == 0 and echo) else log
        procs.append(subprocess.Popen(cmd, env=env, stdout=out, stderr=subprocess.STDOUT if out else None))
    end = time.monotonic() + deadline
    failed = None
    while any(p.poll() is None for p in procs):
        failed = next((r for r, p in enumerate(procs) if p.poll() not in (None, 0)), None)
        if failed is not None or time.monotonic() > end:
            break
        time.sleep(0.05)
    if failed is None:
        failed = next((r for r, p in enumerate(procs) if p.poll() != 0), None)
    for p in procs:
        if p.poll() is None:
            p.kill()
        p.wait()

    def output(rank):
        logs[rank].seek(0)
        return logs[rank].read()

    if failed is not None:
        code = procs[failed].returncode
        why = "timed out" if code in (None, -9) and time.monotonic() > end else f"exited with {code}"
        print(f"FAIL: rank {failed} ({'learner' if failed == 0 else 'actor'}) {why}\n{output(failed)}")
        for r in range(world):
            if r != failed:
                print(f"--- rank {r}, exit {procs[r].returncode} ---\n{output(r)}")
        return 1, output(0)
    if echo:
        for r in range(1, world):
            print(output(r), end="")
    return 0, output(0)


def main() -> int:
    argv = sys.argv[1:]
    learner_args = []
    if "--" in argv:
        i = argv.index("--")
        argv, learner_args = argv[:i], argv[i + 1:]
    p = argparse.ArgumentParser()
    p.add_argument("--actor", required=True, help="the torchrl_actor binary")
    p.add_argument("--policy", required=True, help="the package export_policy.py wrote")
    p.add_argument("--actors", type=int, default=2)
    p.add_argument("--envs", type=int, default=1)
    p.add_argument("--steps", type=int, default=50)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--deadline", type=float, default=3600)
    a = p.parse_args(argv)
    code, _ = run(a.actor, a.policy, a.actors, a.envs, a.steps, learner_args, a.deadline, a.seed)
    return code


if __name__ == "__main__":
    sys.exit(main())
