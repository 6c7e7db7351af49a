#!/usr/bin/env python3
"""Generator and build-cost timings, written as Google Benchmark JSON.

    timings.py BUILD_DIR OUT.json [--repetitions N]

- BM_generator_yaml20: tensorclass-gen on a YAML file of 20 tensorclasses.
- BM_generator_header: tensorclass-gen on an annotated header
  (tests/generator/schemas/agent_header.h).
- BM_build/aten, BM_build/generated_header, BM_build/generated_header_used:
  compiling (no precompiled header) a unit that includes only <ATen/ATen.h>,
  one that includes one generated header (bench.tc.h), and one that also
  instantiates a few ops of it; the flags are bench_tensorclass's own, from
  compile_commands.json.
- BM_user_compile/aten, /tensordict, /typed: a user's unit making the same
  five calls (index, index, stack, to(kDouble), memmap) on plain tensors with
  <ATen/ATen.h> alone, on a TensorDict, and on tc::rl::Transition generated
  from schemas/rl.yaml (tests/benchmarks/compile/), with the same flags;
  interleaved, at least 5 runs each, each with its ratio to the ATen unit.
  BM_user_compile/typed_engine: the generated rl.tc.cpp, the typed engine of
  rl.yaml's classes, which a project compiles once, whatever its number of
  files that use them.
Times are medians of N runs (stdlib only): real_time is the wall clock,
cpu_time the child's user + system time, which report.py reads and the
ratios use.
"""
import json
import os
import shlex
import statistics
import resource
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))


def timed(cmd, cwd=None):
    """(wall, CPU) seconds of running `cmd`: the CPU time is the child's user +
    system time, which the machine's load leaves alone (on this shared 2-core
    machine a compile of 4.6 s of CPU took 10 s of wall time under load 4)."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    subprocess.run(cmd, cwd=cwd, check=True, stdout=subprocess.DEVNULL)
    wall = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return wall, (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)


def yaml20(path):
    lines = ["namespace: gen20", "tensorclasses:"]
    for i in range(20):
        lines += [f"  C{i}:", f"    doc: Class {i}.", "    fields:"]
        for j in range(6):
            lines.append(f"      t{j}: {{dtype: float32, shape: [..., {j + 1}, H]}}")
        lines.append("      name: {type: string, default: x}")
        if i:
            lines.append(f"      prev: {{type: C{i - 1}}}")
    with open(path, "w") as f:
        f.write("\n".join(lines) + "\n")


def compile_command(build_dir):
    with open(os.path.join(build_dir, "compile_commands.json")) as f:
        for entry in json.load(f):
            if entry["file"].endswith("bench_tensorclass.cpp"):
                args = shlex.split(entry["command"])
                out, skip = [], False
                for a in args:
                    if skip:
                        skip = False
                        continue
                    if a in ("-include", "-o", "-c"):  # PCH, output, source: ours instead
                        skip = True
                        continue
                    if a == "-Winvalid-pch" or a.endswith("ccache"):
                        continue
                    out.append(a)
                return out, entry["directory"]
    sys.exit("timings.py: bench_tensorclass.cpp not in compile_commands.json")


UNITS = {
    "aten": "#include <ATen/ATen.h>\nat::Tensor f(const at::Tensor& t) { return t.add(1); }\n",
    "generated_header": '#include "bench.tc.h"\nat::Tensor f(const at::Tensor& t) { return t.add(1); }\n',
    "generated_header_used": '#include "bench.tc.h"\n'
    "bench::Flat f(const bench::Flat& x) { return bench::Flat::stack({x.index({0}), x.to(at::kDouble)}); }\n",
}


def result(name, runs):
    """Medians of (wall, CPU) runs, as Google Benchmark's real_time and cpu_time."""
    return {"name": name, "run_type": "aggregate", "aggregate_name": "median",
            "real_time": statistics.median(w for w, _ in runs) * 1e3,
            "cpu_time": statistics.median(c for _, c in runs) * 1e3, "time_unit": "ms"}


def user_compiles(gen, cmd, cwd, tmp, reps):
    """The three user units, compiled in turn (a, b, c, a, b, c, ...) so that
    the machine's load falls on each alike; medians and ratios to ATen's."""
    subprocess.run([gen, os.path.join(ROOT, "schemas", "rl.yaml"), "-o", tmp], check=True, stdout=subprocess.DEVNULL)
    units = ("aten", "tensordict", "typed", "typed_engine")
    sources = {u: os.path.join(HERE, "compile", f"user_{u}.cpp") for u in units[:3]}
    sources["typed_engine"] = os.path.join(tmp, "rl.tc.cpp")  # compiled once per project, not per user file
    seconds = {u: [] for u in units}
    for _ in range(reps):
        for u in units:
            seconds[u].append(timed(cmd + ["-I", tmp, "-o", os.path.join(tmp, f"user_{u}.o"), "-c", sources[u]], cwd))
    out = [result(f"BM_user_compile/{u}", seconds[u]) for u in units]
    for entry in out:
        entry["ratio_to_aten"] = entry["cpu_time"] / out[0]["cpu_time"]
    return out


def main():
    build_dir, out = sys.argv[1], sys.argv[2]
    reps = int(sys.argv[4]) if len(sys.argv) > 4 and sys.argv[3] == "--repetitions" else 3
    gen = os.path.join(build_dir, "generator", "tensorclass-gen")
    results = []
    with tempfile.TemporaryDirectory() as tmp:
        y = os.path.join(tmp, "gen20.yaml")
        yaml20(y)
        results.append(result("BM_generator_yaml20", [timed([gen, y, "-o", tmp]) for _ in range(reps)]))
        header = os.path.join(ROOT, "tests", "generator", "schemas", "agent_header.h")
        results.append(result("BM_generator_header", [timed([gen, header, "-o", tmp]) for _ in range(reps)]))
        cmd, cwd = compile_command(build_dir)
        for name, text in UNITS.items():
            src = os.path.join(tmp, name + ".cpp")
            with open(src, "w") as f:
                f.write(text)
            obj = os.path.join(tmp, name + ".o")
            results.append(result(f"BM_build/{name}", [timed(cmd + ["-o", obj, "-c", src], cwd) for _ in range(reps)]))
        results += user_compiles(gen, cmd, cwd, tmp, max(reps, 5))
    with open(out, "w") as f:
        json.dump({"context": {"program": "timings.py"}, "benchmarks": results}, f, indent=1)


if __name__ == "__main__":
    main()
