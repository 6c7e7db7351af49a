#!/usr/bin/env python3
"""Times Python tensordict on the ops bench_tensordict and bench_tensorclass time.

    python_ops.py OUT.json [--match bench_tensordict.json --match bench_tensorclass.json]
                  [--repetitions 5] [--min-time 0.1]

The same data as bench_common.h: ten float32 leaves of [64, 8] (batch [64]),
flat and spread over three levels (4 + 3 + 3), the same index operands (32
indices of a permutation, a [64] bool mask), drawn in the same order from
torch's default generator. That generator's draws differ between libtorch
versions (and the C++ programs' masks between programs): the mask compared
with a C++ program's variants selects as many rows as that program's did
(`index_mask_true` in its JSON's context), so that both copy as much. Cases are named as the C++ ones, `BM_<op>/<variant>`,
where the variant is the C++ variant this one is compared with:

- `tensordict`, `tensordict_nested`: `TensorDict`;
- `tensordict_memmap`: the flat one written with `memmap()` and loaded back
  (`TensorDict.load_memmap`), indexed;
- `tensorclass`, `tensorclass_nested`: `@tensorclass` classes of the same
  fields as bench.yaml's `Flat` and `Nested` -> `Mid` -> `Inner`.

Timing follows Google Benchmark's: the iteration count is grown until one run
lasts --min-time seconds, then --repetitions runs of that many iterations
each; the figure is the median over the repetitions of the calling thread's
CPU time per iteration (Google Benchmark's `cpu_time`; the wall time is kept
as `real_time`). The garbage collector is off while a run is timed, as
`timeit` does. torch's intra-op threads are set to what the C++ programs ran
with (`torch_num_threads` in the context of the first --match file), else
left at torch's default.

Writes Google Benchmark's JSON layout (context + `benchmarks`, one `median`
and one `min` aggregate per case), so report.py and plot.py read it as they
read the C++ programs' files.
"""
import argparse
import datetime
import gc
import json
import os
import platform
import statistics
import sys
import tempfile
import time

import tensordict
import torch
from tensordict import TensorDict, tensorclass

BATCH, FEATURE, LEAVES = 64, 8, 10


@tensorclass
class Flat:
    f0: torch.Tensor
    f1: torch.Tensor
    f2: torch.Tensor
    f3: torch.Tensor
    f4: torch.Tensor
    f5: torch.Tensor
    f6: torch.Tensor
    f7: torch.Tensor
    f8: torch.Tensor
    f9: torch.Tensor


@tensorclass
class Inner:
    c0: torch.Tensor
    c1: torch.Tensor
    c2: torch.Tensor


@tensorclass
class Mid:
    b0: torch.Tensor
    b1: torch.Tensor
    b2: torch.Tensor
    inner: Inner


@tensorclass
class Nested:
    a0: torch.Tensor
    a1: torch.Tensor
    a2: torch.Tensor
    a3: torch.Tensor
    mid: Mid


def make_leaves():
    return [torch.randn(BATCH, FEATURE) for _ in range(LEAVES)]


def flat_td(l):
    return TensorDict({f"f{i}": l[i] for i in range(LEAVES)}, batch_size=[l[0].shape[0]])


def nested_td(l):
    b = [l[0].shape[0]]
    inner = TensorDict({"c0": l[7], "c1": l[8], "c2": l[9]}, batch_size=b)
    mid = TensorDict({"b0": l[4], "b1": l[5], "b2": l[6], "inner": inner}, batch_size=b)
    return TensorDict({"a0": l[0], "a1": l[1], "a2": l[2], "a3": l[3], "mid": mid}, batch_size=b)


def flat_tc(l):
    return Flat(**{f"f{i}": l[i] for i in range(LEAVES)}, batch_size=[l[0].shape[0]])


def nested_tc(l):
    b = [l[0].shape[0]]
    inner = Inner(c0=l[7], c1=l[8], c2=l[9], batch_size=b)
    mid = Mid(b0=l[4], b1=l[5], b2=l[6], inner=inner, batch_size=b)
    return Nested(a0=l[0], a1=l[1], a2=l[2], a3=l[3], mid=mid, batch_size=b)


def variant_cases(make, a, b, many, idx):
    """The ops of bench_tensordict.cpp / bench_tensorclass.cpp's add_variant."""
    x, y = make(a), make(b)
    half = make(b)[: BATCH // 2]
    pair = [x, y]
    all_ = [make(m) for m in many]
    long_index, mask = idx

    def index_put_slice():
        x[: BATCH // 2] = half

    def construct():
        return make([torch.empty(BATCH, FEATURE) for _ in range(LEAVES)])

    return {
        "index_int": lambda: x[3],
        "index_slice": lambda: x[8:40],
        "index_long": lambda: x[long_index],
        "index_mask": lambda: x[mask],
        "index_put_slice": index_put_slice,
        "stack2": lambda: torch.stack(pair, 0),
        "stack64": lambda: torch.stack(all_, 0),
        "cat2": lambda: torch.cat(pair, 0),
        "to_float64": lambda: x.to(torch.float64),
        "clone": lambda: x.clone(),
        "apply_mul2": lambda: x.apply(lambda t: t * 2),
        "reshape": lambda: x.reshape(8, 8),
        "unbind0": lambda: x.unbind(0),
        "construct": construct,
    }


def memmap_cases(a, idx, tmp):
    path = os.path.join(tmp, "index_memmap")
    flat_td(a).memmap(path)
    x = TensorDict.load_memmap(path)
    long_index, mask = idx
    return {
        "index_int": lambda: x[3],
        "index_slice": lambda: x[8:40],
        "index_long": lambda: x[long_index],
        "index_mask": lambda: x[mask],
    }


def timed(fn, n):
    """(CPU seconds of this thread, wall seconds) of n calls of fn."""
    gc.disable()
    try:
        w0, c0 = time.perf_counter(), time.thread_time()
        for _ in range(n):
            fn()
        c1, w1 = time.thread_time(), time.perf_counter()
    finally:
        gc.enable()
    return c1 - c0, w1 - w0


def iterations(fn, min_time):
    """Grows the count as Google Benchmark does until a run lasts min_time."""
    n = 1
    while True:
        cpu, _ = timed(fn, n)
        if cpu >= min_time or n >= 10**9:
            return n
        # Aim 40% past the target, at most 10x more at a time.
        n = max(n + 1, int(min(n * 10, n * 1.4 * min_time / max(cpu, 1e-9))))


def aggregate(name, n, runs, stat):
    return {
        "name": f"{name}_{stat}",
        "run_name": name,
        "run_type": "aggregate",
        "aggregate_name": stat,
        "repetitions": len(runs),
        "iterations": n,
        "cpu_time": (statistics.median if stat == "median" else min)(c for c, _ in runs) / n * 1e9,
        "real_time": (statistics.median if stat == "median" else min)(w for _, w in runs) / n * 1e9,
        "time_unit": "ns",
    }


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("out")
    ap.add_argument("--match", action="append", default=[], metavar="BENCH_X.json",
                    help="a C++ program's JSON (bench_tensordict, bench_tensorclass): its torch_num_threads and "
                         "index_mask_true for the variants named after X")
    ap.add_argument("--repetitions", type=int, default=5)
    ap.add_argument("--min-time", type=float, default=0.1)
    ap.add_argument("--filter", default="", help="run only the cases whose name contains this")
    a = ap.parse_args()

    cpp = {}  # "tensordict" -> bench_tensordict.json's context, ...
    for path in a.match:
        with open(path) as f:
            cpp[os.path.basename(path).removesuffix(".json").removeprefix("bench_")] = json.load(f)["context"]
    threads = [c["torch_num_threads"] for c in cpp.values() if "torch_num_threads" in c]
    if threads:
        torch.set_num_threads(int(threads[0]))

    # bench_common.h's setup(): a, b, the 64 slices of stack64, then the index
    # operands, from the default generator in that order.
    a_leaves, b_leaves = make_leaves(), make_leaves()
    many = [make_leaves() for _ in range(64)]
    long_index, mask = torch.randperm(BATCH)[: BATCH // 2], torch.rand(BATCH) > 0.5
    masks = {}
    for program in ("tensordict", "tensorclass"):
        rows = int(cpp.get(program, {}).get("index_mask_true", mask.sum()))
        masks[program] = mask
        if rows != int(mask.sum()):
            masks[program] = torch.zeros(BATCH, dtype=torch.bool)
            masks[program][torch.randperm(BATCH)[:rows]] = True
    idx = {p: (long_index, m) for p, m in masks.items()}

    benchmarks = []
    with tempfile.TemporaryDirectory(prefix="tensorclass-bench-") as tmp:
        variants = [
            ("tensordict", variant_cases(flat_td, a_leaves, b_leaves, many, idx["tensordict"])),
            ("tensordict_nested", variant_cases(nested_td, a_leaves, b_leaves, many, idx["tensordict"])),
            ("tensordict_memmap", memmap_cases(a_leaves, idx["tensordict"], tmp)),
            ("tensorclass", variant_cases(flat_tc, a_leaves, b_leaves, many, idx["tensorclass"])),
            ("tensorclass_nested", variant_cases(nested_tc, a_leaves, b_leaves, many, idx["tensorclass"])),
        ]
        ops = list(variants[0][1])
        # Grouped by op, as bench_common.h registers them.
        for op in ops:
            for variant, cases in variants:
                if op not in cases:
                    continue
                name = f"BM_{op}/{variant}"
                if a.filter not in name:
                    continue
                fn = cases[op]
                fn()  # warm up (first-call caches, lazy imports)
                n = iterations(fn, a.min_time)
                gc.collect()
                runs = [timed(fn, n) for _ in range(a.repetitions)]
                med = aggregate(name, n, runs, "median")
                benchmarks += [med, aggregate(name, n, runs, "min")]
                print(f"{name:<36} {med['cpu_time'] / 1e3:10.2f} us  ({n} iterations x {a.repetitions})", flush=True)

    context = {
        "date": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
        "host_name": platform.node(),
        "num_cpus": os.cpu_count(),
        "library_build_type": "python",
        "python_version": platform.python_version(),
        "torch_version": torch.__version__,
        "tensordict_version": tensordict.__version__,
        "torch_num_threads": torch.get_num_threads(),
        "index_mask_true": {p: int(m.sum()) for p, m in masks.items()},
        "timer": "median over the repetitions of time.thread_time() per iteration (cpu_time); "
                 "time.perf_counter() as real_time; gc off while timed",
        "repetitions": a.repetitions,
        "min_time": a.min_time,
    }
    with open(a.out, "w") as f:
        json.dump({"context": context, "benchmarks": benchmarks}, f, indent=1)
    print("wrote", a.out, file=sys.stderr)


if __name__ == "__main__":
    main()
