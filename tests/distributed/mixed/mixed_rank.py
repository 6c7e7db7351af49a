#!/usr/bin/env python3
"""The Python side of the mixed-group scenarios (see run_mixed.py).

``mixed_rank.py SCENARIO [ARGS...]`` with RANK, WORLD_SIZE, MASTER_ADDR and
MASTER_PORT set: joins the group with torch.distributed.init_process_group
("gloo") and runs the scenario of that name, which checks exact values.
"""

from __future__ import annotations

import datetime
import sys
import traceback

import torch
import torch.distributed as dist

SCENARIOS = {}


def scenario(fn):
    SCENARIOS[fn.__name__] = fn
    return fn


def expect_equal(got, want, what):
    if got.dtype != want.dtype or got.shape != want.shape or not torch.equal(got, want):
        raise AssertionError(f"check failed: {what}: {got!r} instead of {want!r}")


@scenario
def rendezvous(rank, world, args):
    total = torch.full((3,), float(rank + 1), dtype=torch.double)
    dist.all_reduce(total)
    expect_equal(total, torch.full((3,), world * (world + 1) / 2.0, dtype=torch.double), "all_reduce of rank + 1")
    out = torch.full((2,), rank * 10, dtype=torch.long)
    got = torch.zeros(2, dtype=torch.long)
    nxt, prev = (rank + 1) % world, (rank + world - 1) % world
    sent = dist.isend(out, nxt, tag=7)
    dist.recv(got, prev, tag=7)
    sent.wait()
    expect_equal(got, torch.full((2,), prev * 10, dtype=torch.long), "the tensor from the previous rank")


def main() -> int:
    name, args = sys.argv[1], sys.argv[2:]
    if name not in SCENARIOS:
        print(f"mixed_rank.py: no scenario {name!r}", file=sys.stderr)
        return 2
    try:
        dist.init_process_group("gloo", timeout=datetime.timedelta(seconds=60))
        rank, world = dist.get_rank(), dist.get_world_size()
        SCENARIOS[name](rank, world, args)
        print(f"rank {rank} (Python): {name} ok")
        dist.destroy_process_group()
        return 0
    except Exception:
        traceback.print_exc()
        return 1


if __name__ == "__main__":
    sys.exit(main())
