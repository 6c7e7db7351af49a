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

A generated class may be a TypedTensorDict (a schema's ``python_form``): it
loads the same trees; what it writes is a TensorDict tree, which C++ loads
with ``from_tensordict`` (``schema_tool load-tensordict``). A class whose
TypedTensorDicts are beside its @tensorclasses (``python_form: both``) is
also loaded as its TypedTensorDict. With ``--typed`` the modules are all
TypedTensorDicts (``--python-form typed_tensordict``): the classes of schemas
that have no such form (the generator refuses them) are skipped, and
``--attributes`` checks the generator's list of TypedTensorDict's attributes
against the tensordict under test.

Plain Python: ``python run_schemas.py --tool <schema_tool> [--tool ...] --modules <dir> --work <dir>
[--typed] [--attributes <generator/data/typed_tensordict_attributes.txt>]``.
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
from tensordict import NonTensorStack, PersistentTensorDict, TensorDict, TypedTensorDict, is_tensorclass

sys.path.insert(0, str(Path(__file__).resolve().parent))
from run_interop import Failure, canonical, compare, error_of, run_tool, skip_reason, values  # noqa: E402

warnings.filterwarnings("ignore", category=FutureWarning)
warnings.filterwarnings("ignore", category=UserWarning)


def load_class(name: str) -> type:
    module, _, cls = name.rpartition(".")
    return getattr(importlib.import_module(module), cls)


def is_typed(cls: type) -> bool:
    """Whether a generated class is a TypedTensorDict (python_form typed_tensordict or both)."""
    return isinstance(cls, type) and issubclass(cls, TypedTensorDict)


def typed_beside(name: str) -> type | None:
    """The TypedTensorDict beside the @tensorclass `name` (python_form both), if its schema has one."""
    module, _, cls = name.rpartition(".")
    try:
        beside = getattr(importlib.import_module(module + ".typed"), cls)
    except (ModuleNotFoundError, AttributeError):  # no such module, or another schema's
        return None
    return beside if is_typed(beside) else None


def tensorclass_names(canonical_form):
    """A canonical form with the class names C++ writes: a TypedTensorDict beside a @tensorclass
    (python_form both, module `<module>.typed`) is named there after the @tensorclass it mirrors."""
    if isinstance(canonical_form, list):
        return [tensorclass_names(item) for item in canonical_form]
    if not isinstance(canonical_form, dict):
        return canonical_form
    out = {key: tensorclass_names(value) for key, value in canonical_form.items()}
    name = out.get("class")
    if isinstance(name, str) and name.startswith("<class '") and name.endswith("'>"):
        module, _, cls = name[len("<class '"):-len("'>")].rpartition(".")
        tensorclass_module = sys.modules.get(module.removesuffix(".typed")) if module.endswith(".typed") else None
        if tensorclass_module is not None and is_tensorclass(getattr(tensorclass_module, cls, None)):
            out["class"] = f"<class '{tensorclass_module.__name__}.{cls}'>"
    return out


def field_annotations(cls: type) -> dict:
    """The annotations of a generated class's fields (a TypedTensorDict's own: get_type_hints would
    also read TensorDictBase's)."""
    return dict(cls.__dict__["__annotations__"]) if is_typed(cls) else typing.get_type_hints(cls)


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
    hints = field_annotations(cls)
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
    # A TypedTensorDict writes a TensorDict tree: C++ loads it with from_tensordict.
    load = "load-tensordict" if is_typed(Transition) else "load"
    done = subprocess.run([str(tool), load, "tc.rl.Transition", str(path)], capture_output=True, text=True)
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
    if is_typed(Observation):
        # TensorDictBase.from_h5 gives the file's PersistentTensorDict; the class wraps it, checked.
        python = python_error(lambda: Observation.from_tensordict(PersistentTensorDict.from_h5(path)))
    else:
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
    typed = is_typed(Episode)
    stored = batch._get_str("task", None) if typed else batch._tensordict.get("task")
    if not isinstance(stored, NonTensorStack):
        raise Failure(f"Python stored {type(stored)}, not a NonTensorStack")
    src, dst = work / "per-element-tasks", work / "per-element-tasks-retasked"
    batch.memmap(src)
    # A TypedTensorDict writes a TensorDict tree: C++ loads it with from_tensordict.
    seen = json.loads(run_tool(tool, "retask", str(src), str(dst), *(["tensordict"] if typed else [])))
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
    compare(case["expected"], tensorclass_names(canonical(typed)))
    generic = TensorDict.load_memmap(case["path"])
    if type(generic) is not cls:
        raise Failure(f"TensorDict.load_memmap gave a {type(generic)}, not the generated {cls}")
    if is_typed(cls):
        # A TypedTensorDict loads C++'s trees into new instances only.
        try:
            cls.load_memmap(case["path"], out=typed)
        except NotImplementedError as e:
            if str(e) != f"{cls.__name__} loads into a new instance only (out= was given)":
                raise Failure(f"load_memmap(out=...): {e}") from None
        else:
            raise Failure("load_memmap(out=...) loaded into the instance given")


def check_cpp_to_typed_beside(case: dict, cls: type) -> None:
    """The TypedTensorDict beside a @tensorclass loads what C++ wrote as an instance of itself, nested
    classes too; only the class names (its module's) differ from the @tensorclass's."""
    loaded = cls.load_memmap(case["path"])
    if type(loaded) is not cls:
        raise Failure(f"{cls.__name__}.load_memmap gave a {type(loaded)}")
    compare(case["expected"], tensorclass_names(canonical(loaded)))


def check_py_to_cpp(tool: Path, work: Path, name: str, with_optional: bool) -> None:
    cls = load_class(name)
    obj = make_instance(cls, [2, 3], with_optional)
    if is_typed(cls):
        if type(obj) is not cls:
            raise Failure(f"{name}(...) gave a {type(obj)}")
    elif not is_tensorclass(obj):
        raise Failure(f"{name} is no tensorclass")
    path = work / (name + ("" if with_optional else "-sparse"))
    obj.memmap(path)
    # A TypedTensorDict writes a TensorDict tree: C++ loads it with from_tensordict.
    load = "load-tensordict" if is_typed(cls) else "load"
    compare(tensorclass_names(canonical(obj)), json.loads(run_tool(tool, load, name, str(path))))


def check_attributes(listed: Path) -> None:
    """The generator's list of TypedTensorDict's public attributes (the field names it refuses in that
    form) is the tensordict under test's."""
    names = {line for line in listed.read_text().splitlines() if line and not line.startswith("#")}
    actual = {name for name in dir(TypedTensorDict) if not name.startswith("_")}
    if names != actual:
        raise Failure(
            f"{listed.name} lists {sorted(names - actual)}, which TypedTensorDict lacks, "
            f"and lacks {sorted(actual - names)}"
        )


def missing_module(name: str, typed: bool) -> str | None:
    """Why the class `name` cannot be checked here, if it cannot: with --typed, its schema has no
    TypedTensorDict form; a TypedTensorDict module under tensordict 0.14 refuses to import."""
    try:
        load_class(name)
    except (ModuleNotFoundError, AttributeError):  # no module, or a package holding other schemas' modules
        if not typed:
            raise
        return "its schema has fields a TypedTensorDict cannot hold: tensorclass-gen refuses it in that form"
    except ImportError as e:
        return str(e)
    return None



def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tool", required=True, type=Path, action="append",
                        help="a schema_tool executable (repeatable; the first one runs the contract cases)")
    parser.add_argument("--modules", required=True, type=Path, help="where tensorclass-gen --lang python wrote")
    parser.add_argument("--work", required=True, type=Path, help="a scratch directory (emptied first)")
    parser.add_argument("--typed", action="store_true",
                        help="the modules are TypedTensorDicts (--python-form typed_tensordict)")
    parser.add_argument("--attributes", type=Path,
                        help="the generator's list of TypedTensorDict's attributes, checked against tensordict's")
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
    # Classes that cannot be checked here, and the checks skipped for that, with the reason.
    absent = {name: why for name in classes if (why := missing_module(name, args.typed)) is not None}
    skip_reasons: dict[str, str] = {}
    for case in written:
        label = f"cpp->py/{Path(case['path']).name}"
        checks.append((label, lambda c=case: check_cpp_to_py(c)))
        if case["class"] in absent:
            skip_reasons[label] = absent[case["class"]]
            continue
        # tensordict 0.14's TypedTensorDict has no field defaults: the generated ones refuse to import.
        beside = typed_beside(case["class"]) if hasattr(TypedTensorDict, "__field_defaults__") else None
        if beside is not None:
            label = f"cpp->py (TypedTensorDict beside)/{Path(case['path']).name}"
            checks.append((label, lambda c=case, b=beside: check_cpp_to_typed_beside(c, b)))
    for name, tool in classes.items():
        for with_optional in (True, False):
            label = f"py->cpp/{name}{'' if with_optional else '-sparse'}"
            checks.append((label, lambda n=name, t=tool, o=with_optional: check_py_to_cpp(t, args.work / "py", n, o)))
            if name in absent:
                skip_reasons[label] = absent[name]
    if args.attributes is not None:
        checks.append(("TypedTensorDict attributes", lambda: check_attributes(args.attributes)))
    main_tool = args.tool[0]
    for case in CONTRACT_CASES:
        checks.append((f"contract/{case}", lambda c=case: check_contract(main_tool, c)))
    checks.append(("contract/on load", lambda: check_load_contract(main_tool, args.work)))
    checks.append(("contract/on h5 load", lambda: check_h5_load_contract(main_tool, args.work)))
    checks.append(("per-element tasks", lambda: check_per_element_tasks(main_tool, args.work)))

    passed = failed = skipped = 0
    for label, check in checks:
        why = skip_reason(label) or skip_reasons.get(label)
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
