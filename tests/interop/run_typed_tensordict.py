#!/usr/bin/env python3
"""tensordict's own TypedTensorDict tests, run on classes tensorclass-gen generated.

The fixture classes of tensordict's ``test/tensorclass/test_typedtensordict.py``
are the schema ``tests/interop/schemas/typed_ports.yaml`` (python_form
typed_tensordict); each case below names the test it ports
(``test_typedtensordict.py::<class>::<test>``). A schema has no inheritance
and no class options, so ``TestInheritance`` and ``TestClassOptions`` (shadow,
frozen, the deprecated options) are not ported; the generator refuses a field
that would shadow an attribute (tests/generator/test_cli.cpp), which
``test_shadow_blocks_by_default`` and ``test_data_requires_shadow`` check in
tensordict. An optional field is declared with a ``None`` default, as
``PortableOptionalState.noise`` is: reading it unset gives ``None`` where
``NotRequired`` raises AttributeError (docs/differences.md). The cases
after the ports check what the generated classes add: the schema's contract
where data comes in, non-tensor fields held as one value, loading.

Under tensordict 0.14 the generated modules refuse to import (TypedTensorDict
has no field defaults there): that, and its message, is what is checked.

Plain Python: ``python run_typed_tensordict.py --modules <dir> --work <dir>``.
"""

from __future__ import annotations

import argparse
import importlib
import os
import shutil
import sys
import tempfile
import warnings
from pathlib import Path

import torch
from tensordict import TensorDict, TensorDictBase, TypedTensorDict, lazy_stack

sys.path.insert(0, str(Path(__file__).resolve().parent))
from run_interop import Failure, error_of  # noqa: E402

warnings.filterwarnings("ignore", category=FutureWarning)
warnings.filterwarnings("ignore", category=UserWarning)

PORTED = "test_typedtensordict.py::"


def expect(condition: bool, what: str) -> None:
    if not condition:
        raise Failure(what)


def raises(error: type, words: str, call) -> str:
    """Runs call(), which must raise `error` with a message holding `words`; returns the message."""
    try:
        call()
    except error as e:
        if words not in str(e):
            raise Failure(f"{error.__name__} without {words!r}: {e}") from None
        return str(e)
    raise Failure(f"no {error.__name__} (expected one with {words!r})")


# ---- the ports ---------------------------------------------------------------------


def ported_cases(ports) -> dict:
    PredictorState, ObservedState, Empty = ports.PredictorState, ports.ObservedState, ports.Empty

    def predictor(*batch: int, eta=(3,), x=(4,), beta=(1,)) -> TypedTensorDict:
        return PredictorState(
            eta=torch.randn(*batch, *eta), X=torch.randn(*batch, *x), beta=torch.randn(*batch, *beta),
            batch_size=list(batch),
        )

    def observed(**extra) -> TypedTensorDict:
        return ObservedState(eta=torch.randn(3), X=torch.randn(3), beta=torch.randn(3), y=torch.randn(3),
                             mu=torch.randn(3), batch_size=[3], **extra)

    def make_td() -> TensorDict:
        return TensorDict({"eta": torch.randn(5, 3), "X": torch.randn(5, 4), "beta": torch.randn(5, 1)}, batch_size=[5])

    cases = {}

    def case(name):
        def register(check):
            cases[PORTED + name] = check
            return check

        return register

    # TestConstruction
    @case("TestConstruction::test_basic_construction")
    def _():
        state = predictor(5)
        expect(isinstance(state, PredictorState) and isinstance(state, TypedTensorDict), "not a PredictorState")
        expect(isinstance(state, TensorDictBase), "not a TensorDictBase")
        expect(state.batch_size == torch.Size([5]), f"batch size {state.batch_size}")

    @case("TestConstruction::test_missing_required_field")
    def _():
        message = raises(TypeError, "missing required field",
                         lambda: PredictorState(eta=torch.randn(5, 3), X=torch.randn(5, 4), batch_size=[5]))
        expect("beta" in message, message)

    @case("TestConstruction::test_extra_field")
    def _():
        message = raises(TypeError, "unexpected field", lambda: PredictorState(
            eta=torch.randn(5, 3), X=torch.randn(5, 4), beta=torch.randn(5, 1), z=torch.randn(5), batch_size=[5]))
        expect("z" in message, message)

    @case("TestConstruction::test_device")
    def _():
        state = PredictorState(eta=torch.randn(3), X=torch.randn(3), beta=torch.randn(3), batch_size=[3], device="cpu")
        expect(state.device == torch.device("cpu"), f"device {state.device}")

    @case("TestConstruction::test_names")
    def _():
        state = PredictorState(eta=torch.randn(3, 2), X=torch.randn(3, 2), beta=torch.randn(3, 2), batch_size=[3, 2],
                               names=["batch", "time"])
        expect(state.names == ["batch", "time"], f"names {state.names}")

    @case("TestConstruction::test_multidim_batch")
    def _():
        expect(predictor(4, 6, eta=(1,), x=(3,)).batch_size == torch.Size([4, 6]), "batch size")

    @case("TestConstruction::test_default_field_is_optional")
    def _():
        state = observed()
        expect(state.noise is None, f"noise {state.noise}")
        expect("noise" not in state, "noise stored")
        expect(ObservedState.__optional_keys__ == frozenset({"noise"}), f"{ObservedState.__optional_keys__}")

    @case("TestConstruction::test_default_field_can_be_set")
    def _():
        noise = torch.randn(3)
        expect(observed(noise=noise).noise is noise, "noise is not the tensor given")

    @case("TestConstruction::test_static_field_contract (the fields' types and the required fields)")
    def _():
        check_static_contract()

    # TestFieldAccess
    @case("TestFieldAccess::test_attribute_access")
    def _():
        state = predictor(3, eta=(2,))
        expect((state.eta.shape, state.X.shape, state.beta.shape) == ((3, 2), (3, 4), (3, 1)), "shapes")

    @case("TestFieldAccess::test_string_key_access")
    def _():
        state = predictor(3, eta=(2,))
        expect((state["eta"].shape, state["X"].shape, state["beta"].shape) == ((3, 2), (3, 4), (3, 1)), "shapes")

    @case("TestFieldAccess::test_attribute_set")
    def _():
        state = predictor(3, eta=(2,))
        state.eta = torch.ones(3, 2)
        expect(bool((state.eta == 1).all()), "eta not set")

    @case("TestFieldAccess::test_string_key_set")
    def _():
        state = predictor(3, eta=(2,))
        state["eta"] = torch.ones(3, 2)
        expect(bool((state["eta"] == 1).all()), "eta not set")

    @case("TestFieldAccess::test_attribute_error_undeclared")
    def _():
        raises(AttributeError, "nonexistent", lambda: predictor(3).nonexistent)

    @case("TestFieldAccess::test_keys")
    def _():
        expect(set(predictor(3).keys()) == {"eta", "X", "beta"}, "keys")

    def nested_keys(backend: str) -> None:
        from tensordict.base import _default_is_leaf

        source = TensorDict({"eta": torch.ones(3), "X": torch.zeros(3), "beta": torch.ones(3)}, [3])
        if backend == "lazy":
            source = lazy_stack([source, source], 0)
        elif backend == "memmap":
            source = source.memmap(tempfile.mkdtemp(dir=WORK))
        state = PredictorState.from_tensordict(source)
        outer = TensorDict({"state": state}, source.batch_size)
        keys = set(outer.keys(True, True, is_leaf=_default_is_leaf))
        expect(keys == {("state", "eta"), ("state", "X"), ("state", "beta")}, f"keys {keys}")
        expect(all(torch.equal(outer.get(key), source.get(key[-1])) for key in keys), "values")

    for backend in ("dense", "lazy", "memmap"):
        cases[PORTED + f"TestFieldAccess::test_nested_keys_with_leaf_predicate[{backend}]"] = (
            lambda b=backend: nested_keys(b))

    # TestSpreading
    @case("TestSpreading::test_spread_to_dict")
    def _():
        d = dict(**predictor(3, eta=(), x=(), beta=()))
        expect(set(d) == {"eta", "X", "beta"} and all(isinstance(v, torch.Tensor) for v in d.values()), f"{d}")

    @case("TestSpreading::test_spread_to_child")
    def _():
        obs = ObservedState(**predictor(5), y=torch.randn(5, 3), mu=torch.randn(5, 3), batch_size=[5])
        expect(isinstance(obs, ObservedState), "not an ObservedState")
        expect(set(obs.keys()) == {"eta", "X", "beta", "y", "mu"}, f"keys {set(obs.keys())}")

    @case("TestSpreading::test_pipeline_transition")
    def _():
        state = predictor(5)
        eta = state.eta
        y = eta + torch.randn_like(eta) * 0.1
        obs = ObservedState(**state, y=y, mu=eta, batch_size=state.batch_size)
        expect(obs.y.shape == eta.shape and bool((obs.eta == eta).all()), "values")

    # TestNotRequired (an optional field is PortableOptionalState's: a None default)
    @case("TestNotRequired::test_optional_omitted")
    def _():
        obs = observed()
        expect("noise" not in obs and set(obs.keys()) == {"eta", "X", "beta", "y", "mu"}, "keys")

    @case("TestNotRequired::test_optional_provided")
    def _():
        obs = observed(noise=torch.randn(3))
        expect("noise" in obs and obs.noise.shape == (3,), "noise")

    @case("TestNotRequired::test_access_missing_optional (differs: None, not AttributeError)")
    def _():
        expect(observed().noise is None, "an unset optional field reads as None")

    # TestTensorDictOps
    def op(name: str, check) -> None:
        cases[PORTED + f"TestTensorDictOps::{name}"] = lambda: check(predictor(5))

    op("test_clone", lambda s: expect(isinstance(s.clone(), PredictorState)
                                      and bool((s.clone()["eta"] == s["eta"]).all()), "clone"))
    op("test_slice", lambda s: expect(s[0:3].batch_size == torch.Size([3]) and s[0:3]["eta"].shape[0] == 3, "slice"))
    op("test_index", lambda s: expect(s[0].batch_size == torch.Size([]) and s[0]["eta"].shape == (3,), "index"))
    op("test_to_device", lambda s: expect(s.to("cpu").device == torch.device("cpu"), "to"))
    op("test_contiguous", lambda s: expect(set(s.contiguous().keys()) == set(s.keys()), "contiguous"))
    op("test_unbind", lambda s: expect(len(s.unbind(0)) == 5, "unbind"))
    op("test_apply", lambda s: expect(bool((s.apply(lambda x: x * 2)["eta"] == s["eta"] * 2).all()), "apply"))
    op("test_to_dict", lambda s: expect(set(s.to_dict()) == {"eta", "X", "beta"}, "to_dict"))
    op("test_select", lambda s: expect(set(s.select("eta", "X").keys()) == {"eta", "X"}, "select"))
    op("test_exclude", lambda s: expect(set(s.exclude("beta").keys()) == {"eta", "X"}, "exclude"))

    @case("TestTensorDictOps::test_update")
    def _():
        state = predictor(5)
        state.update({"eta": torch.ones(5, 3)})
        expect(bool((state["eta"] == 1).all()), "update")

    @case("TestTensorDictOps::test_stack")
    def _():
        stacked = torch.stack([predictor(3, eta=(), x=(), beta=()) for _ in range(4)], dim=0)
        expect(stacked.batch_size == torch.Size([4, 3]), f"batch size {stacked.batch_size}")

    @case("TestTensorDictOps::test_cat")
    def _():
        catted = torch.cat([predictor(3, eta=(2,), x=(2,), beta=(2,)) for _ in range(4)], dim=0)
        expect(catted.batch_size == torch.Size([12]), f"batch size {catted.batch_size}")

    # TestEdgeCases
    @case("TestEdgeCases::test_empty_subclass")
    def _():
        e = Empty(batch_size=[3])
        expect(e.batch_size == torch.Size([3]) and len(e.keys()) == 0, "empty")

    @case("TestEdgeCases::test_batch_iter")
    def _():
        expect(len(list(predictor(4, eta=(3,), x=(3,), beta=(3,)))) == 4, "iteration")

    @case("TestEdgeCases::test_contains")
    def _():
        state = predictor(3)
        expect("eta" in state and "nonexistent" not in state, "contains")

    @case("TestEdgeCases::test_len")
    def _():
        expect(len(predictor(4)) == 4, "len")

    @case("TestEdgeCases::test_repr")
    def _():
        expect("PredictorState" in repr(predictor(3)), repr(predictor(3)))

    # TestFromTensordict
    @case("TestFromTensordict::test_from_tensordict_basic")
    def _():
        td = make_td()
        state = PredictorState.from_tensordict(td)
        expect(isinstance(state, PredictorState) and isinstance(state, TensorDictBase), "class")
        expect(state.batch_size == torch.Size([5]) and state.eta.shape == (5, 3), "shape")
        expect(state._source is td, "the tensordict is not wrapped")

    @case("TestFromTensordict::test_from_tensordict_missing_key")
    def _():
        raises(TypeError, "missing required field",
               lambda: PredictorState.from_tensordict(TensorDict({"eta": torch.randn(5, 3)}, batch_size=[5])))

    @case("TestFromTensordict::test_from_tensordict_extra_keys")
    def _():
        td = make_td()
        td["extra"] = torch.randn(5)
        state = PredictorState.from_tensordict(td)
        expect(isinstance(state, PredictorState) and "extra" in state.keys(), "extra key")

    @case("TestFromTensordict::test_from_tensordict_lazy_stack")
    def _():
        members = [TensorDict({"eta": torch.randn(3), "X": torch.randn(4), "beta": torch.randn(1)}, batch_size=[])
                   for _ in range(2)]
        state = PredictorState.from_tensordict(lazy_stack(members))
        expect(isinstance(state, PredictorState) and state.batch_size == torch.Size([2]), "lazy stack")
        expect(state.eta.shape == (2, 3), f"eta {state.eta.shape}")

    @case("TestFromTensordict::test_from_tensordict_memmap")
    def _():
        state = PredictorState.from_tensordict(make_td().memmap_(tempfile.mkdtemp(dir=WORK)))
        expect(isinstance(state, PredictorState) and state._is_memmap and state.eta.shape == (5, 3), "memmap")

    @case("TestFromTensordict::test_from_tensordict_live_link")
    def _():
        td = make_td()
        state = PredictorState.from_tensordict(td)
        state.eta = torch.ones(5, 3)
        expect(bool((td["eta"] == 1).all()), "the write did not reach the tensordict")

    @case("TestFromTensordict::test_from_tensordict_operations")
    def _():
        state = PredictorState.from_tensordict(make_td())
        expect(isinstance(state.clone(), PredictorState), "clone")
        expect(isinstance(state[0], PredictorState) and state[0].batch_size == torch.Size([]), "index")
        expanded = state.expand(2, 5)
        expect(isinstance(expanded, PredictorState) and expanded.batch_size == torch.Size([2, 5]), "expand")

    @case("TestFromTensordict::test_from_tensordict_stack")
    def _():
        stacked = torch.stack([PredictorState.from_tensordict(make_td()), PredictorState.from_tensordict(make_td())])
        expect(isinstance(stacked, PredictorState) and stacked.batch_size == torch.Size([2, 5]), "stack")

    @case("TestFromTensordict::test_from_tensordict_check_false_empty")
    def _():
        state = PredictorState.from_tensordict(TensorDict({}, batch_size=[5]), check=False)
        expect(isinstance(state, PredictorState) and state.batch_size == torch.Size([5]), "class")
        expect(len(list(state.keys())) == 0, "keys")

    @case("TestFromTensordict::test_from_tensordict_check_false_partial")
    def _():
        state = PredictorState.from_tensordict(TensorDict({"eta": torch.randn(5, 3)}, batch_size=[5]), check=False)
        expect(state.eta.shape == (5, 3), "eta")
        raises(AttributeError, "declared but not set", lambda: state.X)

    @case("TestFromTensordict::test_from_tensordict_check_false_then_fill")
    def _():
        state = PredictorState.from_tensordict(TensorDict({}, batch_size=[5]), check=False)
        state["eta"], state["X"], state["beta"] = torch.randn(5, 3), torch.randn(5, 4), torch.randn(5, 1)
        expect(state.eta.shape == (5, 3) and set(state.keys()) == {"eta", "X", "beta"}, "filled")

    @case("TestFromTensordict::test_from_tensordict_check_true_rejects_empty")
    def _():
        raises(TypeError, "missing required field",
               lambda: PredictorState.from_tensordict(TensorDict({}, batch_size=[5])))

    return cases


def check_static_contract() -> None:
    """test_static_field_contract: mypy reads the generated classes' fields, their types and which
    are required. tensordict's test also expects an unknown keyword and an unknown attribute to be
    refused, against stand-in stubs of tensordict; with tensordict 0.15.3's own annotations, which
    the generated modules are checked with, mypy takes both for any TypedTensorDict subclass."""
    from mypy import api

    valid = WORK / "valid.py"
    valid.write_text(
        "from typing import Optional\n"
        "import torch\n"
        "from typing_extensions import assert_type\n"
        "from tct.ports import ObservedState, PredictorState\n"
        "t = torch.zeros(3)\n"
        "state = PredictorState(eta=t, X=t, beta=t, batch_size=[3], device='cpu')\n"
        "obs = ObservedState(eta=t, X=t, beta=t, y=t, mu=t)\n"
        "assert_type(state.eta, torch.Tensor)\n"
        "assert_type(obs.noise, Optional[torch.Tensor])\n"
    )
    invalid = WORK / "invalid.py"
    invalid.write_text(
        "import torch\n"
        "from tct.ports import PredictorState\n"
        "t = torch.zeros(3)\n"
        "PredictorState(eta=t)\n"
        "PredictorState(eta='bad', X=t, beta=t)\n"
    )
    # The generated modules are found on MYPYPATH; mypy's cache is check_modules.py's.
    os.environ["MYPYPATH"] = str(MODULES)
    common = ["--cache-dir", str(Path(sys.prefix) / "mypy-cache")]
    stdout, stderr, status = api.run([*common, str(valid)])
    expect(status == 0, f"mypy refused valid uses:\n{stdout}{stderr}")
    stdout, stderr, status = api.run([*common, str(invalid)])
    expect(status == 1, f"mypy took invalid uses:\n{stdout}{stderr}")
    for words in ('Missing named argument "X"', 'incompatible type "str"'):
        expect(words in stdout, f"mypy did not say {words!r}:\n{stdout}")


# ---- what the generated classes add ------------------------------------------------


def schema_cases(ports) -> dict:
    Checked, PredictorState = ports.Checked, ports.PredictorState

    def checked(*, obs=None, target=None, batch=(2,), **fields) -> TypedTensorDict:
        return Checked(obs=torch.zeros(*batch, 3) if obs is None else obs,
                       target=torch.zeros(*batch, 3) if target is None else target,
                       batch_size=list(batch), **fields)

    def inner(batch) -> TensorDict:
        return TensorDict({"eta": torch.zeros(batch), "X": torch.zeros(batch), "beta": torch.zeros(batch)}, [batch])

    cases = {}

    def case(name):
        def register(check):
            cases[name] = check
            return check

        return register

    @case("contract: a declared dtype, on construction")
    def _():
        message = raises(ValueError, "", lambda: checked(obs=torch.zeros(2, 3, dtype=torch.float64)))
        expect(message == "Checked.obs: dtype must be float32 (got float64)", message)

    @case("contract: a symbolic dim shared by two fields")
    def _():
        message = raises(ValueError, "", lambda: checked(target=torch.zeros(2, 4)))
        expect(message == "Checked.target: symbolic dim D is 3 in obs but 4 in target (dim 1)", message)

    @case("contract: the schema's batch dims, named")
    def _():
        message = raises(ValueError, "", lambda: checked(batch=(2, 5)))
        expect(message == "Checked: batch size [2, 5] must have 1 dims (env)", message)
        expect(checked().names == ["env"], f"names {checked().names}")

    @case("contract: from_tensordict checks it, check=False does not")
    def _():
        td = TensorDict({"obs": torch.zeros(2, 3), "target": torch.zeros(2, 4)}, [2])
        message = raises(ValueError, "", lambda: Checked.from_tensordict(td))
        expect(message == "Checked.target: symbolic dim D is 3 in obs but 4 in target (dim 1)", message)
        expect(isinstance(Checked.from_tensordict(td, check=False), Checked), "check=False")

    @case("contract: from_dict checks it")
    def _():
        message = raises(ValueError, "", lambda: Checked.from_dict(
            {"obs": torch.zeros(2, 3), "target": torch.zeros(2, 3, dtype=torch.int64)}, batch_size=[2]))
        expect(message == "Checked.target: dtype must be float32 (got int64)", message)

    @case("contract: a nested plain tensordict, against the nested class's")
    def _():
        td = TensorDict({"obs": torch.zeros(2, 3), "target": torch.zeros(2, 3), "inner": inner(2).exclude("beta")}, [2])
        message = raises(ValueError, "", lambda: Checked.from_tensordict(td))
        expect(message == "Checked.inner.beta: required field is not set", message)

    @case("contract: a tensor field holding something else")
    def _():
        td = TensorDict({"obs": torch.zeros(2, 3), "target": torch.zeros(2, 3)}, [2])
        td.set_non_tensor("target", "text")
        message = raises(ValueError, "", lambda: Checked.from_tensordict(td))
        expect(message == "Checked.target: expected a tensor, got NonTensorData", message)

    @case("contract: a required field given as None")
    def _():
        message = raises(ValueError, "", lambda: Checked(obs=torch.zeros(2, 3), target=None, batch_size=[2]))
        expect(message == "Checked.target: required field is not set", message)

    @case("non-tensor fields: stored with their defaults, read as values")
    def _():
        c = checked()
        expect({"task", "tags", "seed"} <= set(c.keys()), f"keys {set(c.keys())}")
        expect((c.task, c.tags, c.seed) == ("reach", (1, 2), 0), f"{(c.task, c.tags, c.seed)}")

    @case("non-tensor fields: a list<T> stays one tuple, whatever its length")
    def _():
        c = checked(tags=(4, 5))  # as long as the batch dim: tensordict would split it
        expect(c.tags == (4, 5), f"tags {c.tags!r}")
        c.tags = [7, 8, 9]
        expect(c.tags == (7, 8, 9), f"tags {c.tags!r}")
        c.task = "walk"
        expect(c.task == "walk" and c["task"] == "walk", f"task {c.task!r}")

    @case("non-tensor fields: a NonTensorStack field keeps one value per element")
    def _():
        batch = torch.cat([checked(batch=(1,), seed=i) for i in range(3)])
        expect(batch.seed == [0, 1, 2], f"seed {batch.seed}")
        expect(batch[1].seed == 1, f"seed {batch[1].seed}")

    @case("loading: a TypedTensorDict's TensorDict tree loads as the class, nested classes too")
    def _():
        c = checked(inner=PredictorState.from_tensordict(inner(2)), task="walk")
        path = WORK / "checked"
        c.memmap(path)
        back = Checked.load_memmap(path)
        expect(type(back) is Checked and type(back.inner) is PredictorState, f"{type(back)}, {type(back.inner)}")
        expect((back.task, back.tags) == ("walk", (1, 2)), f"{(back.task, back.tags)}")
        expect(torch.equal(back.obs, c.obs), "obs")

    @case("loading: a tree that breaks the contract is refused")
    def _():
        c = checked()
        c.obs = torch.zeros(2, 3, dtype=torch.float64)  # assignment does not check
        path = WORK / "broken"
        c.memmap(path)
        message = raises(ValueError, "", lambda: Checked.load_memmap(path))
        expect(message == "Checked.obs: dtype must be float32 (got float64)", message)

    return cases


# ---- running -----------------------------------------------------------------------

WORK = Path()  # the scratch directory
MODULES = Path()  # where the generated modules are


def main() -> int:
    global WORK, MODULES
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--modules", required=True, type=Path, help="where tensorclass-gen --lang python wrote")
    parser.add_argument("--work", required=True, type=Path, help="a scratch directory (emptied first)")
    args = parser.parse_args()
    sys.path.insert(0, str(args.modules))
    WORK, MODULES = args.work, args.modules.resolve()
    shutil.rmtree(WORK, ignore_errors=True)
    WORK.mkdir(parents=True)

    if not hasattr(TypedTensorDict, "__field_defaults__"):
        try:
            importlib.import_module("tct.ports")
        except ImportError as e:
            expected = "tct.ports needs tensordict 0.15 or later: its TypedTensorDict takes field defaults"
            ok = str(e) == expected
            print(f"{'PASS' if ok else 'FAIL'}  import refused under tensordict 0.14")
            if not ok:
                print(f"      {e}")
            print("the ports need tensordict 0.15: skipped")
            return 0 if ok else 1
        print("FAIL  the module imported under tensordict 0.14")
        return 1

    ports = importlib.import_module("tct.ports")
    checks = {**ported_cases(ports), **schema_cases(ports)}
    failed = 0
    for label, check in checks.items():
        error = error_of(check)
        print(f"{'PASS' if error is None else 'FAIL'}  {label}")
        if error is not None:
            failed += 1
            print("      " + error.replace("\n", "\n      "))
    print(f"{len(checks) - failed} passed, {failed} failed")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
