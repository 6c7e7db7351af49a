"""Replay-buffer checkpoints cross between tensordict::rl and real TorchRL,
both ways (run with the TorchRL environment, tests/requirements-torchrl.txt).

    python run_torchrl.py --tool rl_tool --modules <generated python> --work <dir>

C++ dumps, TorchRL's rb.loads reads; TorchRL's rb.dumps writes, C++ loads
and samples. Expected rows are computed here from rl_tool.cpp's numbering:
row `id` has obs [id] * 3, action id / 2, ("next", "reward") -id,
("next", "done") id > 4, task "swing".
"""

import argparse
import json
import shutil
import subprocess
import sys
import warnings
from pathlib import Path

import torch

parser = argparse.ArgumentParser()
parser.add_argument("--tool", required=True)
parser.add_argument("--modules", required=True)
parser.add_argument("--work", required=True)
args = parser.parse_args()
sys.path.insert(0, args.modules)
work = Path(args.work)
shutil.rmtree(work, ignore_errors=True)
work.mkdir(parents=True)

import tensordict  # noqa: E402
import torchrl  # noqa: E402
from tensordict import TensorDict  # noqa: E402
from torchrl.data import LazyMemmapStorage, ReplayBuffer, TensorDictReplayBuffer  # noqa: E402

import rlt  # noqa: E402  (the generated module of rl_step.yaml)

print(f"torchrl {torchrl.__version__}, tensordict {tensordict.__version__}, torch {torch.__version__}")
failures = []


def check(name, got, expected):
    if got != expected:
        failures.append(f"{name}: got {got!r}, expected {expected!r}")
        print(f"FAIL {name}: got {got!r}, expected {expected!r}")


def rows(first, n):
    ids = torch.arange(first, first + n, dtype=torch.float32).unsqueeze(1)
    td = TensorDict(
        {"obs": ids.repeat(1, 3), "action": ids * 0.5, ("next", "reward"): -ids, ("next", "done"): ids > 4},
        batch_size=[n],
    )
    td["task"] = "swing"
    return td


def typed_rows(first, n):
    ids = torch.arange(first, first + n, dtype=torch.float32).unsqueeze(1)
    nxt = rlt.Next(obs=ids.repeat(1, 3) + 1, reward=-ids, done=ids > 4, batch_size=[n])
    return rlt.Step(obs=ids.repeat(1, 3), action=ids * 0.5, next=nxt, task="swing", batch_size=[n])


def slot_ids(max_size, writes):
    """The id each slot holds after `writes` rows went round-robin into max_size slots."""
    out = [0] * max_size
    for i in range(writes):
        out[i % max_size] = i
    return out[: min(writes, max_size)] + [0] * (max_size - min(writes, max_size))


def tool(*argv):
    done = subprocess.run([args.tool, *map(str, argv)], capture_output=True, text=True)
    if done.returncode != 0:
        raise SystemExit(f"rl_tool {' '.join(map(str, argv))} failed:\n{done.stderr}")
    return json.loads(done.stdout) if done.stdout.strip() else None


def next_randint(high, n, seed):
    return torch.randint(high, (n,), generator=torch.Generator().manual_seed(seed)).tolist()


# ---- C++ dumps, TorchRL loads ---------------------------------------------
tool("dump", work / "cpp_plain", "plain")
rb = TensorDictReplayBuffer(storage=LazyMemmapStorage(10))
rb.loads(work / "cpp_plain")
check("C++ -> TorchRL: len", len(rb), 10)
check("C++ -> TorchRL: cursor", rb._writer._cursor, 13 % 10)
check("C++ -> TorchRL: write_count", rb._writer._write_count, 13)
check("C++ -> TorchRL: batch size", rb._batch_size, 4)
stored = rb.storage._storage
expected_ids = slot_ids(10, 13)
check("C++ -> TorchRL: rows", stored["obs"][:, 0].long().tolist(), expected_ids)
check("C++ -> TorchRL: nested rewards", (-stored["next", "reward"]).squeeze(1).long().tolist(), expected_ids)
check("C++ -> TorchRL: nested done", stored["next", "done"].squeeze(1).tolist(), [i > 4 for i in expected_ids])
check("C++ -> TorchRL: action", stored["action"].squeeze(1).tolist(), [i * 0.5 for i in expected_ids])
sample = rb.sample()
check("C++ -> TorchRL: non-tensor entry", sample["task"] if isinstance(sample["task"], str) else list(sample["task"]),
      "swing" if isinstance(sample["task"], str) else ["swing"] * 4)
# The generator came with the checkpoint: TorchRL draws what a generator
# seeded 5 draws first, as the C++ buffer would have.
check("C++ -> TorchRL: generator state", sample["index"].tolist(), next_randint(10, 4, 5))
check("C++ -> TorchRL: sampled rows", sample["obs"][:, 0].long().tolist(), [expected_ids[i] for i in sample["index"]])
# TorchRL extends on from the checkpoint's cursor.
index = rb.extend(rows(13, 2))
check("C++ -> TorchRL: extend goes on at the cursor", index.tolist(), [3, 4])

# ---- TorchRL dumps, C++ loads ---------------------------------------------
rb = TensorDictReplayBuffer(storage=LazyMemmapStorage(10), batch_size=4, generator=torch.Generator().manual_seed(9))
rb.extend(rows(0, 6))
rb.extend(rows(6, 7))
rb.dumps(work / "py_plain")
got = tool("load", work / "py_plain", "plain", 10)
check("TorchRL -> C++: len", got["len"], 10)
check("TorchRL -> C++: cursor", got["cursor"], 3)
check("TorchRL -> C++: write_count", got["write_count"], 13)
check("TorchRL -> C++: rows", got["ids"], expected_ids)
check("TorchRL -> C++: nested rewards", got["rewards"], expected_ids)
check("TorchRL -> C++: nested done", got["done"], [int(i > 4) for i in expected_ids])
check("TorchRL -> C++: non-tensor entry", got["task"], "swing")
check("TorchRL -> C++: generator state", got["sample_index"], next_randint(10, 4, 9))
check("TorchRL -> C++: sampled rows are the stored rows", got["sample_rows_match"], True)
# A buffer that has not wrapped: len 4 of 10.
rb = TensorDictReplayBuffer(storage=LazyMemmapStorage(10))
rb.extend(rows(0, 4))
rb.dumps(work / "py_partial")
got = tool("load", work / "py_partial", "plain", 10)
check("TorchRL -> C++ (partial): len, cursor, write_count", [got["len"], got["cursor"], got["write_count"]], [4, 4, 4])
check("TorchRL -> C++ (partial): samples only written rows", all(i < 4 for i in got["sample_index"]), True)
# A buffer of another max_size is refused by name.
done = subprocess.run([args.tool, "load", str(work / "py_partial"), "plain", "12"], capture_output=True, text=True)
check("TorchRL -> C++: another max_size is refused", "max_size 12" in done.stderr and done.returncode == 1, True)

# ---- typed elements: rlt.Step both ways -------------------------------------
tool("dump", work / "cpp_typed", "typed")
with warnings.catch_warnings():
    warnings.simplefilter("error")  # no fallback of tensordict's for the generated class
    rb = ReplayBuffer(storage=LazyMemmapStorage(8))
    rb.loads(work / "cpp_typed")
    sample = rb.sample(6)
check("C++ -> TorchRL (typed): the sample is the @tensorclass", type(sample).__name__, "Step")
check("C++ -> TorchRL (typed): len", len(rb), 5)
check("C++ -> TorchRL (typed): rows", rb.storage._storage.obs[:, 0].long().tolist(), [0, 1, 2, 3, 4, 0, 0, 0])
check("C++ -> TorchRL (typed): nested class", type(sample.next).__name__, "Next")
check("C++ -> TorchRL (typed): sampled rows", (sample.next.obs - sample.obs).eq(1).all().item(), True)
check("C++ -> TorchRL (typed): rewards follow obs", (sample.next.reward.squeeze(1) == -sample.obs[:, 0]).all().item(), True)

rb = ReplayBuffer(storage=LazyMemmapStorage(8))
rb.extend(typed_rows(0, 5))
rb.extend(typed_rows(5, 4))
rb.dumps(work / "py_typed")
got = tool("load", work / "py_typed", "typed", 8)
check("TorchRL -> C++ (typed): len, cursor, write_count", [got["len"], got["cursor"], got["write_count"]], [8, 1, 9])
check("TorchRL -> C++ (typed): rows", got["ids"], slot_ids(8, 9))
check("TorchRL -> C++ (typed): sampled rows are the stored rows", got["sample_rows_match"], True)
check("TorchRL -> C++ (typed): non-tensor field", got["task"], "swing")

if failures:
    print(f"{len(failures)} failure(s)")
    sys.exit(1)
print("all replay-buffer round trips with TorchRL passed")
