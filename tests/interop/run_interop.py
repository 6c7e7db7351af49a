#!/usr/bin/env python3
"""Interop suite between this project's runtime and the real Python tensordict.

Both directions, exact values:

- py->cpp: Python tensordict writes each case (memmap trees, h5 files);
  ``interop_tool dump`` loads it with the C++ runtime and prints its canonical
  JSON, which must equal the canonical JSON computed here from the object
  Python wrote (for h5, which keeps no batch sizes or names: from what Python
  itself reads back).
- cpp->py: ``interop_tool write`` writes the C++ cases and a manifest with
  their canonical JSON; Python loads each one (``TensorDict.load_memmap``,
  ``PersistentTensorDict.from_h5``) and its canonical JSON must equal the
  manifest's.

The canonical form (also in canonical.h) holds, for every entry, its kind,
dtype, shape and the exact bytes of its C-contiguous data as hex; batch sizes,
dim names, non-tensor values, lazy-stack members and tensorclass names.

Plain Python: ``python run_interop.py --tool <interop_tool> --work <dir>``.
Prints one PASS/FAIL/XFAIL line per case, and ends with ``N passed, M failed``.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import shutil
import subprocess
import sys
import traceback
import warnings
from pathlib import Path

import h5py
import tensordict
import torch
from tensordict import (
    LazyStackedTensorDict,
    NonTensorData,
    NonTensorStack,
    PersistentTensorDict,
    TensorDict,
    TensorDictBase,
    TypedTensorDict,
    is_tensorclass,
    lazy_stack,
    tensorclass,
)

# h5 strings are read as bytes, with a FutureWarning; canonical() decodes them.
warnings.filterwarnings("ignore", category=FutureWarning)
warnings.filterwarnings("ignore", category=UserWarning)

# The C++ key that names a tensorclass loaded without a registered loader
# (tensordict::kLoadedClassKey).
LOADED_CLASS_KEY = "__class__"


# nocast: tensordict 0.14 would otherwise make `step` a tensor (0.15 keeps it).
@tensorclass(nocast=True)
class Obs:
    """The tensorclass of the "tensorclass" cases (interop_tool writes it as __main__.Obs)."""

    pixels: torch.Tensor
    reward: torch.Tensor
    label: str
    step: int


# ---- canonical JSON -------------------------------------------------------------


def _hex(t: torch.Tensor) -> str:
    t = t.detach().cpu().resolve_conj().resolve_neg().contiguous().reshape(-1)
    return t.view(torch.uint8).numpy().tobytes().hex()


def _plain(value):
    """A non-tensor value as JSON holds it (h5 strings come back as bytes)."""
    if isinstance(value, bytes):
        return value.decode("utf-8")
    if isinstance(value, (list, tuple)):
        return [_plain(v) for v in value]
    if isinstance(value, dict):
        return {k: _plain(v) for k, v in value.items()}
    if hasattr(value, "tolist"):  # numpy scalars and arrays (h5 reads)
        return _plain(value.tolist())
    return value


def _names(td) -> list | None:
    return list(td.names) if td._has_names() else None


def canonical(obj) -> dict:
    """The canonical JSON form of a tensor, non-tensor value or tensordict."""
    if isinstance(obj, torch.Tensor) and obj.is_nested:
        return {
            "kind": "nested_tensor",
            "dtype": str(obj.dtype).removeprefix("torch."),
            "components": [canonical(c) for c in obj.unbind(0)],
        }
    if isinstance(obj, torch.Tensor):
        return {
            "kind": "tensor",
            "dtype": str(obj.dtype).removeprefix("torch."),
            "shape": [int(s) for s in obj.shape],
            "data": _hex(obj),
        }
    if isinstance(obj, NonTensorStack):
        return {"kind": "non_tensor_stack", "value": _plain(obj.tolist())}
    if isinstance(obj, NonTensorData):
        return {"kind": "non_tensor", "value": _plain(obj.data)}
    if is_tensorclass(obj):
        entries = {}
        for field in dataclasses.fields(obj):
            value = getattr(obj, field.name)
            if value is None:
                continue
            if isinstance(value, (torch.Tensor, TensorDictBase)) or is_tensorclass(value):
                entries[field.name] = canonical(value)
            else:
                entries[field.name] = {"kind": "non_tensor", "value": _plain(value)}
        return {
            "kind": "TensorDict",
            "batch_size": [int(s) for s in obj.batch_size],
            "names": _names(obj),
            "class": str(type(obj)),
            "entries": entries,
        }
    if isinstance(obj, TypedTensorDict):
        # A generated TypedTensorDict: its declared fields as they read (a
        # non-tensor field reads as its value, as a tensorclass's does), the
        # other entries as a tensordict's.
        entries = {}
        for key in obj.keys():
            value = getattr(obj, key) if key in type(obj).__expected_keys__ else obj._get_str(key, None)
            if isinstance(value, (torch.Tensor, TensorDictBase)):
                entries[key] = canonical(value)
            else:
                entries[key] = {"kind": "non_tensor", "value": _plain(value)}
        return {
            "kind": "TensorDict",
            "batch_size": [int(s) for s in obj.batch_size],
            "names": _names(obj),
            "class": str(type(obj)),
            "entries": entries,
        }
    if isinstance(obj, LazyStackedTensorDict):
        return {
            "kind": "LazyStackedTensorDict",
            "batch_size": [int(s) for s in obj.batch_size],
            "stack_dim": obj.stack_dim,
            "members": [canonical(m) for m in obj.tensordicts],
        }
    if isinstance(obj, TensorDictBase):
        # _get_str: the entries themselves (get() unwraps non-tensor data).
        entries = {key: canonical(obj._get_str(key, None)) for key in obj.keys()}
        return {
            "kind": "TensorDict",
            "batch_size": [int(s) for s in obj.batch_size],
            "names": _names(obj),
            "class": None,
            "entries": entries,
        }
    return {"kind": "non_tensor", "value": _plain(obj)}


# ---- comparison ------------------------------------------------------------------


def diff(expected, got, path="", out=None, limit=20) -> list[str]:
    """Human-readable differences between two canonical forms, at most `limit`."""
    out = [] if out is None else out
    if len(out) >= limit:
        return out
    where = path or "<root>"
    if isinstance(expected, dict) and isinstance(got, dict):
        for key in expected:
            if key not in got:
                out.append(f"{where}: missing {key!r}")
            else:
                diff(expected[key], got[key], f"{path}/{key}", out, limit)
        for key in got:
            if key not in expected:
                out.append(f"{where}: unexpected {key!r}: {json.dumps(got[key], default=repr)[:200]}")
    elif isinstance(expected, list) and isinstance(got, list) and len(expected) == len(got):
        for i, (e, g) in enumerate(zip(expected, got)):
            diff(e, g, f"{path}[{i}]", out, limit)
    elif path.endswith("/data") and isinstance(expected, str) and isinstance(got, str) and expected != got:
        first = next((i for i, (a, b) in enumerate(zip(expected, got)) if a != b), min(len(expected), len(got)))
        out.append(
            f"{where}: {len(expected) // 2} vs {len(got) // 2} bytes, first difference at byte {first // 2}: "
            f"expected ...{expected[first:first + 32]}, got ...{got[first:first + 32]}"
        )
    elif expected != got or type(expected) is not type(got):
        out.append(f"{where}: expected {json.dumps(expected, default=repr)[:200]}, got {json.dumps(got, default=repr)[:200]}")
    return out[:limit]


# ---- the cases Python writes -------------------------------------------------------

ALL_DTYPES = [
    torch.bfloat16, torch.float16, torch.float32, torch.float64, torch.complex64, torch.complex128,
    torch.bool, torch.uint8, torch.int8, torch.int16, torch.int32, torch.int64,
]


def values(shape, dtype, seed=0) -> torch.Tensor:
    """Seeded values of `dtype`, with -0.0, inf and nan in floating ones."""
    g = torch.Generator().manual_seed(seed)
    if dtype is torch.bool:
        return torch.rand(shape, generator=g) > 0.5
    if dtype.is_complex or dtype.is_floating_point:
        t = (torch.randn(shape, generator=g, dtype=torch.float64) * 10).to(dtype)
        if t.numel() >= 4 and not dtype.is_complex:
            t.view(-1)[:3] = torch.tensor([-0.0, float("inf"), float("nan")], dtype=dtype)
        return t
    info = torch.iinfo(dtype)
    return torch.randint(info.min, info.max, shape, generator=g, dtype=torch.int64).to(dtype)


def py_dtypes(with_bfloat16=True) -> TensorDict:
    dtypes = [d for d in ALL_DTYPES if with_bfloat16 or d is not torch.bfloat16]
    return TensorDict({str(d).removeprefix("torch."): values((3, 4), d, i) for i, d in enumerate(dtypes)}, [3])


def py_nested_names() -> TensorDict:
    inner = TensorDict({"deep": values((2, 3, 5), torch.float32)}, [2, 3])
    child = TensorDict({"x": values((2, 3), torch.int64), "inner": inner}, [2, 3])
    td = TensorDict({"obs": values((2, 4), torch.float32), "child": child}, [2])
    td.names = ["env"]
    td["child"].names = ["env", "time"]
    return td


def py_longer_nested_batch() -> TensorDict:
    child = TensorDict({"y": values((2, 3, 4, 2), torch.float64)}, [2, 3, 4])
    return TensorDict({"x": values((2, 5), torch.int32), "child": child}, [2])


def py_zero_element() -> TensorDict:
    return TensorDict(
        {
            "no_features": values((3, 0), torch.int64),
            "no_rows": values((3, 0, 2), torch.float64),
            "empty_batch": TensorDict({"w": values((3, 0), torch.bool)}, [3, 0]),
            "regular": values((3,), torch.int16),
        },
        [3],
    )


def py_jagged() -> TensorDict:
    """Nested (jagged) leaves: values plus a .shape.memmap of sizes."""
    ragged = torch.nested.nested_tensor([values((3, 4), torch.float64, 1), values((3, 5), torch.float64, 2)])
    ids = torch.nested.nested_tensor([values((2,), torch.int64, 3), values((5,), torch.int64, 4)])
    child = TensorDict({"ids": ids}, [2])
    return TensorDict({"ragged": ragged, "child": child, "dense": values((2, 3), torch.float32)}, [2])


def py_encoded_keys(with_slash=True) -> TensorDict:
    td = TensorDict(
        {
            "with space": values((2,), torch.float32),
            "dot.ted": values((2,), torch.int32),
            "..": values((2,), torch.int64),
            "per%cent": values((2,), torch.uint8),
            "café 日本": values((2,), torch.float64),
            "sub level": TensorDict({"a:b": values((2, 2), torch.int16)}, [2]),
        },
        [2],
    )
    if with_slash:
        td["sl/ash"] = values((2, 1), torch.float32)
    return td


def py_non_tensor() -> TensorDict:
    td = TensorDict({"x": values((3,), torch.float32)}, [3])
    td["text"] = "hello ✓"
    # Scalars would become tensors: NonTensorData keeps them as values.
    td["number"] = NonTensorData(42, batch_size=[3])
    td["real"] = NonTensorData(2.5, batch_size=[3])
    td["flag"] = NonTensorData(True, batch_size=[3])
    td["list"] = NonTensorData([1, "two", 3.0], batch_size=[3])
    td["dict"] = NonTensorData({"a": 1, "b": [True, False]}, batch_size=[3])
    td["stack"] = NonTensorStack("a", "b", "c")
    td["nested"] = TensorDict({"y": values((3, 2), torch.int32)}, [3])
    td["nested", "inner"] = "deep"
    return td


def py_lazy_hetero() -> LazyStackedTensorDict:
    a = TensorDict({"shared": values((2, 3), torch.float32), "only_a": values((2,), torch.int64)}, [2])
    b = TensorDict(
        {"shared": values((2, 5), torch.float32, 1), "only_b": TensorDict({"z": values((2, 4), torch.int32)}, [2])},
        [2],
    )
    return lazy_stack([a, b], 0)


def py_lazy_batches() -> LazyStackedTensorDict:
    # members of different batch sizes: the stack's batch size is [2, -1]
    a = TensorDict({"x": values((2, 3), torch.float32), "only_a": values((2,), torch.int64)}, [2])
    b = TensorDict({"x": values((3, 3), torch.float32)}, [3])
    return lazy_stack([a, b], 0)


def py_dense_stack() -> TensorDict:
    a = TensorDict({"x": values((3, 2), torch.float32), "n": TensorDict({"y": values((3,), torch.int64)}, [3])}, [3])
    return torch.stack([a, a * 2 + 1], 1)


def py_consolidated() -> TensorDict:
    td = TensorDict(
        {"x": values((4, 2), torch.float32), "n": TensorDict({"y": values((4,), torch.int16)}, [4])}, [4]
    )
    td["text"] = "consolidated"
    return td.consolidate()


def py_tensorclass() -> Obs:
    return Obs(
        pixels=values((3, 2, 2), torch.uint8),
        reward=values((3,), torch.float32),
        label="walk",
        step=7,
        batch_size=[3],
    )


def py_nested_tensorclass() -> TensorDict:
    """An Obs inside a tensordict: C++ finds it through the parent's {"type": "Obs"}."""
    return TensorDict({"x": values((3, 2), torch.float64), "obs": py_tensorclass()}, [3])


def py_h5_nested() -> TensorDict:
    td = py_longer_nested_batch()
    td.update(py_encoded_keys(with_slash=False))
    td["zero"] = TensorDict({"w": values((2, 0), torch.bool)}, [2, 0])
    td["text"] = "hello"
    return td


def py_h5_non_tensor_stack() -> TensorDict:
    return TensorDict({"x": values((3,), torch.float32), "stack": NonTensorStack("a", "b", "c")}, [3])


# (name, format, builder). h5 has no bfloat16 (h5py cannot write it) and reads
# a "/" in a key as a group path.
PY_CASES = [
    ("dtypes", "memmap", py_dtypes),
    ("nested_names", "memmap", py_nested_names),
    ("longer_nested_batch", "memmap", py_longer_nested_batch),
    ("zero_element", "memmap", py_zero_element),
    ("encoded_keys", "memmap", py_encoded_keys),
    ("non_tensor", "memmap", py_non_tensor),
    ("lazy_hetero", "memmap", py_lazy_hetero),
    ("lazy_batches", "memmap", py_lazy_batches),
    ("dense_stack", "memmap", py_dense_stack),
    ("consolidated", "memmap", py_consolidated),
    ("jagged", "memmap", py_jagged),
    ("tensorclass", "memmap", py_tensorclass),
    ("nested_tensorclass", "memmap", py_nested_tensorclass),
    ("h5_dtypes", "h5", lambda: py_dtypes(with_bfloat16=False)),
    ("h5_nested", "h5", py_h5_nested),
    ("h5_non_tensor_stack", "h5", py_h5_non_tensor_stack),
]

# The C++ cases run_interop expects interop_tool to write; a missing one fails.
CPP_CASES = [
    "dtypes", "nested_names", "longer_nested_batch", "zero_element", "encoded_keys", "non_tensor",
    "lazy_hetero", "lazy_batches", "dense_stack", "consolidated", "jagged", "tensorclass", "nested_tensorclass", "h5_dtypes",
    "h5_nested",
]

# Known disagreements, by case ("py->cpp/name" or "cpp->py/name") -> reason.
# A listed case that passes is reported as XPASS and counts as a failure, so
# that the list is kept up to date.
EXPECTED_FAILURES: dict[str, str] = {}

# Cases that tensordict 0.14 (the one TorchRL 0.14 pins) cannot run, by case ->
# reason; run_schemas.py's are here too. Skipped, with the reason printed, when
# the tensordict under test is older than 0.15 (docs/persistence.md, "tensordict 0.14
# (TorchRL 0.14)", lists them).
TENSORDICT_0_14_NAMES = "tensordict 0.14 neither writes nor reads dim names in meta.json (0.15: \"_names\")"
TENSORDICT_0_14_SKIPS: dict[str, str] = {
    "py->cpp/nested_names": TENSORDICT_0_14_NAMES,
    "cpp->py/nested_names": TENSORDICT_0_14_NAMES,
    "cpp->py/append_memmap": TENSORDICT_0_14_NAMES,
    "py->cpp/append_memmap": TENSORDICT_0_14_NAMES,
    "py->cpp/consolidated/nested_tensorclass": "tensordict 0.14's consolidate(filename=...) cannot write a "
    "tensorclass's class into the JSON metadata",
    "py->cpp/h5_non_tensor_stack": "tensordict 0.14 cannot write a NonTensorStack of different values to h5",
    "cpp->py/h5_nested": "tensordict 0.14 reads an h5 array of strings as one non-tensor value, not a NonTensorStack",
    "cpp->py/consolidated/tensorclass": "tensordict 0.14's from_consolidated knows only its own classes by name "
    "(CLS_MAP), not a tensorclass",
    "contract/on h5 load": "tensordict 0.14's tensorclasses have no from_h5 classmethod (Class.from_h5(path) takes "
    "the path for the instance)",
}


def skip_reason(label: str) -> str | None:
    """Why the tensordict under test cannot run the case `label`, if it cannot."""
    major, minor = (int(part) for part in tensordict.__version__.split(".")[:2])
    return TENSORDICT_0_14_SKIPS.get(label) if (major, minor) < (0, 15) else None


# ---- append_memmap cases -----------------------------------------------------------
#
# A tree grown step by step must read, after each step, as the rows written so
# far: C++ writes and appends (interop_tool append), Python's
# TensorDict.load_memmap reads; Python writes and appends
# (tensordict.append_memmap), the C++ runtime reads (interop_tool dump).

# Rows written by each step (0: the first write), as interop_tool's append case.
APPEND_STEP_ROWS = [2, 1, 3, 0, 4]


def py_append_rows() -> TensorDict:
    """Every row the Python steps write: a leaf, a nested level of two batch
    dims, dim names, a non-tensor value and an Obs."""
    n = sum(APPEND_STEP_ROWS)
    obs = Obs(pixels=values((n, 2, 2), torch.uint8), reward=values((n,), torch.float32), label="walk", step=7,
              batch_size=[n])
    nxt = TensorDict({"reward": values((n, 2), torch.int64), "done": values((n, 2, 1), torch.bool)}, [n, 2])
    td = TensorDict({"x": values((n, 3), torch.float64), "next": nxt, "obs": obs}, [n])
    td["task"] = "walk"
    td.names = ["time"]
    return td


def check_cpp_append(tool: Path, path: Path) -> None:
    for step in range(len(APPEND_STEP_ROWS)):
        expected = json.loads(run_tool(tool, "append", str(path), str(step)))
        try:
            compare(expected, canonical(TensorDict.load_memmap(path)))
        except Failure as e:
            raise Failure(f"after step {step}:\n{e}") from None


def check_py_append(tool: Path, path: Path) -> None:
    rows = py_append_rows()
    end = 0
    for step, n in enumerate(APPEND_STEP_ROWS):
        chunk = rows[end:end + n]
        if step == 0:
            chunk.memmap(path)
        else:
            tensordict.append_memmap(path, chunk)
        end += n
        try:
            compare(canonical(rows[:end]), json.loads(run_tool(tool, "dump", str(path))))
        except Failure as e:
            raise Failure(f"after step {step}:\n{e}") from None


def append_checks(tool: Path, work: Path) -> list:
    """The append_memmap cases, as (label, check) pairs."""
    return [
        ("cpp->py/append_memmap", lambda: check_cpp_append(tool, work / "append" / "cpp")),
        ("py->cpp/append_memmap", lambda: check_py_append(tool, work / "append" / "py")),
    ]


# ---- consolidated files ----------------------------------------------------------
# td.consolidate(filename=...) in one language, TensorDict.from_consolidated in
# the other. py->cpp: C++ reads the file Python wrote (its canonical JSON must
# equal Python's own from_consolidated's), then consolidates what it read into
# a new file, which Python reads back equal ("and back"). cpp->py: Python reads
# the files interop_tool write_consolidated wrote.

CONSOLIDATED_PY_CASES = [
    ("dtypes", py_dtypes),
    ("nested_names", py_nested_names),
    ("longer_nested_batch", py_longer_nested_batch),
    ("zero_element", py_zero_element),
    ("encoded_keys", py_encoded_keys),
    ("non_tensor", py_non_tensor),
    ("lazy_hetero", py_lazy_hetero),
    ("dense_stack", py_dense_stack),
    ("nested_tensorclass", py_nested_tensorclass),
]

CONSOLIDATED_CPP_CASES = [
    "dtypes", "nested_names", "longer_nested_batch", "zero_element", "encoded_keys", "non_tensor", "lazy_hetero",
    "dense_stack", "tensorclass",
]


def check_consolidated_py_to_cpp(tool: Path, work: Path, name: str, build) -> None:
    path = work / f"{name}.consolidated"
    copy = work / f"{name}.cpp.consolidated"
    build().consolidate(filename=path)
    expected = canonical(TensorDict.from_consolidated(path))
    compare(expected, json.loads(run_tool(tool, "dump_consolidated", str(path), str(copy))))
    compare(expected, canonical(TensorDict.from_consolidated(copy)))


def consolidated_checks(tool: Path, work: Path) -> list:
    """The (label, check) pairs of the consolidated-file cases, both ways."""
    (work / "py-consolidated").mkdir(parents=True)
    checks = [
        (f"py->cpp/consolidated/{name}",
         lambda n=name, b=build: check_consolidated_py_to_cpp(tool, work / "py-consolidated", n, b))
        for name, build in CONSOLIDATED_PY_CASES
    ]
    written: dict[str, dict] = {}
    write_error = None
    try:
        run_tool(tool, "write_consolidated", str(work / "cpp-consolidated"))
        written = {c["name"]: c for c in json.loads((work / "cpp-consolidated" / "manifest.json").read_text())}
    except Exception as e:  # every cpp->py case then fails with this
        write_error = e

    def check(n):
        if write_error is not None:
            raise Failure(f"interop_tool write_consolidated failed: {write_error}")
        if n not in written:
            raise Failure(f"interop_tool write_consolidated did not write the case {n!r}")
        compare(written[n]["expected"], canonical(TensorDict.from_consolidated(written[n]["path"])))

    checks += [(f"cpp->py/consolidated/{name}", lambda n=name: check(n)) for name in CONSOLIDATED_CPP_CASES]
    def unlisted(n):
        raise Failure(f"interop_tool wrote {n!r}, which run_interop.py does not list in CONSOLIDATED_CPP_CASES")

    checks += [
        (f"cpp->py/consolidated/{name}", lambda n=name: unlisted(n))
        for name in written if name not in CONSOLIDATED_CPP_CASES
    ]
    return checks


# ---- running ---------------------------------------------------------------------


class Failure(Exception):
    pass


def run_tool(tool: Path, *args: str) -> str:
    done = subprocess.run([str(tool), *args], capture_output=True, text=True)
    if done.returncode != 0:
        raise Failure(f"{Path(tool).name} {' '.join(args)} exited with {done.returncode}:\n{done.stderr.strip()}")
    return done.stdout


def error_of(check) -> str | None:
    """What went wrong in check(): a Failure's message or a traceback; None if it passed."""
    try:
        check()
    except Failure as e:
        return str(e)
    except Exception:
        return traceback.format_exc(limit=4).strip()
    return None


def compare(expected: dict, got: dict) -> None:
    differences = diff(expected, got)
    if differences:
        raise Failure("\n".join(differences))


def check_py_to_cpp(tool: Path, work: Path, name: str, fmt: str, build) -> None:
    obj = build()
    if fmt == "memmap":
        path = work / name
        obj.memmap(path)
        expected = canonical(obj)
    else:
        path = work / f"{name}.h5"
        PersistentTensorDict.from_dict(obj, path).close()
        # h5 keeps no batch sizes or names: compare with what Python reads back.
        back = PersistentTensorDict.from_h5(path)
        expected = canonical(back)
        back.close()
    compare(expected, json.loads(run_tool(tool, "dump", str(path))))


def check_cpp_to_py(case: dict) -> None:
    path = case["path"]
    if case["format"] == "memmap":
        got = canonical(TensorDict.load_memmap(path))
    else:
        loaded = PersistentTensorDict.from_h5(path)
        got = canonical(loaded)
        loaded.close()
    compare(case["expected"], got)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tool", required=True, type=Path, help="the interop_tool executable")
    parser.add_argument("--work", required=True, type=Path, help="a scratch directory (emptied first)")
    args = parser.parse_args()

    try:
        libtorch = run_tool(args.tool, "version").strip()
    except Failure as e:  # every case then fails, each saying why
        libtorch = f"unknown ({e})"
    print(
        f"python {sys.version.split()[0]}, tensordict {tensordict.__version__}, torch {torch.__version__}, "
        f"h5py {h5py.__version__}, libtorch (C++) {libtorch}"
    )
    shutil.rmtree(args.work, ignore_errors=True)
    (args.work / "py").mkdir(parents=True)

    checks = []
    for name, fmt, build in PY_CASES:
        checks.append((f"py->cpp/{name}", lambda n=name, f=fmt, b=build: check_py_to_cpp(args.tool, args.work / "py", n, f, b)))
    written: dict[str, dict] = {}
    write_error = None
    try:
        run_tool(args.tool, "write", str(args.work / "cpp"))
        written = {c["name"]: c for c in json.loads((args.work / "cpp" / "manifest.json").read_text())}
    except Exception as e:  # every cpp->py case then fails with this
        write_error = e
    for name in CPP_CASES:
        def check(n=name):
            if write_error is not None:
                raise Failure(f"interop_tool write failed: {write_error}")
            if n not in written:
                raise Failure(f"interop_tool write did not write the case {n!r}")
            check_cpp_to_py(written[n])
        checks.append((f"cpp->py/{name}", check))
    for name in written:
        if name not in CPP_CASES:
            checks.append((f"cpp->py/{name}", lambda n=name: (_ for _ in ()).throw(
                Failure(f"interop_tool wrote {n!r}, which run_interop.py does not list in CPP_CASES"))))

    (args.work / "append").mkdir()
    checks += append_checks(args.tool, args.work)
    checks += consolidated_checks(args.tool, args.work)

    passed = failed = xfailed = skipped = 0
    for label, check in checks:
        why = skip_reason(label)
        if why is not None:
            skipped += 1
            print(f"SKIP  {label}: {why}")
            continue
        reason = EXPECTED_FAILURES.get(label)
        error = error_of(check)
        if error is None and reason is None:
            passed += 1
            print(f"PASS  {label}")
        elif error is None:
            failed += 1
            print(f"XPASS {label}: passes but is listed as an expected failure ({reason}); remove it from the list")
        elif reason is not None:
            xfailed += 1
            print(f"XFAIL {label}: {reason}")
            print("      " + error.replace("\n", "\n      "))
        else:
            failed += 1
            print(f"FAIL  {label}")
            print("      " + error.replace("\n", "\n      "))
    if xfailed:
        print(f"{xfailed} expected failures (listed above, with their reasons)")
    if skipped:
        print(f"{skipped} skipped with tensordict {tensordict.__version__} (listed above, with their reasons)")
    print(f"{passed} passed, {failed} failed")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
