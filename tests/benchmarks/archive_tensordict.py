"""tensordict's side of bench_archive: TensorDict.load of .tdz archives that
bench_archive.cpp wrote, timed per call.

    python archive_tensordict.py <archive>...

Prints one JSON line: {"<archive>": microseconds per load, ...} (the fastest
of five rounds' mean), with torch set to one thread as bench_archive is.
"""

import json
import sys
import time

import torch
from tensordict import TensorDict

torch.set_num_threads(1)


def per_call(fn, calls=20, rounds=5):
    best = float("inf")
    for _ in range(rounds):
        start = time.perf_counter()
        for _ in range(calls):
            fn()
        best = min(best, (time.perf_counter() - start) / calls)
    return best * 1e6


figures = {}
for archive in sys.argv[1:]:
    TensorDict.load(archive)  # warm: imports and the page cache
    figures[archive] = per_call(lambda: TensorDict.load(archive))
print(json.dumps(figures))
