"""Arrow tables and Parquet files between tensorclass::arrow and tensordict
0.15's from_arrow / to_arrow / from_parquet / to_parquet (with pyarrow).

    python run_arrow.py --tool arrow_tool --work <dir>

- Arrow, Python to C++ and back: each case's ``to_arrow`` table (and tables
  with nulls built with pyarrow) is written with ``pyarrow.parquet``; C++
  reads it with ``from_arrow(read_parquet_table(...))`` under each null rule
  and must get what Python's ``from_arrow`` gets (or raise the same message),
  then writes ``to_arrow`` of it again: Python reads the same schema and the
  same tensordict from that file.
- Arrow, C++ to Python: the case C++ builds (``cpp_arrow`` here too) is read
  by Python's ``from_arrow`` as C++ wrote it.
- Tabular: files written by Python's ``to_parquet`` and by pyarrow are read
  by C++'s ``from_parquet`` as Python's ``from_parquet`` reads them; the file
  C++'s ``to_parquet`` writes holds the table Python's ``to_parquet`` writes
  for the same tensordict, and reads back the same on both sides.

Tensordicts are compared by run_interop.py's canonical JSON, where a
non-tensor stack of equal values counts as that one value (C++ keeps one).
"""

from __future__ import annotations

import json
import sys
import warnings
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import torch
from tensordict import NonTensorStack, TensorDict, from_arrow, from_parquet, to_arrow

sys.path.insert(0, str(Path(__file__).resolve().parent))
from crossing import Crossing  # noqa: E402
from run_interop import canonical, diff  # noqa: E402

crossing = Crossing("arrow")
work, check = crossing.work, crossing.check

# What this libtorch cannot hold: its uint16/32/64 cases are skipped (C++ says why).
NO_WIDE_UNSIGNED = "which this libtorch has no dtype for"


def normalized(node):
    """The canonical form with a stack of equal values as that value (C++ keeps one value)."""
    if isinstance(node, dict):
        if node.get("kind") == "non_tensor_stack" and isinstance(node["value"], list) and node["value"]:
            first = node["value"][0]
            if all(v == first for v in node["value"]):
                return {"kind": "non_tensor", "value": first}
        return {k: normalized(v) for k, v in node.items()}
    if isinstance(node, list):
        return [normalized(v) for v in node]
    return node




def same_td(name, expected_td_or_canonical, got_canonical):
    expected = expected_td_or_canonical
    if not isinstance(expected, dict):
        expected = canonical(expected)
    differences = diff(normalized(expected), normalized(got_canonical))
    check(name, not differences, "\n  " + "\n  ".join(differences))


def tool(*argv):
    """(canonical JSON, None) or (None, the error message)."""
    done = crossing.run(*argv)
    if done.returncode == 1:
        return None, done.stderr.strip()
    if done.returncode != 0:
        return None, f"arrow_tool exited with {done.returncode}: {done.stderr.strip()}"
    return json.loads(done.stdout), None


def python_from_arrow(table, nulls):
    """(tensordict, None, warned) or (None, the error message, warned)."""
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        try:
            return from_arrow(table, nulls=nulls), None, any(w.category is FutureWarning for w in caught)
        except ValueError as e:
            return None, str(e), False


# ---- Arrow, Python to C++ and back ---------------------------------------------------


def py_cases():
    jagged = torch.nested.nested_tensor([torch.arange(3.0), torch.arange(1.0)], layout=torch.jagged)
    points = torch.nested.nested_tensor([torch.ones(2, 3), torch.zeros(1, 3)], layout=torch.jagged)
    non_tensor = TensorDict(x=torch.arange(2), batch_size=[2])
    non_tensor["labels"] = NonTensorStack("a", "b")
    non_tensor.set_non_tensor("task", "walk")
    non_tensor["meta"] = NonTensorStack({"seed": 1, "tags": ["a"]}, {"seed": 2, "tags": []})
    non_tensor["words"] = NonTensorStack(["x", "y"], [])
    nested = TensorDict(
        {"a": torch.arange(6.0).reshape(3, 2), ("n", "b"): torch.arange(3), ("n", "m", "c"): torch.ones(3, 1, dtype=torch.int16)},
        batch_size=[3],
    )
    dtypes = [torch.bool, torch.uint8, torch.int8, torch.int16, torch.int32, torch.int64, torch.float16, torch.float32, torch.float64]
    return {
        "docstring": TensorDict(
            x=torch.tensor([1.0, 2.0]),
            image=torch.arange(24.0).reshape(2, 3, 4),
            obs=TensorDict(y=torch.tensor([3, 4]), batch_size=[2]),
            batch_size=[2],
        ),
        "dtypes": TensorDict({str(d).split(".")[1]: torch.arange(4).to(d) for d in dtypes}, batch_size=[4]),
        "feature_dims": TensorDict({str(d).split(".")[1]: torch.arange(12).reshape(2, 3, 2).to(d) for d in dtypes}, batch_size=[2]),
        "wide_unsigned": TensorDict({str(d).split(".")[1]: torch.arange(3).to(d) for d in (torch.uint16, torch.uint32, torch.uint64)}, batch_size=[3]),
        "jagged": TensorDict(seq=jagged, points=points, batch_size=[2]),
        "non_tensor": non_tensor,
        "nested": nested,
        "no_rows": TensorDict(x=torch.zeros(0), image=torch.zeros(0, 2, 2), batch_size=[0]),
    }


def null_tables():
    ext = pa.fixed_shape_tensor(pa.int32(), [2, 3], permutation=[1, 0])
    storage = pa.array([list(range(6)), list(range(6, 12)), [0] * 6], pa.list_(pa.int32(), 6))
    return {
        "numbers_with_nulls": pa.table({
            "f32": pa.array([1.5, None, 3.0], pa.float32()),
            "i64": pa.array([None, 2, 3]),
            "u8": pa.array([1, 2, None], pa.uint8()),
            "b": pa.array([True, None, False]),
            "f16": pa.array([0.5, None, 2.0], pa.float16()),
        }),
        "lists_with_nulls": pa.table({
            "ids": pa.array([[1, 2], None, [3, None]]),
            "big": pa.array([[0.5], [], None], pa.large_list(pa.float64())),
            "pair": pa.array([[1, 2], None, [5, 6]], pa.list_(pa.int16(), 2)),
            "sliced": pa.array([[9], [1], [2, 3], [4]]).slice(1, 3),
        }),
        "struct_with_nulls": pa.table({
            "s": pa.array([{"x": 1.0, "name": "a"}, None, {"x": 3.0, "name": None}],
                          pa.struct([("x", pa.float32()), ("name", pa.string())])),
        }),
        "strings_with_nulls": pa.table({
            "text": pa.array(["a", None, "c"]),
            "words": pa.array([["a", None], [], ["b"]]),
            "level": pa.array(["low", None, "high"]).dictionary_encode(),
        }),
        "null_inside_map": pa.table({"m": pa.array([[("k", 1)], [("k", None)], []], pa.map_(pa.string(), pa.int64()))}),
        "permuted_tensor": pa.table({"permuted": pa.ExtensionArray.from_storage(ext, storage)}),
        "maps": pa.table({"m": pa.array([[("a", 1)], [], [("b", 2), ("c", 3)]], pa.map_(pa.string(), pa.int64()))}),
    }


def check_arrow_py_to_cpp(name, table, nulls):
    label = f"py->cpp arrow/{name} nulls={nulls!r}"
    path = work / f"py_{name}.parquet"
    pq.write_table(table, path)
    back_path = work / f"cpp_{name}_{nulls}.parquet"
    expected, expected_error, warned = python_from_arrow(pq.read_table(path), nulls)
    if warned:
        # tensordict 0.15 returns such nulls as None with a FutureWarning; C++ raises, as 0.18 will.
        _, error = tool("from-arrow", path, "-", nulls)
        check(f"{label}: a null inside a map or dictionary values raises (tensordict warns)",
              error is not None and "null value(s)" in error, error or "no error")
        return
    python_table = python_to_arrow_error = None
    if expected is not None:
        try:
            python_table = to_arrow(expected)
        except (pa.ArrowException, TypeError, ValueError) as e:
            python_to_arrow_error = str(e)
    if python_to_arrow_error:
        # Python's to_arrow cannot write back what its from_arrow read (a map's (key, value) pairs): C++'s
        # cannot either; what C++ read is checked alone.
        _, error = tool("from-arrow", path, back_path, nulls)
        check(f"{label}: to_arrow of it raises on both sides", error is not None and "to_arrow" in error,
              f"\n  python: {python_to_arrow_error}\n  c++:    {error}")
        back_path = "-"
    got, error = tool("from-arrow", path, back_path, nulls)
    if error and NO_WIDE_UNSIGNED in error:
        print(f"SKIP {label}: {error}")
        return
    if expected_error or error:
        check(f"{label}: the same error", expected_error == error, f"\n  python: {expected_error}\n  c++:    {error}")
        return
    same_td(f"{label}: C++ reads what Python reads", expected, got)
    if python_table is None:
        return
    again = pq.read_table(back_path)
    check(f"{label}: C++'s to_arrow writes the schema Python's writes",
          again.schema.remove_metadata().equals(python_table.schema.remove_metadata()),
          f"\n  python: {python_table.schema}\n  c++:    {again.schema}")
    # Filled nulls of non-tensor values stay nulls in the file: read it with the same rule.
    again_nulls = "raise" if nulls == "raise" else "fill"
    same_td(f"{label}: Python reads C++'s file as it reads its own to_arrow",
            from_arrow(python_table, nulls=again_nulls), canonical(from_arrow(again, nulls=again_nulls)))


for name, td in py_cases().items():
    table = to_arrow(td)
    check_arrow_py_to_cpp(name, table, "raise")
for name, table in null_tables().items():
    for nulls in ("raise", "fill", "mask"):
        check_arrow_py_to_cpp(name, table, nulls)


# ---- Arrow, C++ to Python ------------------------------------------------------------


def cpp_arrow():
    td = TensorDict(
        {
            "x": torch.tensor([1.5, -2.0]),
            "image": torch.arange(24, dtype=torch.int32).reshape(2, 3, 4),
            "seq": torch.nested.nested_tensor(
                [torch.arange(6, dtype=torch.float64).reshape(3, 2), torch.arange(2, dtype=torch.float64).reshape(1, 2) + 10],
                layout=torch.jagged),
            "done": torch.tensor([False, True]),
            ("obs", "y"): torch.arange(2) * 7,
            ("obs", "h"): torch.arange(2, dtype=torch.float16),
        },
        batch_size=[2],
    )
    td["obs", "label"] = NonTensorStack("left", "right")
    td.set_non_tensor("task", "walk")
    td["meta"] = NonTensorStack({"seed": 1, "tags": ["a"]}, {"seed": 2, "tags": []})
    return td


path = work / "cpp_arrow.parquet"
built, error = tool("write-arrow", path)
if error:
    check("cpp->py arrow/cpp_arrow", False, error)
else:
    same_td("cpp->py arrow/cpp_arrow: C++ built the tensordict Python builds", cpp_arrow(), built)
    python_table = to_arrow(cpp_arrow())
    check("cpp->py arrow/cpp_arrow: C++'s table is Python's to_arrow of the same tensordict",
          pq.read_table(path).schema.remove_metadata().equals(python_table.schema.remove_metadata()),
          f"\n  python: {python_table.schema}\n  c++:    {pq.read_table(path).schema}")
    same_td("cpp->py arrow/cpp_arrow: Python's from_arrow reads it as it reads its own to_arrow",
            from_arrow(python_table), canonical(from_arrow(pq.read_table(path))))


# ---- tabular: from_parquet / to_parquet ------------------------------------------------


def python_tabular_files():
    """Files that Python's to_parquet (without pandas) and pyarrow write, and the separator to read them with."""
    strings = TensorDict(a=torch.arange(3), b=torch.arange(3.0) / 4, batch_size=[3])
    strings["label"] = NonTensorStack("u", "v", "w")
    nested = TensorDict({("obs", "x"): torch.arange(2.0), ("obs", "y"): torch.ones(2), "action": torch.tensor([0, 1])}, batch_size=[2])
    files = {}
    for name, td, separator in (("to_parquet_strings", strings, None), ("to_parquet_nested", nested, ".")):
        path = work / f"{name}.parquet"
        td.to_parquet(path, separator=separator)
        files[name] = (path, separator)
    ext = pa.fixed_shape_tensor(pa.int16(), [2])
    tables = {
        "pyarrow_nulls": pa.table({"i": pa.array([1, None, 3], pa.int32()), "f": pa.array([1.5, None, 3.0], pa.float32()),
                                   "s": pa.array(["a", None, "c"])}),
        "pyarrow_kinds": pa.table({
            "ts": pa.array([1, None, 3], pa.timestamp("ms")),
            "image": pa.ExtensionArray.from_storage(ext, pa.array([[1, 2], [3, 4], [5, 6]], pa.list_(pa.int16(), 2))),
            "pair": pa.array([[1, 2], [3, 4], [5, 6]], pa.list_(pa.int32(), 2)),
            "floats": pa.array([[0.5], [1.5], [2.5]]),
            "ragged": pa.array([[1, 2], [3], []]),
            "st": pa.array([{"x": 1}, {"x": 2}, None]),
            "u8": pa.array([1, 2, 3], pa.uint8()),
        }),
        "pyarrow_separator": pa.table({"obs.x": [1.0, 2.0], "obs.y": [3.0, 4.0], "action": [0, 1]}),
    }
    for name, table in tables.items():
        path = work / f"{name}.parquet"
        pq.write_table(table, path)
        files[name] = (path, "." if "separator" in name else None)
    return files


for name, (path, separator) in python_tabular_files().items():
    expected = from_parquet(path, separator=separator) if separator else from_parquet(path)
    got, error = tool("from-parquet", path, *([separator] if separator else []))
    if error:
        check(f"py->cpp tabular/{name}", False, error)
    else:
        same_td(f"py->cpp tabular/{name}: C++'s from_parquet reads what Python's reads", expected, got)


def cpp_tabular():
    # Set one by one: the order of C++'s construction (a dict's nested keys come last in Python's).
    td = TensorDict(a=torch.arange(3), b=torch.arange(3, dtype=torch.float64) / 4, batch_size=[3])
    td["obs", "x"] = torch.arange(3.0) - 1
    td["flag"] = torch.arange(3) % 2 == 1
    td["label"] = NonTensorStack("u", "v", "w")
    return td


path = work / "cpp_tabular.parquet"
built, error = tool("to-parquet", path)
if error:
    check("cpp->py tabular/cpp_tabular", False, error)
else:
    python_path = work / "py_tabular.parquet"
    cpp_tabular().to_parquet(python_path, separator=".")
    check("cpp->py tabular/cpp_tabular: C++'s to_parquet writes the table Python's writes",
          pq.read_table(path).equals(pq.read_table(python_path)),
          f"\n  python: {pq.read_table(python_path)}\n  c++:    {pq.read_table(path)}")
    read_back, error = tool("from-parquet", path, ".")
    same_td("cpp->py tabular/cpp_tabular: both from_parquet read it the same",
            from_parquet(path, separator="."), read_back or {})

crossing.finish(f"{crossing.passed} passed, 0 failed")
