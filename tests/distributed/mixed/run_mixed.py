#!/usr/bin/env python3
"""Runs one mixed-group scenario: C++ and Python ranks in one torch.distributed group.

``run_mixed.py --cpp <mixed_rank> --scenario NAME --ranks cpp,py[,py...]``
starts the ranks of ``--ranks`` (rank i is the i-th entry): a process of the
C++ rank binary for each C++ rank, and one ``mixed_rank.py`` under this
interpreter that imports torch and tensordict once and forks the Python ranks
(a single Python rank, or another ``--py`` script: a process each), or, when
``--server`` names the suite's rank server and it is up (a CTest fixture that
has imported them already), has the server fork each Python rank.
``run_mixed.py --stop-server SOCKET`` stops that server. All meet
through ``env://`` on a free loopback port, as ``torchrun`` would set them up.
Each rank runs the scenario's part for its role and checks exact values.
Passes when every rank exits 0 within ``--deadline`` seconds; otherwise kills
what is left and prints the failing rank's output first, then the others'.
"""

from __future__ import annotations

import argparse
import json
import os
import select
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
# older than 0.15 (docs/persistence.md, "tensordict 0.14 (TorchRL 0.14)", lists them).
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


class ServedRank:
    """A Python rank forked by the rank server (mixed_rank.py serve()), with
    the part of subprocess.Popen's interface this script uses."""

    def __init__(self, server: str, argv: list[str], env: dict[str, str], log: str):
        self.conn = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self.conn.connect(server)
        self.conn.sendall((json.dumps({"argv": argv, "env": env, "log": log}) + "\n").encode())
        self.reader = self.conn.makefile()
        self.pid = json.loads(self.reader.readline())["pid"]
        self.returncode: int | None = None

    def poll(self) -> int | None:
        if self.returncode is None and select.select([self.conn], [], [], 0)[0]:
            line = self.reader.readline()
            # No line: the server's handler died without a status.
            self.returncode = json.loads(line)["status"] if line else -1
        return self.returncode

    def kill(self) -> None:
        try:
            os.kill(self.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass

    def wait(self) -> int:
        while self.poll() is None:
            select.select([self.conn], [], [], 1.0)
        return self.returncode


def server_up(path: str) -> bool:
    """Whether the rank server at `path` answers (a stale socket file does not)."""
    if not path or not os.path.exists(path):
        return False
    try:
        with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as probe:
            probe.connect(path)
        return True
    except OSError:
        return False


def stop_server(path: str) -> int:
    """The fixture's cleanup: asks the rank server at `path` to leave."""
    if server_up(path):
        with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as conn:
            conn.connect(path)
            conn.sendall(b'{"stop": true}\n')
    return 0


def free_port() -> int:
    # The port is free when probed; rank 0's TCPStore binds it moments later.
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def main() -> int:
    if len(sys.argv) == 3 and sys.argv[1] == "--stop-server":
        return stop_server(sys.argv[2])
    parser = argparse.ArgumentParser()
    parser.add_argument("--cpp", required=True, help="the C++ rank binary (mixed_rank)")
    parser.add_argument("--py", default=str(HERE / "mixed_rank.py"), help="the Python rank script")
    parser.add_argument("--scenario", required=True)
    parser.add_argument("--ranks", required=True, help="comma-separated roles, rank 0 first: cpp or py")
    parser.add_argument("--deadline", type=float, default=90.0)
    parser.add_argument("--server", default="", help="the suite's rank server's socket (mixed_rank.py --serve), if up")
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
    ours = Path(args.py).resolve() == (HERE / "mixed_rank.py").resolve()
    # The suite's rank server (a CTest fixture), when it is up: no rank pays
    # for the imports.
    served = ours and server_up(args.server)
    forked = not served and ours and len(python_ranks) > 1
    for rank, role in enumerate(roles):
        if role == "py" and served:
            env = dict(base_env, RANK=str(rank), LOCAL_RANK=str(rank))
            procs.append((ServedRank(args.server, [args.py, args.scenario, *args.extra], env, logs[rank]), [rank]))
        elif role == "cpp" or not forked:
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
