#!/usr/bin/env python3
"""Instructions per iteration of each case of a Google Benchmark program.

On a shared machine time ratios move by 10% or more from run to run; the
number of instructions an op executes does not. This runs PROGRAM under
valgrind's callgrind twice, with every case fixed at N1 and at N2 iterations
(TENSORCLASS_BENCH_ITERATIONS, bench_common.h). bench_common.h counts only
inside each case's loop and dumps each case on its own, so a case costs
(count at N2 - count at N1) / (N2 - N1) instructions per iteration: what
runs once (first-call set-up in libtorch, the case's entry) cancels out.
It prints that per case with the ratio to the op's `loop` case; given two
builds (before, after a change), it compares them case by case.

  instructions.py [--iterations N1 N2] [--filter REGEX] [--save OUT.json] PROGRAM [PROGRAM_AFTER]

A PROGRAM ending in .json is what --save wrote for a run before.

Instruction counts leave out what time also measures (cache misses, memory
bandwidth, page faults); they show the work our code adds around libtorch's,
which is what a change to the runtime can make slower.
"""
import argparse
import glob
import json
import os
import re
import subprocess
import sys
import tempfile


def dumps(program, iterations, filter_):
    """{case name: instructions in its loop} for one run at `iterations`."""
    with tempfile.TemporaryDirectory() as tmp:
        out = os.path.join(tmp, "cg.out")
        env = dict(os.environ, TENSORCLASS_BENCH_ITERATIONS=str(iterations), OMP_NUM_THREADS="1")
        cmd = ["valgrind", "--tool=callgrind", f"--callgrind-out-file={out}", "--collect-atstart=no", program,
               f"--benchmark_filter={filter_}"]
        run = subprocess.run(cmd, env=env, capture_output=True, text=True)
        if run.returncode != 0:
            sys.exit(f"{program} failed under callgrind:\n{run.stderr[-3000:]}")
        counts = {}
        # Numbered in the order the cases ran.
        for path in sorted(glob.glob(out + ".*"), key=lambda p: int(p.rsplit(".", 1)[1])):
            with open(path) as f:
                text = f.read()
            name = re.search(r"^desc: Trigger: Client Request: (\S+)", text, re.M)
            total = re.search(r"^(?:summary|totals): (\d+)", text, re.M)
            if name and total:
                counts[name.group(1)] = int(total.group(1))
        if not counts:
            sys.exit(f"{program}: no case was counted (built without <valgrind/callgrind.h>?)")
        return counts


def per_iteration(program, n1, n2, filter_):
    a, b = dumps(program, n1, filter_), dumps(program, n2, filter_)
    return {name: (b[name] - a[name]) / (n2 - n1) for name in b if name in a}


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--iterations", type=int, nargs=2, default=[20, 120], metavar=("N1", "N2"))
    parser.add_argument("--filter", default=".")
    parser.add_argument("--save", help="write the last program's counts here (JSON)")
    parser.add_argument("programs", nargs="+")
    args = parser.parse_args()
    if len(args.programs) > 2:
        parser.error("one program, or two to compare")
    runs = [json.load(open(p)) if p.endswith(".json") else per_iteration(p, *args.iterations, args.filter)
            for p in args.programs]
    if args.save:
        with open(args.save, "w") as f:
            json.dump(runs[-1], f, indent=1)

    def ratio(run, name):
        loop = name.split("/", 1)[0] + "/loop"
        return f"{run[name] / run[loop]:.3f}" if loop in run else "-"

    names = [n for n in runs[-1] if all(n in r for r in runs)]
    if len(runs) == 1:
        print("| case | instructions / iteration | ratio to loop |\n|---|---|---|")
        for n in names:
            print(f"| {n} | {runs[0][n]:,.0f} | {ratio(runs[0], n)} |")
    else:
        print("| case | before | after | after / before | ratio to loop, before | after |\n|---|---|---|---|---|---|")
        for n in names:
            before, after = runs[0][n], runs[1][n]
            print(f"| {n} | {before:,.0f} | {after:,.0f} | {after / before:.3f} | {ratio(runs[0], n)} | "
                  f"{ratio(runs[1], n)} |")


if __name__ == "__main__":
    main()
