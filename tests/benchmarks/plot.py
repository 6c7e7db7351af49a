#!/usr/bin/env python3
"""Draws the performance page's plots from the benchmarks' JSON results.

    plot.py [RESULTS_DIR] [--images docs/images] [--page docs/performance.md]

RESULTS_DIR (default tests/benchmarks/results) holds Google Benchmark JSON
files (--benchmark_out_format=json, as `./dev bench` writes them), each
context naming the machine (host_name), the date and the commit
(tensorclass_commit); python_tensordict.json is python_ops.py's, in the same
layout. bench_mixed, bench_rl and bench_archive are what `./dev bench-mixed`,
`./dev bench-rl` and `./dev bench-archive` keep; bench_device was transcribed
from a GPU run's tables (its context's tensorclass_source says so, and so
does its caption). Writes five PNGs into the images folder and rewrites each figure's
caption in the page, between `<!-- caption:NAME -->` and `<!-- /caption -->`,
with that provenance:

- ops.png: per op, TensorDict's and a generated tensorclass's time against
  the hand-written libtorch loop of the same run, and Python tensordict's
  time (TensorDict, @tensorclass) against theirs;
- vs_python.png: archive loads, the replay buffer (TorchRL), device moves
  and the wire, Python's time against this project's;
- device.png: host <-> GPU move throughput against one copy over the bus;
- io.png: memmap writes and h5 reads against the POSIX and HDF5 C APIs;
- wire.png: tensordict's wire protocol to a Python receiver, C++ and Python
  senders.
"""
import argparse
import json
import pathlib
import re

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

ROOT = pathlib.Path(__file__).resolve().parents[2]


def load(results, name):
    data = json.loads((results / f"{name}.json").read_text())
    times = {}
    for b in data["benchmarks"]:
        if b.get("run_type") == "aggregate" and b.get("aggregate_name") not in ("median", "min"):
            continue
        # Google Benchmark names an aggregate "<run>_median"; its run_name is the run.
        run = b.get("run_name", b["name"].rsplit("_" + b.get("aggregate_name", ""), 1)[0])
        # UseRealTime() names a case ".../real_time": its wall time is the figure.
        wall = "/real_time" in run or name in ("bench_device", "bench_mixed", "bench_rl", "bench_archive")
        # UseManualTime() and Iterations(n) name a case ".../iterations:n/manual_time".
        wall = wall or "/manual_time" in run
        run = re.sub(r"/(real_time|manual_time|iterations:\d+)", "", run)
        key = run if b.get("aggregate_name", "median") == "median" else run + ":" + b["aggregate_name"]
        scale = {"ns": 1e-9, "us": 1e-6, "ms": 1e-3, "s": 1.0}[b.get("time_unit", "ns")]
        times[key] = b
        b["seconds"] = (b["real_time"] if wall else b["cpu_time"]) * scale
    return data["context"], times


def provenance(*contexts):
    """One entry per machine, commit and date; the load averages of its runs."""
    runs = {}
    for c in contexts:
        text = f"{c.get('host_name', '?')}, commit {c.get('tensorclass_commit', '?')}, {c.get('date', '?')[:10]}"
        if c.get("tensorclass_source", "").startswith("transcribed"):
            text += " (figures transcribed from that run's tables)"
        loads = runs.setdefault(text, [])
        # Google Benchmark's context: the 1-minute load average as the program started.
        if c.get("load_avg") and f"{c['load_avg'][0]:.1f}" not in loads:
            loads.append(f"{c['load_avg'][0]:.1f}")
    return "; ".join(text + (f", load average {', '.join(loads)}" if loads else "") for text, loads in runs.items())


def save(fig, images, name, footer):
    fig.text(0.01, 0.005, footer.replace("; ", "\n"), fontsize=7, color="0.35", ha="left", va="bottom")
    fig.savefig(images / f"{name}.png", dpi=110, metadata={"Software": None})
    plt.close(fig)


def ops(results, images):
    ctx_td, td = load(results, "bench_tensordict")
    ctx_tc, tc = load(results, "bench_tensorclass")
    ctx_py, py = load(results, "python_tensordict")
    ops_ = [n.split("/")[0][3:] for n in td if n.endswith("/loop")]
    variants = (("TensorDict", td, "tensordict"), ("generated tensorclass", tc, "tensorclass"))
    fig, (left, right) = plt.subplots(1, 2, figsize=(11, 6.2), sharey=True)
    y = range(len(ops_))
    for i, (label, table, variant) in enumerate(variants):
        ratios = [table[f"BM_{o}/{variant}"]["seconds"] / table[f"BM_{o}/loop"]["seconds"] for o in ops_]
        left.barh([v + (i - 0.5) * 0.4 for v in y], ratios, height=0.4, label=label)
    left.axvline(1.0, color="k", lw=0.8)
    left.set_yticks(list(y), ops_)
    left.invert_yaxis()
    left.set_xlabel("time / hand-written libtorch loop (lower is faster)")
    left.set_title("Against the libtorch loop (same run)")
    left.legend(loc="upper center", bbox_to_anchor=(0.5, -0.1), fontsize=8, ncol=2)

    py_labels = (("TensorDict: Python TensorDict / ours", td, "tensordict"),
                 ("tensorclass: Python @tensorclass / ours", tc, "tensorclass"))
    for i, (label, table, variant) in enumerate(py_labels):
        ratios = [py[f"BM_{o}/{variant}"]["seconds"] / table[f"BM_{o}/{variant}"]["seconds"] for o in ops_]
        pos = [v + (i - 0.5) * 0.4 for v in y]
        right.barh(pos, ratios, height=0.4, label=label, color=("tab:green", "tab:olive")[i])
        for p, r in zip(pos, ratios):
            right.text(r, p, f" {r:.1f}x", va="center", fontsize=6)
    right.axvline(1.0, color="k", lw=0.8)
    right.set_xscale("log")
    right.set_xlabel("Python tensordict's time / this project's (higher is faster here)")
    right.set_title(f"Against Python tensordict {ctx_py.get('tensordict_version', '')}")
    right.legend(loc="upper center", bbox_to_anchor=(0.5, -0.1), fontsize=8, ncol=1)
    fig.tight_layout(rect=(0, 0.05, 1, 1))
    footer = provenance(ctx_td, ctx_tc, ctx_py)
    if ctx_py.get("torch_version"):
        footer += (f" (Python: torch {ctx_py['torch_version']}, tensordict {ctx_py.get('tensordict_version', '?')}, "
                   f"intra-op threads: {ctx_py.get('torch_num_threads', '?')}, as the C++ programs)")
    save(fig, images, "ops", footer)
    return footer


def vs_python(results, images):
    ctx_dev, dev = load(results, "bench_device")
    ctx_rl, rl = load(results, "bench_rl")
    ctx_ar, ar = load(results, "bench_archive")
    ctx_mx, mx = load(results, "bench_mixed")
    # Each case: (label, Python's time / this project's). bench_archive's
    # vs_tensordict and bench_rl's vs_torchrl counters are that ratio (the
    # median over the repetitions), timed by the program against the Python
    # side's figures of the same run.
    cases = [
        ("archive load, 1 MiB", ar["BM_ArchiveLoad/1MiB"]["vs_tensordict"]),
        ("archive load, 64 MiB", ar["BM_ArchiveLoad/64MiB"]["vs_tensordict"]),
        ("replay buffer extend (TorchRL)", rl["BM_extend/rl"]["vs_torchrl"]),
        ("replay buffer sample (TorchRL)", rl["BM_sample/rl"]["vs_torchrl"]),
    ]
    for size, label in (("small", "10 x [64, 8]"), ("medium", "100 x [256, 64]"), ("large", "16 x [1024, 1024]")):
        cases.append((f"to(cpu), {label}", dev[f"BM_to_cpu_{size}/python_tensordict"]["seconds"]
                      / dev[f"BM_to_cpu_{size}/tensordict"]["seconds"]))
        cases.append((f"to(cuda) pinned, {label}", dev[f"BM_to_cuda_pinned_nb_{size}/python_tensordict"]["seconds"]
                      / dev[f"BM_to_cuda_pinned_nb_{size}/tensordict"]["seconds"]))
    for mode in ("per_leaf", "consolidated"):
        cases.append((f"send to Python, {mode.replace('_', ' ')}",
                      mx[f"BM_python_to_python/{mode}"]["seconds"] / mx[f"BM_cpp_to_python/{mode}"]["seconds"]))
    speedups = [s for _, s in cases]
    fig, ax = plt.subplots(figsize=(7.5, 5))
    ax.barh(range(len(cases)), speedups, color="tab:green")
    ax.axvline(1.0, color="k", lw=0.8)
    ax.set_xscale("log")
    ax.set_yticks(range(len(cases)), [c[0] for c in cases], fontsize=8)
    ax.invert_yaxis()
    ax.set_xlabel("Python's time / this project's (higher is faster here)")
    ax.set_title("Archive loads, replay buffer, device moves, wire: against Python")
    for i, s in enumerate(speedups):
        ax.text(s, i, f" {s:.1f}x", va="center", fontsize=7)
    fig.tight_layout(rect=(0, 0.12, 1, 1))
    footer = provenance(ctx_ar, ctx_rl, ctx_dev, ctx_mx)
    save(fig, images, "vs_python", footer)
    return footer


def device(results, images):
    ctx, dev = load(results, "bench_device")
    sizes = (("small", "10 x [64, 8]\n20 KiB"), ("medium", "100 x [256, 64]\n6.5 MB"), ("large", "16 x [1024, 1024]\n64 MiB"))
    kinds = (("to_cuda_pageable", "to(cuda), pageable", "h2d"), ("to_cuda_pinned_nb", "to(cuda), pinned, non_blocking", "h2d"),
             ("to_cuda_consolidated", "to(cuda), consolidated", "h2d"), ("to_cpu", "to(cpu)", "d2h"))
    fig, axes = plt.subplots(1, 4, figsize=(13, 4.2), sharey=True)
    for ax, (kind, title, bus) in zip(axes, kinds):
        x = range(len(sizes))
        for j, (variant, label) in enumerate((("loop", "libtorch loop"), ("tensordict", "TensorDict.to"), ("python_tensordict", "Python tensordict"))):
            gbs = [dev[f"BM_{kind}_{s}/{variant}"]["bytes_per_second"] / 1e9 for s, _ in sizes]
            ax.bar([v + (j - 1) * 0.27 for v in x], gbs, width=0.27, label=label)
        busv = [dev[f"BM_bus_{bus}_{s}"]["bytes_per_second"] / 1e9 for s, _ in sizes]
        ax.plot(list(x), busv, "k_", markersize=30, mew=2, label="bus: one pinned copy")
        ax.set_xticks(list(x), [lab for _, lab in sizes], fontsize=7)
        ax.set_title(title, fontsize=9)
        ax.set_yscale("log")
    axes[0].set_ylabel("GB/s (log)")
    axes[0].legend(fontsize=7, loc="lower right")
    fig.tight_layout(rect=(0, 0.05, 1, 1))
    footer = provenance(ctx)
    save(fig, images, "device", footer)
    return footer


def io(results, images):
    ctx, t = load(results, "bench_io")
    rows = (("memmap write\n(fsynced)", "BM_memmap_write/loop", "BM_memmap_write/memmap", "write() + fsync"),
            ("memmap write\n(unsynced)", "BM_memmap_write_unsynced/loop", "BM_memmap_write_unsynced/memmap", "write()"),
            ("h5 read of\nevery leaf", "BM_h5_read_all/loop", "BM_h5_read_all/h5", "HDF5 C API"))
    fig, ax = plt.subplots(figsize=(7, 4))
    x = range(len(rows))
    ax.bar([v - 0.2 for v in x], [t[r[1]]["seconds"] * 1e3 for r in rows], width=0.4, label="the C API by hand (write(), HDF5)")
    ax.bar([v + 0.2 for v in x], [t[r[2]]["seconds"] * 1e3 for r in rows], width=0.4, label="this project (memmap, PersistentTensorDict)")
    for v, r in zip(x, rows):
        ax.text(v, max(t[r[1]]["seconds"], t[r[2]]["seconds"]) * 1e3, f"{t[r[2]]['seconds'] / t[r[1]]['seconds']:.2f}x", ha="center", va="bottom", fontsize=8)
    ax.set_xticks(list(x), [r[0] for r in rows], fontsize=8)
    ax.set_ylabel("ms, 16 leaves x 4 MiB (lower is faster)")
    ax.set_title("memmap and h5 against the C APIs")
    ax.legend(fontsize=8)
    fig.tight_layout(rect=(0, 0.05, 1, 1))
    footer = provenance(ctx)
    save(fig, images, "io", footer)
    return footer


# bench_mixed's payload: 100 float32 leaves of [64, 8] a transfer.
WIRE_BYTES = 100 * 64 * 8 * 4


def wire(results, images):
    ctx, t = load(results, "bench_mixed")
    senders = (("python_to_python", "Python tensordict"), ("cpp_to_python", "C++ tensordict::send"), ("loop_to_python", "C++ hand-written loop"))
    modes = (("per_leaf", "per leaf (100 messages)"), ("consolidated", "consolidated (one message)"))
    fig, ax = plt.subplots(figsize=(7, 4))
    x = range(len(modes))
    for j, (s, label) in enumerate(senders):
        mbs = [WIRE_BYTES / t[f"BM_{s}/{m}"]["seconds"] / 1e6 for m, _ in modes]
        ax.bar([v + (j - 1) * 0.27 for v in x], mbs, width=0.27, label=label)
    ax.set_xticks(list(x), [lab for _, lab in modes])
    ax.set_ylabel("MB/s to a Python receiver (median of the runs)")
    ax.set_title("tensordict's wire protocol: C++ and Python senders")
    ax.legend(fontsize=8)
    fig.tight_layout(rect=(0, 0.05, 1, 1))
    footer = provenance(ctx)
    save(fig, images, "wire", footer)
    return footer


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("results", nargs="?", default=ROOT / "tests/benchmarks/results", type=pathlib.Path)
    ap.add_argument("--images", default=ROOT / "docs/images", type=pathlib.Path)
    ap.add_argument("--page", default=ROOT / "docs/performance.md", type=pathlib.Path)
    a = ap.parse_args()
    a.images.mkdir(parents=True, exist_ok=True)
    plt.rcParams.update({"font.size": 9, "svg.hashsalt": "tensorclass"})
    figures = (("ops", ops), ("vs_python", vs_python), ("device", device), ("io", io), ("wire", wire))
    captions = {name: fn(a.results, a.images) for name, fn in figures}
    text = a.page.read_text()
    for name, footer in captions.items():
        pattern = re.compile(rf"(<!-- caption:{name} -->).*?(<!-- /caption -->)", re.S)
        if not pattern.search(text):
            raise SystemExit(f"{a.page}: no <!-- caption:{name} --> ... <!-- /caption --> markers")
        text = pattern.sub(lambda m: f"{m.group(1)}Measured on {footer}.{m.group(2)}", text)
    a.page.write_text(text)
    print("plots:", ", ".join(str(a.images / f"{n}.png") for n in captions))


if __name__ == "__main__":
    main()
