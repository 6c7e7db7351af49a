""".tdz archives cross between tensordict::TensorDict's save/load_memmap and
tensordict 0.15's (tensordict/_archive.py), both ways.

    python run_archive.py --tool archive_tool --work <dir>

Each archive Python writes (stored, deflated, nested, non-tensor, a lazy
stack, a tensorclass, a nested tensor) is loaded by C++ and saved again, as an
archive (stored and deflated) and as a directory: Python loads each and finds
its tensordict. The archives C++ writes are checked at the zip level too:
every CRC-32 holds, and stored tensor payloads start at multiples of 64. The
case C++ builds on its own, and an archive C++ preallocates with memmap_like
and fills in place, load in Python as the same tensordict built there. An
UnbatchedTensor is refused by both with the same message, and crosses h5 as
a plain tensor both ways.
"""

import struct
import sys
import warnings
import zipfile
from pathlib import Path

import torch
from tensordict import (
    is_memmap_archive,
    LazyStackedTensorDict,
    PersistentTensorDict,
    tensorclass,
    TensorDict,
    UnbatchedTensor,
    unpack_memmap,
)

sys.path.insert(0, str(Path(__file__).resolve().parent))
from crossing import Crossing  # noqa: E402

crossing = Crossing("archive")
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
    return td


def same(a, b):
    """Equal keys, batch sizes, tensors (nested ones by component) and non-tensor values."""
    if type(a) is not type(b) and not (isinstance(a, TensorDict) and isinstance(b, TensorDict)):
        return False
    if a.batch_size != b.batch_size:
        return False
    leaves = lambda td: sorted(td.keys(True, True, is_leaf=lambda c: not hasattr(c, "keys")), key=str)  # noqa: E731
    if leaves(a) != leaves(b):
        return False
    for key in leaves(a):
        x, y = a.get(key), b.get(key)
        if isinstance(x, torch.Tensor) and x.is_nested:
            if not all(torch.equal(p, q) for p, q in zip(x.unbind(0), y.unbind(0))):
                return False
        elif isinstance(x, torch.Tensor):
            if x.dtype != y.dtype or not torch.equal(x, y):
                return False
        elif x != y:
            return False
    return True


def zip_checks(name, archive, deflated=False):
    with zipfile.ZipFile(archive) as zf:
        check(f"{name}: every CRC-32 holds", zf.testzip() is None)
        infos = zf.infolist()
    check(f"{name}: tensordict sees an archive", is_memmap_archive(archive))
    with open(archive, "rb") as f:
        for info in infos:
            if not info.filename.endswith(".memmap"):
                continue
            f.seek(info.header_offset + 26)
            name_len, extra_len = struct.unpack("<2H", f.read(4))
            offset = info.header_offset + 30 + name_len + extra_len
            method = zipfile.ZIP_DEFLATED if deflated else zipfile.ZIP_STORED
            check(f"{name}: {info.filename} has the method asked", info.compress_type == method)
            if not deflated:
                check(f"{name}: {info.filename} starts at a multiple of 64", offset % 64 == 0, str(offset))


cases = {
    "nested": nested(),
    "dtypes": TensorDict(
        {str(d).split(".")[1]: torch.arange(6).reshape(2, 3).to(d)
         for d in [torch.bool, torch.uint8, torch.int8, torch.int16, torch.float16, torch.bfloat16, torch.int32,
                   torch.float32, torch.complex64, torch.float64, torch.int64]},
        batch_size=[2, 3],
    ),
    "lazy_stack": LazyStackedTensorDict(
        TensorDict(x=torch.ones(3), sub=TensorDict(y=torch.arange(3), batch_size=[3]), batch_size=[3]),
        TensorDict(x=torch.zeros(3), sub=TensorDict(y=torch.arange(3) + 5, batch_size=[3]), batch_size=[3]),
        stack_dim=0,
    ),
    "tensorclass": TensorDict({"step": Step(obs=torch.ones(2, 2), task="walk", batch_size=[2])}, batch_size=[2]),
    "nested_tensor": TensorDict(
        {"nt": torch.nested.nested_tensor([torch.randn(2, 3), torch.randn(4, 3)]), "x": torch.ones(2)},
        batch_size=[2],
    ),
    "empty": TensorDict({"e": torch.zeros(0, 4), "w": torch.ones(2)}, batch_size=[]),
}
for name, td in cases.items():
    for compression in (None, "deflate"):
        label = f"{name} ({compression or 'stored'})"
        py = work / f"py_{name}_{compression}.tdz"
        td.save(py, compression=compression)
        original = TensorDict.load_memmap(py)
        for target, mode in ((f"cpp_{name}_{compression}.tdz", "stored"), (f"cpp_{name}_{compression}_z.tdz", "deflate"),
                             (f"cpp_{name}_{compression}_dir", "stored")):
            out = work / target
            if not tool("copy", py, out, mode):
                continue
            check(f"{label} -> C++ -> {target}: Python loads the same tensordict", same(TensorDict.load_memmap(out), original))
            if out.suffix == ".tdz":
                zip_checks(f"{label} -> {target}", out, deflated=mode == "deflate")

# C++ builds the nested case itself; then preallocates one and fills it in place.
for command in ("write", "like"):
    cpp = work / f"cpp_{command}.tdz"
    if tool(command, cpp):
        loaded = TensorDict.load_memmap(cpp)
        check(f"C++ {command}: Python loads the same tensordict", same(loaded, nested()))
        check(f"C++ {command}: names", loaded.names == ["env"])
        if command == "write":
            zip_checks("C++ write", cpp)
            unpacked = unpack_memmap(cpp, work / "unpacked")
            check("C++ write: unzipped, it is a memmap directory Python loads",
                  same(TensorDict.load_memmap(unpacked), nested()))

# UnbatchedTensor: tensordict 0.15.3 refuses to memory-map it (a directory or
# an archive) and writes it to h5 as a plain tensor; C++ does the same, with
# the same messages, and each reads the other's h5 file.
def unbatched():
    return TensorDict(b=torch.arange(6).reshape(2, 3), u=UnbatchedTensor(torch.arange(2.0)), batch_size=[2])


def refusal(fn):
    try:
        fn()
    except NotImplementedError as err:
        return str(err)
    return "<no exception>"


expected = [refusal(lambda: unbatched().memmap(work / "py_m")), refusal(lambda: unbatched().memmap(work / "py_m.tdz"))]
check("unbatched: Python refuses to memory-map it", expected[0].startswith("UnbatchedTensor entries cannot be"), expected[0])
done = crossing.run("unbatched", work)
if check("unbatched: the C++ tool ran", done.returncode == 0, done.stderr):
    got = done.stdout.splitlines()
    check("unbatched: C++ refuses memmap() with tensordict's message", got[0] == expected[0], f"{got[0]!r} != {expected[0]!r}")
    check("unbatched: C++ refuses a .tdz save with that message", got[1] == expected[0], repr(got[1]))
    check("unbatched: nothing was written", not (work / "m").exists() and not (work / "m.tdz").exists())
    with PersistentTensorDict.from_h5(work / "cpp.h5") as h5:
        u = h5["u"]
        check("unbatched: C++'s h5 file holds it as a plain tensor Python reads",
              type(u) is torch.Tensor and torch.equal(u, torch.arange(2.0)), repr(u))
py_h5 = work / "py.h5"
with warnings.catch_warnings(record=True) as caught:
    warnings.simplefilter("always")
    PersistentTensorDict.from_dict(unbatched(), py_h5).close()
check("unbatched: Python warns as C++ does", any("saved as plain tensors" in str(w.message) for w in caught))
if tool("h5-memmap", py_h5, work / "from_py_h5"):
    loaded = TensorDict.load_memmap(work / "from_py_h5")
    check("unbatched: C++ reads Python's h5 file as plain tensors",
          same(loaded, TensorDict(b=torch.arange(6).reshape(2, 3), u=torch.arange(2.0), batch_size=[2])))

crossing.finish(f"all {crossing.passed} archive checks hold ({len(cases)} cases, both ways, and UnbatchedTensor)")
