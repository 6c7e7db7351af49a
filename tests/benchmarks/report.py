#!/usr/bin/env python3
"""Turns Google Benchmark JSON output into docs/benchmarks.md's table.

    report.py docs/benchmarks.md RESULT.json... [python_tensordict.json]

Each JSON file is one program's run (--benchmark_format=json, with
--benchmark_repetitions: medians are used). Cases are named BM_<op>/<variant>;
`loop` is the hand-written baseline of the same run, and ratios are
variant / loop. The table replaces what docs/benchmarks.md holds between the
`results:begin` and `results:end` markers, headed by the machine and date.
A file named python_*.json (python_ops.py's) is tabled against the C++ cases
of the same names in the files before it.
"""
import datetime
import json
import os
import platform
import re
import subprocess
import sys

# (program variant, op) -> ratio target; "*" matches every op.
RATIO_TARGETS = {
    ("tensordict", "*"): 1.30,
    ("tensorclass", "*"): 1.10,
    ("*", "index_mask"): 0.70,  # against the naive t.index({mask}) loop
    ("*", "memmap_write"): 1 / 0.70,  # >= 70% of write()'s throughput
    ("*", "memmap_write_unsynced"): 1 / 0.70,
    ("*", "h5_read_all"): 1 / 0.80,  # >= 80% of the HDF5 C API's throughput
}
# A memmap-loaded variant (`X_memmap`) against the in-memory one (`X`).
MEMMAP_VS_MEMORY = 1.10
# Absolute targets (ns) and ratio targets between two cases of one program.
ABS_TARGETS_NS = {
    "get_nested5": 150, "set_existing": 250, "keys_nested_100": 5000,
    "generator_yaml20": 200e6, "generator_header": 2e9,
}
PAIR_TARGETS = {
    ("build", "generated_header", "aten"): 1.30,
    # A user's unit making five calls on a generated type / a TensorDict,
    # against the same calls on tensors with <ATen/ATen.h> alone.
    ("user_compile", "typed", "aten"): 1.25,
    ("user_compile", "tensordict", "aten"): 1.15,
    ("memmap_load", "1gib", "1mib"): 2.0,  # zero copy: size does not matter
}
UNIT_NS = {"ns": 1, "us": 1e3, "ms": 1e6, "s": 1e9}


def medians(path):
    with open(path) as f:
        data = json.load(f)
    out, plain = {}, {}
    for b in data["benchmarks"]:
        # CPU time: on a shared machine wall time mostly measures the neighbours;
        # timings.py writes the child processes' CPU time as cpu_time.
        # Cases timed by the wall clock (UseRealTime, e.g. waiting on fsync)
        # carry a /real_time suffix.
        name = b["name"]
        real = "/real_time" in name
        t = (b["real_time"] if real else b.get("cpu_time", b["real_time"])) * UNIT_NS[b.get("time_unit", "ns")]
        if b.get("run_type") == "aggregate":
            if b.get("aggregate_name") == "median":
                run = b["run_name"] if "run_name" in b else name.rsplit("_median", 1)[0]
                out[run.replace("/real_time", "")] = t
        else:
            plain.setdefault(name.replace("/real_time", ""), []).append(t)
    for name, ts in plain.items():
        out.setdefault(name, sorted(ts)[len(ts) // 2])
    return out


def fmt(ns):
    for unit, scale in (("s", 1e9), ("ms", 1e6), ("µs", 1e3)):
        if ns >= scale * 0.9995:  # what rounds to 1000 of the unit below
            return f"{ns / scale:.3g} {unit}"
    return f"{ns:.3g} ns"


def ratio_target(variant, op):
    base = variant.split("_")[0]
    for key in ((base, op), ("*", op), (base, "*")):
        if key in RATIO_TARGETS:
            return RATIO_TARGETS[key]
    return None


def machine():
    model = "unknown CPU"
    try:
        with open("/proc/cpuinfo") as f:
            m = re.search(r"model name\s*:\s*(.*)", f.read())
            model = m.group(1).strip() if m else model
    except OSError:
        pass
    return f"{model}, {os.cpu_count()} cores (nproc {subprocess.run(['nproc'], capture_output=True, text=True).stdout.strip()}), {platform.system()} {platform.release()}"


def table(path):
    times = medians(path)
    groups = {}
    for name, t in times.items():
        name = name[3:] if name.startswith("BM_") else name
        op, _, variant = name.partition("/")
        groups.setdefault(op, {})[variant] = t
    prog = os.path.splitext(os.path.basename(path))[0]
    rows, missed = [], []
    ratio_rows = any("loop" in g for g in groups.values())
    if ratio_rows:
        variants = sorted({v for g in groups.values() for v in g if v != "loop"})
        head = ["op", "loop"] + [x for v in variants for x in (v, "ratio")] + ["target", "met?"]
        rows.append(head)
        for op, g in groups.items():
            loop = g.get("loop")
            row, ok, target = [op, fmt(loop) if loop else "—"], True, None
            for v in variants:
                t = g.get(v)
                r = t / loop if t and loop else None
                row += [fmt(t) if t else "—", f"{r:.2f}×" if r else "—"]
                tgt = ratio_target(v, op)
                if tgt and r:
                    target = tgt
                    if r > tgt:
                        ok = False
                        missed.append(f"{prog}: {op}/{v} {r:.2f}× > {tgt:.2f}×")
            row += [f"≤ {target:.2f}×" if target else "—", ("yes" if ok else "**no**") if target else "—"]
            rows.append(row)
        mapped = []
        for op, g in groups.items():
            for v, t in g.items():
                if v.endswith("_memmap") and v[: -len("_memmap")] in g:
                    r = t / g[v[: -len("_memmap")]]
                    mapped.append(f"{op} {r:.2f}×")
                    if r > MEMMAP_VS_MEMORY:
                        missed.append(f"{prog}: {op}/{v} {r:.2f}× the in-memory {v[: -len('_memmap')]}")
    else:
        rows.append(["case", "time", "target", "met?"])
        for op, g in groups.items():
            for v, t in g.items():
                case = f"{op}/{v}" if v else op
                tgt = ABS_TARGETS_NS.get(op)
                pair = next(((k, r) for k, r in PAIR_TARGETS.items() if k[0] == op and k[1] == v), None)
                if pair and pair[0][2] in g:
                    r = t / g[pair[0][2]]
                    ok = r <= pair[1]
                    rows.append([case, f"{fmt(t)} ({r:.2f}× {op}/{pair[0][2]})", f"≤ {pair[1]:.2f}×", "yes" if ok else "**no**"])
                    if not ok:
                        missed.append(f"{prog}: {case} {r:.2f}× > {pair[1]:.2f}×")
                elif tgt:
                    ok = t <= tgt
                    rows.append([case, fmt(t), f"≤ {fmt(tgt)}", "yes" if ok else "**no**"])
                    if not ok:
                        missed.append(f"{prog}: {case} {fmt(t)} > {fmt(tgt)}")
                else:
                    rows.append([case, fmt(t), "—", "—"])
    lines = [f"### {prog}", ""]
    lines.append("| " + " | ".join(rows[0]) + " |")
    lines.append("|" + "---|" * len(rows[0]))
    lines += ["| " + " | ".join(r) + " |" for r in rows[1:]]
    if ratio_rows and mapped:
        lines += ["", f"Memmap-loaded vs in-memory (target ≤ {MEMMAP_VS_MEMORY:.2f}×): " + ", ".join(mapped) + "."]
    return lines, missed


def python_table(path, ours):
    """python_ops.py's file: each case against the C++ case of the same name."""
    with open(path) as f:
        ctx = json.load(f)["context"]
    times = medians(path)
    ops, variants = {}, []
    for name, t in times.items():
        op, _, variant = name[3:].partition("/")
        ops.setdefault(op, {})[variant] = t
        if variant not in variants:
            variants.append(variant)
    lines = [f"### {os.path.splitext(os.path.basename(path))[0]}", "",
             f"Python tensordict {ctx.get('tensordict_version', '?')} (torch {ctx.get('torch_version', '?')}, "
             f"intra-op threads: {ctx.get('torch_num_threads', '?')}, as the C++ programs) on the same ops and data, "
             "timed by `python_ops.py` (CPU time of the calling thread, medians); each cell: this project's time / "
             "Python's, and Python's time over ours (higher: faster here). Flat and nested variants against "
             "`TensorDict`, `tensordict_memmap` against a `load_memmap`-ed `TensorDict`, tensorclass variants against "
             "`@tensorclass` classes of the same fields.", ""]
    lines.append("| op | " + " | ".join(variants) + " |")
    lines.append("|" + "---|" * (len(variants) + 1))
    for op, g in ops.items():
        cells = []
        for v in variants:
            py, cpp = g.get(v), ours.get(f"BM_{op}/{v}")
            cells.append(f"{fmt(cpp)} / {fmt(py)} ({py / cpp:.1f}×)" if py and cpp else "—")
        lines.append(f"| {op} | " + " | ".join(cells) + " |")
    return lines


def main():
    readme, paths = sys.argv[1], sys.argv[2:]
    out = [f"Machine: {machine()}. Date: {datetime.date.today().isoformat()}. "
           "Medians of the repetitions of CPU time (for generator and build timings, the child process's user + system time); ratios are against `loop` in the same run.", ""]
    missed, ours = [], {}
    for p in paths:
        if os.path.basename(p).startswith("python_"):
            out += python_table(p, ours) + [""]
            continue
        ours.update(medians(p))
        lines, m = table(p)
        out += lines + [""]
        missed += m
    out.append("Missed targets: " + ("none." if not missed else "; ".join(missed) + "."))
    with open(readme) as f:
        text = f.read()
    begin, end = "<!-- results:begin -->", "<!-- results:end -->"
    if begin not in text:
        text += f"\n{begin}\n{end}\n"
    head, rest = text.split(begin, 1)
    tail = rest.split(end, 1)[1]
    with open(readme, "w") as f:
        f.write(head + begin + "\n" + "\n".join(out) + "\n" + end + tail)
    print("\n".join(out))


if __name__ == "__main__":
    main()
