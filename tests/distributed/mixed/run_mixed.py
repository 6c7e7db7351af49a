#!/usr/bin/env python3
"""Runs one mixed-group scenario: C++ and Python ranks in one torch.distributed group.

``run_mixed.py --cpp <mixed_rank> --scenario NAME --ranks cpp,py[,py...]``
starts the ranks of ``--ranks`` (rank i is the i-th entry): a process of the
C++ rank binary for each C++ rank, and one ``mixed_rank.py`` under this
interpreter that imports torch and tensordict once and forks the Python ranks
(a single Python rank, or another ``--py`` script: a process each); all meet through ``env://`` on a free loopback port, as ``torchrun`` would set
them up.
Each rank runs the scenario's part for its role and checks exact values.
Passes when every rank exits 0 within ``--deadline`` seconds; otherwise kills
what is left and prints the failing rank's output first, then the others'.
"""

from __future__ import annotations

import argparse
import os
import signal
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
# CTest's SKIP_RETURN_CODE for a scenario this machine cannot run.
SKIP_CODE = 77


# The cases that tensordict 0.14 (the one TorchRL 0.14 pins) cannot run, as
# (scenario, its arguments or None for any, the line-ups or None for any, the
# reason): skipped with the reason printed when the Python ranks' tensordict is
# older than 0.15 (README.md, "tensordict 0.14 (TorchRL 0.14)", lists them).
_BUCKETS = "tensordict 0.14's all_reduce and reduce take no bucket_bytes (0.15 added bucketed reductions)"
_GATHER = ("tensordict 0.14's gather_and_stack pickles the whole tensordict (gather_object); the C++ ranks "
           "speak 0.15's (the consolidated storage after a header) and unpickle no tensordict")
TENSORDICT_0_14_SKIPS = [
    ("reduce", ("nested", "all_bucket"), None, _BUCKETS),
    ("reduce", ("nested", "reduce_bucket"), None, _BUCKETS),
    ("reduce", ("lazy", "all_bucket"), None, _BUCKETS),
    ("reduce", ("stack", "reduce_bucket"), None, _BUCKETS),
    ("reduce", ("stack", "reduce"), ("py,cpp,cpp",),
     "tensordict 0.14's reduce() of a lazy stack reduces only its dense leaves into the destination "
     "(rank 0, Python; so do three Python ranks)"),
    ("gather_and_stack", None, None, _GATHER),
    ("hostile", None, ("py,cpp",), "its Python rank calls gather_and_stack: " + _GATHER),
]


def skip_reason(scenario: str, extra: list[str], ranks: str) -> str | None:
    """Why the Python ranks' tensordict cannot run this case, if it cannot."""
    from importlib.metadata import version

    if "py" not in ranks.split(","):
        return None
    major, minor = (int(part) for part in version("tensordict").split(".")[:2])
    if (major, minor) >= (0, 15):
        return None
    for name, args, lineups, reason in TENSORDICT_0_14_SKIPS:
        if name == scenario and (args is None or tuple(extra) == args) and (lineups is None or ranks in lineups):
            return f"{reason} (tensordict {version('tensordict')})"
    return None


def free_port() -> int:
    # The port is free when probed; rank 0's TCPStore binds it moments later.
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--cpp", required=True, help="the C++ rank binary (mixed_rank)")
    parser.add_argument("--py", default=str(HERE / "mixed_rank.py"), help="the Python rank script")
    parser.add_argument("--scenario", required=True)
    parser.add_argument("--ranks", required=True, help="comma-separated roles, rank 0 first: cpp or py")
    parser.add_argument("--deadline", type=float, default=90.0)
    parser.add_argument(
        "--backend",
        choices=("gloo", "nccl"),
        default="gloo",
        help="nccl: one GPU per rank (LOCAL_RANK); exits with SKIP_CODE when there are fewer GPUs than ranks",
    )
    parser.add_argument("extra", nargs="*", help="passed to every rank after the scenario")
    args = parser.parse_args()

    roles = args.ranks.split(",")
    if not roles or any(r not in ("cpp", "py") for r in roles):
        print(f"--ranks must list cpp or py, got {args.ranks!r}")
        return 2
    if args.backend == "nccl":
        import torch

        gpus = torch.cuda.device_count()
        if gpus < len(roles):
            # NCCL refuses two ranks on one GPU ("Duplicate GPU detected").
            print(f"SKIP {args.scenario} [{args.ranks}]: nccl needs {len(roles)} GPUs, found {gpus}")
            return SKIP_CODE
    why = skip_reason(args.scenario, args.extra, args.ranks)
    if why is not None:
        print(f"SKIP {args.scenario} {' '.join(args.extra)} [{args.ranks}]: {why}")
        return SKIP_CODE
    port = free_port()
    base_env = dict(os.environ)
    base_env.update(
        MASTER_ADDR="127.0.0.1",
        MASTER_PORT=str(port),
        WORLD_SIZE=str(len(roles)),
        GLOO_SOCKET_IFNAME="lo",
        MIXED_BACKEND=args.backend,
        # The Python ranks must not pick up the build tree's own modules.
        PYTHONDONTWRITEBYTECODE="1",
    )
    work = tempfile.TemporaryDirectory(prefix="run_mixed.")
    logs = [os.path.join(work.name, f"rank{rank}.log") for rank in range(len(roles))]
    # Each process started and the ranks it runs: a C++ rank each, and one
    # Python process for all the Python ranks, which forks them after
    # importing torch and tensordict once (mixed_rank.py's fork_ranks).
    # (Another --py script, such as an example's learner, or a single Python
    # rank: a process of its own.)
    procs: list[tuple[subprocess.Popen, list[int]]] = []
    python_ranks = [rank for rank, role in enumerate(roles) if role == "py"]
    forked = len(python_ranks) > 1 and Path(args.py).resolve() == (HERE / "mixed_rank.py").resolve()
    for rank, role in enumerate(roles):
        if role == "cpp" or not forked:
            env = dict(base_env, RANK=str(rank), LOCAL_RANK=str(rank))
            cmd = [args.cpp] if role == "cpp" else [sys.executable, args.py]
            with open(logs[rank], "w") as log:
                procs.append((subprocess.Popen([*cmd, args.scenario, *args.extra], env=env, stdout=log,
                                               stderr=subprocess.STDOUT), [rank]))
    if forked:
        spec = ",".join(f"{rank}={logs[rank]}" for rank in python_ranks)
        procs.append((subprocess.Popen([sys.executable, args.py, "--fork", spec, args.scenario, *args.extra],
                                       env=base_env, start_new_session=True), python_ranks))

    def failed_rank(proc: subprocess.Popen, ranks: list[int]) -> int:
        # The forking Python process exits with 10 + the rank that failed
        # (fork_ranks), or another code when it failed before it forked any.
        if len(ranks) == 1 or proc.returncode - 10 not in ranks:
            return ranks[0]
        return proc.returncode - 10

    def kill(proc: subprocess.Popen, ranks: list[int]) -> None:
        if proc.poll() is None:
            if len(ranks) > 1:
                os.killpg(proc.pid, signal.SIGKILL)  # the forked ranks too
            else:
                proc.kill()

    deadline = time.monotonic() + args.deadline
    failed = None  # (rank, why)
    while any(p.poll() is None for p, _ in procs):
        for p, ranks in procs:
            if p.poll() not in (None, 0) and failed is None:
                failed = (failed_rank(p, ranks), f"exited with {p.returncode}")
        if failed is not None or time.monotonic() > deadline:
            break
        time.sleep(0.05)
    if failed is None:
        for p, ranks in procs:
            if p.poll() is None:
                failed = (ranks[0], f"still running after {args.deadline:g} s")
                break
            if p.returncode != 0:
                failed = (failed_rank(p, ranks), f"exited with {p.returncode}")
                break
    for p, ranks in procs:
        kill(p, ranks)
    for p, _ in procs:
        p.wait()
    exit_codes = {}
    for p, ranks in procs:
        for rank in ranks:
            exit_codes[rank] = p.returncode

    def output(rank: int) -> str:
        try:
            with open(logs[rank], errors="replace") as log:
                return log.read()
        except FileNotFoundError:
            return ""

    name = f"{args.scenario} [{args.ranks}]"
    if failed is None:
        print(f"PASS {name}")
        for rank in range(len(roles)):
            print(f"--- rank {rank} ({roles[rank]}) ---\n{output(rank)}", end="")
        return 0
    rank, why = failed
    print(f"FAIL {name}: rank {rank} ({roles[rank]}) {why}")
    print(f"--- rank {rank} ({roles[rank]}) ---\n{output(rank)}")
    for other in range(len(roles)):
        if other != rank:
            print(f"--- rank {other} ({roles[other]}), exit {exit_codes[other]} ---\n{output(other)}")
    return 1


if __name__ == "__main__":
    sys.exit(main())
