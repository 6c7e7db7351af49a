"""safetensors files cross between tensordict::to_safetensors /
from_safetensors and tensordict 0.15's (with the safetensors library), byte
for byte.

    python run_safetensors.py --tool safetensors_tool --work <dir>

Each file Python writes is read by C++ and written again: the bytes must be
Python's. The file C++ builds on its own is read by Python, compared with the
same tensordict built here, and written again by Python: the bytes must be
C++'s. A plain safetensors file (a model's weights) read by C++ and written
again loads in Python with the original tensors under the nested keys.
"""

import sys
from pathlib import Path

import torch
from safetensors.torch import save_file
from tensordict import LazyStackedTensorDict, TensorDict, from_safetensors, tensorclass, to_safetensors

sys.path.insert(0, str(Path(__file__).resolve().parent))
from crossing import Crossing  # noqa: E402

crossing = Crossing("safetensors")
work, check, tool = crossing.work, crossing.check, crossing.tool


@tensorclass
class Step:
    obs: torch.Tensor
    task: str


def nested():
    td = TensorDict(
        {
            "obs": torch.arange(6, dtype=torch.float32).reshape(2, 3),
            ("next", "reward"): torch.arange(2, dtype=torch.float64).reshape(2, 1),
            ("next", "done"): torch.tensor([False, True]),
        },
        batch_size=[2],
        names=["env"],
    )
    td.set_non_tensor("task", "swing")
    td.set_non_tensor(("next", "meta"), {"seed": 3, "tags": ["a", "\u00e9"], "lr": 1e-05})
    return td


def non_tensor_values():
    td = TensorDict({"x": torch.zeros(1)}, batch_size=[])
    values = {"n": None, "b": True, "i": -7, "f": 0.1, "big": 1e16, "s": "\u00e9\U0001F600\n\"",
              "l": [1, 2.5, "x", None], "d": {"k": {"z": []}}}
    for key, value in values.items():
        td.set_non_tensor(key, value)
    return td


dtypes = [torch.bool, torch.uint8, torch.int8, torch.int16, torch.float16, torch.bfloat16, torch.int32,
          torch.float32, torch.complex64, torch.float64, torch.int64]
cases = {
    "nested": nested(),
    "dtypes": TensorDict({str(d).split(".")[1]: torch.arange(6).reshape(2, 3).to(d) for d in dtypes}, batch_size=[2, 3]),
    "non_tensor_values": non_tensor_values(),
    "lazy_stack": TensorDict(
        {"stack": LazyStackedTensorDict(TensorDict(x=torch.ones(3), batch_size=[3]),
                                        TensorDict(x=torch.zeros(3), batch_size=[3]), stack_dim=1)},
        batch_size=[3],
    ),
    "tensorclass": TensorDict({"step": Step(obs=torch.ones(2, 2), task="walk", batch_size=[2])}, batch_size=[2]),
    "empty": TensorDict({"e": torch.zeros(0, 4), "w": torch.ones(2)}, batch_size=[]),
}
for name, td in cases.items():
    py = work / f"py_{name}.safetensors"
    cpp = work / f"cpp_{name}.safetensors"
    to_safetensors(td, py)
    if tool("roundtrip", py, cpp):
        check(f"{name}: C++ reads Python's file and writes the same bytes", py.read_bytes() == cpp.read_bytes(),
              f"\n  python {py.read_bytes()[:400]!r}\n  c++    {cpp.read_bytes()[:400]!r}")

# C++ builds the nested case itself.
cpp = work / "cpp_built.safetensors"
if tool("write", cpp):
    loaded = from_safetensors(cpp)
    expected = nested()
    check("C++-built: Python reads the same tensors",
          all((loaded[k] == expected[k]).all() for k in expected.keys(True, True, is_leaf=lambda c: False) if
              isinstance(expected[k], torch.Tensor)))
    check("C++-built: names and batch size", loaded.names == ["env"] and loaded.batch_size == torch.Size([2]))
    check("C++-built: non-tensor values", loaded["task"] == "swing" and loaded["next", "meta"] == expected["next", "meta"])
    again = work / "py_again.safetensors"
    to_safetensors(loaded, again)
    check("C++-built: Python writes it again with the same bytes", again.read_bytes() == cpp.read_bytes(),
          f"\n  python {again.read_bytes()[:400]!r}\n  c++    {cpp.read_bytes()[:400]!r}")

# A model's weights, written by the safetensors library without metadata.
weights = {"0.weight": torch.randn(4, 3), "0.bias": torch.randn(4), "2.weight": torch.randn(1, 4).half()}
plain = work / "model.safetensors"
save_file(weights, plain)
cpp = work / "cpp_model.safetensors"
if tool("roundtrip", plain, cpp):
    loaded = from_safetensors(cpp)
    check("plain weights: nested by their dotted names",
          all((loaded[tuple(k.split("."))] == v).all() for k, v in weights.items()))
    module = torch.nn.Sequential(torch.nn.Linear(3, 4), torch.nn.ReLU(), torch.nn.Linear(4, 1).half())
    loaded.to_module(module)
    check("plain weights: to_module writes them into the model", torch.equal(module[0].weight, weights["0.weight"]))

crossing.finish(f"all {len(cases) + 2} safetensors cases cross byte for byte")
