#!/usr/bin/env python3
"""tensordict's protocol between a C++ sender and a Python receiver, against Python to Python.

``bench_mixed.py --cpp <build>/tests/distributed/mixed/mixed_rank [--iterations N]``

Runs the "bench" scenario of tests/distributed/mixed (100 float32 leaves of
[64, 8], ten nested tensordicts of ten) in three line-ups, each a sender
(rank 0) and a receiver (rank 1) meeting through env:// on loopback:
C++ -> Python, Python -> Python (tensordict 0.15.3 on both ends, the
reference) and C++ -> C++; per leaf (100 messages) and consolidated (one
message of the storage). The receiver times its loop of recv calls. Prints
the time per transfer and the ratio to Python -> Python for each mode.
"""

from __future__ import annotations

import argparse
import re
import subprocess
import sys
from pathlib import Path

RUN_MIXED = Path(__file__).resolve().parents[1] / "distributed" / "mixed" / "run_mixed.py"


def measure(cpp: str, ranks: str, mode: str, iterations: int) -> float:
    out = subprocess.run(
        [sys.executable, str(RUN_MIXED), "--cpp", cpp, "--scenario", "bench", "--ranks", ranks, "--deadline", "300",
         "--", mode, str(iterations)],
        capture_output=True, text=True,
    )
    found = re.search(r"BENCH per_iteration_us=([0-9.]+)", out.stdout)
    if out.returncode != 0 or not found:
        raise SystemExit(f"bench {ranks} {mode} failed:\n{out.stdout}{out.stderr}")
    return float(found.group(1))


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--cpp", required=True, help="the mixed_rank binary")
    parser.add_argument("--iterations", type=int, default=200)
    parser.add_argument("--repeats", type=int, default=3, help="runs per line-up; the best is kept")
    args = parser.parse_args()
    print(f"{'mode':<13} {'sender -> receiver':<20} {'per transfer':>14} {'vs Python -> Python':>20}")
    for mode in ("per_leaf", "consolidated"):
        best = {}
        for ranks in ("py,py", "cpp,py", "cpp,cpp"):
            best[ranks] = min(measure(args.cpp, ranks, mode, args.iterations) for _ in range(args.repeats))
        for ranks, label in (("py,py", "Python -> Python"), ("cpp,py", "C++ -> Python"), ("cpp,cpp", "C++ -> C++")):
            ratio = best[ranks] / best["py,py"]
            print(f"{mode:<13} {label:<20} {best[ranks]:>11.1f} us {ratio:>19.2f}x")
    return 0


if __name__ == "__main__":
    sys.exit(main())
