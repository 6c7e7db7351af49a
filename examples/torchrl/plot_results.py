#!/usr/bin/env python3
"""Plots the TorchRL loop's runs from their logs (matplotlib).

    python plot_results.py [results/]

Reads cpp_actors_seed*.csv and torchrl_collector_seed*.csv (learner.py
--log: one row per episode: frames, wall_s, return, updates) and writes
returns_vs_frames.png and returns_vs_wall_time.png: each episode's return
(dots) and the mean of the last 10 (line, one style per seed) for both
collectors, with the -250 target. With bench.json (bench_collectors.py --out), also
collector_fps.png.
"""

import csv
import json
import sys
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

RESULTS = Path(sys.argv[1] if len(sys.argv) > 1 else Path(__file__).resolve().parent / "results")
RUNS = [("cpp_actors", "C++ actors", "tab:blue"), ("torchrl_collector", "TorchRL MultiSyncCollector", "tab:orange")]
STYLES = ["-", "--", ":", "-."]


def load(path):
    with open(path) as f:
        rows = list(csv.DictReader(f))
    frames = [int(r["frames"]) for r in rows]
    wall = [float(r["wall_s"]) for r in rows]
    ret = [float(r["return"]) for r in rows]
    mean = [sum(ret[max(0, i - 9): i + 1]) / len(ret[max(0, i - 9): i + 1]) for i in range(len(ret))]
    return frames, wall, ret, mean


for column, xlabel, name in ((0, "frames collected", "returns_vs_frames.png"),
                             (1, "wall time (s)", "returns_vs_wall_time.png")):
    fig, ax = plt.subplots(figsize=(7, 4.2))
    for stem, label, color in RUNS:
        for i, path in enumerate(sorted(RESULTS.glob(f"{stem}_seed*.csv"))):
            data = load(path)
            x = data[column]
            seed = path.stem.rsplit("seed", 1)[1]
            ax.scatter(x, data[2], s=6, alpha=0.3, color=color)
            ax.plot(x, data[3], color=color, linestyle=STYLES[i % len(STYLES)],
                    label=f"{label}, seed {seed}: mean of last 10")
    ax.axhline(-250, color="gray", linestyle="--", linewidth=1, label="target -250")
    ax.set_xlabel(xlabel)
    ax.set_ylabel("episode return")
    ax.set_title("SAC on Pendulum-v1 (2 collecting processes)")
    ax.legend(loc="lower right", fontsize=8)
    ax.grid(alpha=0.3)
    fig.tight_layout()
    fig.savefig(RESULTS / name, dpi=110)
    print("wrote", RESULTS / name)

bench = RESULTS / "bench.json"
if bench.exists():
    rows = json.loads(bench.read_text())
    fig, ax = plt.subplots(figsize=(7, 4))
    labels = [f"{r['processes']} proc x {r['envs_per_process']} env" for r in rows]
    xs = range(len(rows))
    ax.bar([x - 0.2 for x in xs], [r["cpp"]["fps"] for r in rows], width=0.4, label="C++ actors", color="tab:blue")
    ax.bar([x + 0.2 for x in xs], [r["torchrl"]["fps"] for r in rows], width=0.4, label="TorchRL (Collector; MultiSyncCollector for 2 processes)",
           color="tab:orange")
    for x, r in zip(xs, rows):
        ax.annotate(f"{r['ratio']:.0f}x", (x - 0.2, r["cpp"]["fps"]), ha="center", va="bottom", fontsize=9)
    ax.set_xticks(list(xs), labels)
    ax.set_yscale("log")
    ax.set_ylabel("frames per second (log)")
    ax.set_title("Pendulum-v1 collection, same policy network")
    ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(RESULTS / "collector_fps.png", dpi=110)
    print("wrote", RESULTS / "collector_fps.png")
