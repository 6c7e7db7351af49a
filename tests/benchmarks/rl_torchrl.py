"""TorchRL's side of bench_rl: TensorDictReplayBuffer(LazyMemmapStorage)
extend and sample on bench_rl.cpp's element, timed per call.

    python rl_torchrl.py <scratch dir> <max_size> <batch>

Prints one JSON line: {"extend_us": ..., "sample_us": ...} (the fastest of
five rounds' mean per call), with torch set to one thread as bench_rl is.
"""

import json
import shutil
import sys
import time

import torch
from tensordict import TensorDict
from torchrl.data import LazyMemmapStorage, TensorDictReplayBuffer

scratch, max_size, batch = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
torch.set_num_threads(1)
torch.manual_seed(0)


def rows(n):
    # bench_rl.cpp's element: a continuous-control transition.
    return TensorDict(
        {
            "observation": torch.randn(n, 17),
            "action": torch.randn(n, 6),
            ("next", "observation"): torch.randn(n, 17),
            ("next", "reward"): torch.randn(n, 1),
            ("next", "done"): torch.zeros(n, 1, dtype=torch.bool),
            ("next", "terminated"): torch.zeros(n, 1, dtype=torch.bool),
        },
        batch_size=[n],
    )


def per_call(fn, calls, rounds=5):
    best = float("inf")
    for _ in range(rounds):
        start = time.perf_counter()
        for _ in range(calls):
            fn()
        best = min(best, (time.perf_counter() - start) / calls)
    return best * 1e6


shutil.rmtree(scratch, ignore_errors=True)
rb = TensorDictReplayBuffer(storage=LazyMemmapStorage(max_size, scratch_dir=scratch), batch_size=batch)
data = [rows(batch) for _ in range(8)]
i = 0


def extend():
    global i
    rb.extend(data[i % 8])
    i += 1


# Fill the buffer once, so that sampling draws from every slot.
for _ in range(max_size // batch + 1):
    extend()
extend_us = per_call(extend, 200)
sample_us = per_call(lambda: rb.sample(), 200)
print(json.dumps({"extend_us": extend_us, "sample_us": sample_us}))
shutil.rmtree(scratch, ignore_errors=True)
