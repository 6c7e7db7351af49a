#!/usr/bin/env python3
"""One schema, two languages: generated C++ structs and generated Python tensorclasses.

tensorclass-gen made, from the same schemas, the structs in ``schema_tool`` and
the Python modules under ``--modules``. Checked, with exact values (the
canonical JSON of run_interop.py):

- cpp->py: every tree ``schema_tool write`` wrote (each class, with and without
  its optional fields) loads in Python as the generated class, both through
  ``Class.load_memmap`` and through ``TensorDict.load_memmap`` (the ``_type``
  tag names the class), and equals what C++ wrote.
- py->cpp: Python builds an instance of every generated class and writes it;
  ``schema_tool load`` loads it into the struct (validated) and prints it.
- contracts: the same broken contract raises the same words in both languages,
  on construction and on load (memmap and h5).
- per-element strings: a batch whose ``task`` holds one string per element
  (tensordict's NonTensorStack) loads typed in C++ (a ``NonTensorStack<string>``
  field), is changed at one element, stacked and written back; Python reads
  every element's value.

Plain Python: ``python run_schemas.py --tool <schema_tool> [--tool ...] --modules <dir> --work <dir>``.
"""

from __future__ import annotations

import argparse
import importlib
import json
import shutil
import subprocess
import sys
import typing
import warnings
from pathlib import Path

import torch
from tensordict import NonTensorStack, TensorDict, is_tensorclass

sys.path.insert(0, str(Path(__file__).resolve().parent))
from run_interop import Failure, canonical, compare, error_of, run_tool, skip_reason, values  # noqa: E402

warnings.filterwarnings("ignore", category=FutureWarning)
warnings.filterwarnings("ignore", category=UserWarning)


def load_class(name: str) -> type:
    module, _, cls = name.rpartition(".")
    return getattr(importlib.import_module(module), cls)


# ---- instances built in Python, from the generated class alone ---------------------


def python_value(annotation, name: str):
    """A non-tensor value unlike the schema's default and unlike C++'s (schema_tool)."""
    if typing.get_origin(annotation) is tuple:
        return (python_value(typing.get_args(annotation)[0], name),)
    return {str: f"py {name} ü", int: 7 + len(name), float: -1.5 * len(name), bool: True}[annotation]


def python_stack(annotation, name: str, batch: list[int]):
    """One value per element of `batch` for a NonTensorStack field: python_value and the type's zero, alternating."""
    count = 1
    for size in batch:
        count *= size
    flat = [python_value(annotation, name) if i % 2 == 0 else annotation() for i in range(count)]
    if not batch:
        return flat[0]
    for size in reversed(batch[1:]):
        flat = [flat[i:i + size] for i in range(0, len(flat), size)]
    return NonTensorStack.from_list(flat)


def make_instance(cls: type, batch: list[int], with_optional: bool):
    """An instance of a generated class: shapes from its contract, like schema_tool's make_instance."""
    contract = getattr(sys.modules[cls.__module__], f"_CONTRACT_{cls.__name__}")
    if contract.batch_names is not None:
        batch = batch[: len(contract.batch_names)]
    hints = typing.get_type_hints(cls)
    symbols = {}
    kwargs = {}
    for field in contract.fields:
        hint = hints[field.name]
        if field.kind == "tensor":
            if field.optional and not with_optional:
                continue
            dims = [3] if field.dims is None else [
                d if isinstance(d, int) else symbols.setdefault(d, 5 + len(symbols)) for d in field.dims
            ]
            dtype = getattr(torch, field.dtype or "float32")
            kwargs[field.name] = values(tuple(batch + dims), dtype, seed=len(field.name))
        elif field.kind == "class":
            if field.optional and not with_optional:
                continue  # None, as schema_tool leaves an optional class absent
            nested = typing.get_args(hint)[0] if typing.get_origin(hint) is typing.Union else hint
            kwargs[field.name] = make_instance(nested, batch, with_optional)
        elif field.kind == "stack":
            kwargs[field.name] = python_stack(hint, field.name, batch)
        else:
            kwargs[field.name] = python_value(hint, field.name)
    return cls(**kwargs, batch_size=batch)


# ---- contract cases: schema_tool contract <case> breaks the same contract ---------


def _observation(pixels, state):
    from tc.rl import Observation

    return Observation(pixels=pixels, state=state, batch_size=[2])


def _sequence(mask_len: int, batch):
    from tc.seq import SequenceBatch

    return SequenceBatch(
        tokens=torch.zeros(2, 4, dtype=torch.int64),
        mask=torch.zeros(2, mask_len, dtype=torch.bool),
        lengths=torch.zeros(2, dtype=torch.int64),
        batch_size=batch,
    )


U8 = torch.uint8
# A leaf that does not start with the batch size is refused by tensordict
# itself in Python, in its own words, before the contract is checked.
CONTRACT_CASES = {
    "dtype": lambda: _observation(torch.zeros(2, 3, 4, 4), torch.zeros(2, 5)),
    "fixed_dim": lambda: _observation(torch.zeros(2, 2, 4, 4, dtype=U8), torch.zeros(2, 5)),
    "dim_count": lambda: _observation(torch.zeros(2, 3, 4, dtype=U8), torch.zeros(2, 5)),
    "required": lambda: _observation(None, torch.zeros(2, 5)),
    "symbol": lambda: _sequence(5, [2]),
    "batch_dims": lambda: _sequence(4, []),
}


def python_error(build) -> str:
    try:
        build()
    except ValueError as e:
        return str(e)
    raise Failure("no error in Python")


def check_contract(tool: Path, case: str) -> None:
    expected = run_tool(tool, "contract", case).strip()
    got = python_error(CONTRACT_CASES[case])
    if got != expected:
        raise Failure(f"C++: {expected}\nPython: {got}")


def check_load_contract(tool: Path, work: Path) -> None:
    """A tree that breaks the contract (written past the checks) is refused on load, in the same words.

    C++ names the field from the root class (Transition.next.state); Python,
    which builds nested instances first, from the innermost class that breaks
    its contract (Observation.state). What follows the path is the same.
    """
    from tc.rl import Transition

    good = make_instance(Transition, [2], True)
    good.next.state = good.next.state.double()  # assignment does not run the checks
    path = work / "broken-transition"
    good.memmap(path)
    python = python_error(lambda: Transition.load_memmap(path))
    done = subprocess.run([str(tool), "load", "tc.rl.Transition", str(path)], capture_output=True, text=True)
    if done.returncode == 0:
        raise Failure("C++ loaded the broken tree")
    cpp = done.stderr.strip()
    if not (cpp.endswith(": Transition.next.state: dtype must be float32 (got float64)")
            and python == "Observation.state: dtype must be float32 (got float64)"):
        raise Failure(f"C++: {cpp}\nPython: {python}")


def check_h5_load_contract(tool: Path, work: Path) -> None:
    """An h5 file that breaks the contract is refused by from_h5 on both sides, in the same words."""
    from tc.rl import Observation

    obs = make_instance(Observation, [2], True)
    obs.state = obs.state.double()  # assignment does not run the checks
    path = work / "broken-observation.h5"
    obs.to_h5(path)
    python = python_error(lambda: Observation.from_h5(path))
    done = subprocess.run([str(tool), "load", "tc.rl.Observation", str(path)], capture_output=True, text=True)
    cpp = done.stderr.strip()
    if done.returncode == 0 or python != "Observation.state: dtype must be float32 (got float64)" or not cpp.endswith(
        ": " + python
    ):
        raise Failure(f"C++: {cpp}\nPython: {python}")


def check_per_element_tasks(tool: Path, work: Path) -> None:
    """tct.stack.Episode: Python's per-element tasks, retasked at element 1 by C++, read back in Python."""
    from tct.stack import Episode

    tasks = ["walk", "run", "jump"]
    obs = torch.arange(6, dtype=torch.float32).view(3, 2)
    episodes = [Episode(obs=obs[i], task=t, seed=i, batch_size=[]) for i, t in enumerate(tasks)]
    batch = torch.stack(episodes)
    if not isinstance(batch._tensordict.get("task"), NonTensorStack):
        raise Failure(f"Python stored {type(batch._tensordict.get('task'))}, not a NonTensorStack")
    src, dst = work / "per-element-tasks", work / "per-element-tasks-retasked"
    batch.memmap(src)
    seen = json.loads(run_tool(tool, "retask", str(src), str(dst)))
    if seen != tasks:
        raise Failure(f"C++ read the tasks {seen}, Python wrote {tasks}")
    back = Episode.load_memmap(dst)
    expected_tasks = [["walk", "retasked", "jump"]] * 2
    if [list(row) for row in back.task] != expected_tasks:
        raise Failure(f"Python read back {back.task}, expected {expected_tasks}")
    if [list(row) for row in back.seed] != [[0, 99, 2]] * 2:
        raise Failure(f"Python read back the seeds {back.seed}")
    if not torch.equal(back.obs, torch.stack([obs, obs])):
        raise Failure("the tensors changed on the way")


# ---- running ---------------------------------------------------------------------


def check_cpp_to_py(case: dict) -> None:
    cls = load_class(case["class"])
    typed = cls.load_memmap(case["path"])
    if type(typed) is not cls:
        raise Failure(f"{cls.__name__}.load_memmap gave a {type(typed)}")
    compare(case["expected"], canonical(typed))
    generic = TensorDict.load_memmap(case["path"])
    if type(generic) is not cls:
        raise Failure(f"TensorDict.load_memmap gave a {type(generic)}, not the generated {cls}")


def check_py_to_cpp(tool: Path, work: Path, name: str, with_optional: bool) -> None:
    obj = make_instance(load_class(name), [2, 3], with_optional)
    if not is_tensorclass(obj):
        raise Failure(f"{name} is no tensorclass")
    path = work / (name + ("" if with_optional else "-sparse"))
    obj.memmap(path)
    compare(canonical(obj), json.loads(run_tool(tool, "load", name, str(path))))


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tool", required=True, type=Path, action="append",
                        help="a schema_tool executable (repeatable; the first one runs the contract cases)")
    parser.add_argument("--modules", required=True, type=Path, help="where tensorclass-gen --lang python wrote")
    parser.add_argument("--work", required=True, type=Path, help="a scratch directory (emptied first)")
    args = parser.parse_args()
    sys.path.insert(0, str(args.modules))
    shutil.rmtree(args.work, ignore_errors=True)
    (args.work / "py").mkdir(parents=True)

    checks = []
    classes: dict[str, Path] = {}  # class -> the tool that has it
    written = []
    try:
        for i, tool in enumerate(args.tool):
            classes.update({name: tool for name in run_tool(tool, "classes").split()})
            run_tool(tool, "write", str(args.work / f"cpp{i}"))
            written += json.loads((args.work / f"cpp{i}" / "manifest.json").read_text())
    except Failure as e:
        print(f"FAIL  schema_tool: {e}")
        return 1
    for case in written:
        label = f"cpp->py/{Path(case['path']).name}"
        checks.append((label, lambda c=case: check_cpp_to_py(c)))
    for name, tool in classes.items():
        for with_optional in (True, False):
            label = f"py->cpp/{name}{'' if with_optional else '-sparse'}"
            checks.append((label, lambda n=name, t=tool, o=with_optional: check_py_to_cpp(t, args.work / "py", n, o)))
    main_tool = args.tool[0]
    for case in CONTRACT_CASES:
        checks.append((f"contract/{case}", lambda c=case: check_contract(main_tool, c)))
    checks.append(("contract/on load", lambda: check_load_contract(main_tool, args.work)))
    checks.append(("contract/on h5 load", lambda: check_h5_load_contract(main_tool, args.work)))
    checks.append(("per-element tasks", lambda: check_per_element_tasks(main_tool, args.work)))

    passed = failed = skipped = 0
    for label, check in checks:
        why = skip_reason(label)
        if why is not None:
            skipped += 1
            print(f"SKIP  {label}: {why}")
            continue
        error = error_of(check)
        if error is None:
            passed += 1
            print(f"PASS  {label}")
        else:
            failed += 1
            print(f"FAIL  {label}")
            print("      " + error.replace("\n", "\n      "))
    if skipped:
        print(f"{skipped} skipped (listed above, with their reasons)")
    print(f"{passed} passed, {failed} failed")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
