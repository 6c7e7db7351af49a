#!/usr/bin/env python3
"""The Python side of the mixed-group scenarios (see run_mixed.py).

``mixed_rank.py SCENARIO [ARGS...]`` with RANK, WORLD_SIZE, MASTER_ADDR and
MASTER_PORT set: joins the group with torch.distributed.init_process_group
("gloo") and runs the scenario of that name, which checks exact values.
"""

from __future__ import annotations

import datetime
import os
import sys
import traceback
import warnings

import torch
import torch.distributed as dist
from tensordict import LazyStackedTensorDict, TensorDict, is_non_tensor, is_tensor_collection, lazy_stack

SCENARIOS = {}


def scenario(fn):
    SCENARIOS[fn.__name__] = fn
    return fn


def expect_equal(got, want, what):
    if got.dtype != want.dtype or got.shape != want.shape or not torch.equal(got, want):
        raise AssertionError(f"check failed: {what}: {got!r} instead of {want!r}")


def make(kind: str, v: int) -> TensorDict:
    """The tensordicts of the scenarios, built as samples.h's make()."""

    def dense():
        return TensorDict(
            obs=torch.arange(6, dtype=torch.float32).reshape(2, 3) + v,
            action=torch.arange(2, dtype=torch.int64) * (v + 1),
            done=torch.tensor([v % 2 == 0, True]),
            batch_size=[2],
        )

    if kind == "dense":
        return dense()
    if kind == "nontensor":
        td = dense()
        td.set_non_tensor("note", "hello")
        return td
    if kind == "nested":
        return TensorDict(
            b=torch.full((2,), float(v), dtype=torch.float64),
            a=TensorDict(
                y=(torch.arange(4, dtype=torch.int32) + v).reshape(2, 2),
                x=torch.full((2, 1), v * 0.5, dtype=torch.float32),
                batch_size=[2],
            ),
            c=torch.zeros(2, 0),
            batch_size=[2],
        )
    if kind == "stack":
        m0 = TensorDict(x=torch.full((3,), float(v)), id=torch.tensor([v]))
        m1 = TensorDict(x=torch.full((3,), float(v + 2)), id=torch.tensor([v + 1]))
        return TensorDict(z=torch.full((2,), float(v)), s=lazy_stack([m0, m1]))
    if kind == "lazy":
        m0 = TensorDict(x=torch.full((3,), float(v)), id=torch.tensor([0]))
        m1 = TensorDict(x=torch.full((2,), float(v + 1)), id=torch.tensor([1]))
        return TensorDict(z=torch.full((2,), float(v)), s=lazy_stack([m0, m1]))
    raise ValueError(f"no sample kind {kind!r}")


def tensor_leaves(td, path=()):
    """(path, tensor) of every tensor leaf, a lazy stack member by member."""
    if isinstance(td, LazyStackedTensorDict):
        for i, member in enumerate(td.tensordicts):
            yield from tensor_leaves(member, path + (i,))
        return
    for key in sorted(td.keys()):
        value = td.get(key)
        if isinstance(value, torch.Tensor):
            yield path + (key,), value
        elif is_tensor_collection(value) and not is_non_tensor(value):
            yield from tensor_leaves(value, path + (key,))


def expect_td(got, want, what):
    got_leaves, want_leaves = list(tensor_leaves(got)), list(tensor_leaves(want))
    if [p for p, _ in got_leaves] != [p for p, _ in want_leaves]:
        raise AssertionError(f"check failed: {what}: keys {[p for p, _ in got_leaves]}")
    for (path, g), (_, w) in zip(got_leaves, want_leaves):
        expect_equal(g, w, f"{what}: key {path}")


P2P_OPTIONS = {
    "plain": {},
    "async": {},
    "tag": {"init_tag": 5},
    "pseudo": {"init_tag": 3, "pseudo_rand": True},
    "consolidated": {"consolidated": True},
}


def _send_to(td, dst, mode):
    if mode == "async":
        for work in td.isend(dst, return_early=True):
            work.wait()
    else:
        td.send(dst, **P2P_OPTIONS[mode])


def _recv_from(src, kind, mode, v):
    got = make(kind, -7)
    if mode == "consolidated":
        got = got.consolidate()
    want = make(kind, v)
    what = f"{kind} {mode} from rank {src}"
    if mode == "async":
        for work in got.irecv(src, return_premature=True):
            work.wait()
    else:
        last = got.recv(src, **P2P_OPTIONS[mode])
        if mode in ("plain", "tag"):
            init_tag = P2P_OPTIONS[mode].get("init_tag", 0)
            if last != init_tag + len(list(tensor_leaves(want))) - 1:
                raise AssertionError(f"check failed: {what}: recv returned {last}")
    expect_td(got, want, what)


@scenario
def p2p(rank, world, args):
    """Rank 0 sends make(kind, r) to every rank r, which answers make(kind, 100 + r)."""
    kind, mode = args
    if rank == 0:
        for peer in range(1, world):
            _send_to(make(kind, peer), peer, mode)
            _recv_from(peer, kind, mode, 100 + peer)
    else:
        _recv_from(0, kind, mode, rank)
        _send_to(make(kind, 100 + rank), 0, mode)


REDUCE_OPTIONS = {
    "all": {},
    "all_bucket": {"bucket_bytes": 8},
    "all_async": {"async_op": True},
    "reduce": {},
    "reduce_bucket": {"bucket_bytes": 8},
}


@scenario
def reduce(rank, world, args):
    """Every rank holds make(kind, rank + 1); the sum is checked leaf by leaf where it lands."""
    kind, mode = args
    td = make(kind, rank + 1)
    if mode.startswith("all"):
        works = td.all_reduce(**REDUCE_OPTIONS[mode])
        for work in works or ():
            work.wait()
    else:
        td.reduce(0, **REDUCE_OPTIONS[mode])
        if rank != 0:
            return
    terms = [list(tensor_leaves(make(kind, v))) for v in range(1, world + 1)]
    for i, (path, got) in enumerate(tensor_leaves(td)):
        want = terms[0][i][1].clone()
        for term in terms[1:]:
            want += term[i][1]
        expect_equal(got, want, f"{kind} {mode}: the sum at key {path}")


def bench_td() -> TensorDict:
    """100 float32 leaves of [64, 8] in ten nested tensordicts of ten (as bench_mixed.cpp's)."""
    return TensorDict(
        {f"group{i}": TensorDict({f"leaf{j}": torch.full((64, 8), float(i * 10 + j)) for j in range(10)}) for i in range(10)}
    )


@scenario
def bench(rank, world, args):
    """tests/benchmarks/bench_mixed.cpp's Python ends: rank 0 sends bench_td() ITERATIONS times, timed up to
    rank 1's "received them all"; rank 1 receives them."""
    import time

    mode, iterations = args[0], int(args[1])
    consolidated = mode == "consolidated"
    td = bench_td()
    if consolidated:
        td = td.consolidate()
    go = torch.zeros(1)
    if rank == 0:
        dist.recv(go, 1, tag=999)
        start = time.perf_counter()
        for _ in range(iterations):
            td.send(1, consolidated=consolidated)
        dist.recv(go, 1, tag=998)
        took = time.perf_counter() - start
        print(f"BENCH sender_per_iteration_us={took / iterations * 1e6:.1f}")
    else:
        dist.send(go, 0, tag=999)
        for _ in range(iterations):
            td.recv(0, consolidated=consolidated)
        dist.send(go, 0, tag=998)


def transition_td(v: int) -> TensorDict:
    """The tensor fields of scenarios_tensorclass.cpp's transition(v) (schemas/rl.yaml's Transition)."""

    def observation(v):
        return TensorDict(
            pixels=(torch.arange(3 * 3 * 2 * 2).reshape(3, 3, 2, 2) + v).to(torch.uint8),
            state=torch.arange(3 * 4, dtype=torch.float32).reshape(3, 4) * v,
            batch_size=[3],
        )

    return TensorDict(
        observation=observation(v),
        action=torch.full((3, 2), float(v)),
        reward=torch.full((3, 1), float(v + 1)),
        done=torch.zeros(3, 1, dtype=torch.bool),
        terminated=torch.ones(3, 1, dtype=torch.bool),
        next=observation(v + 1),
        batch_size=[3],
    )


@scenario
def tensorclass(rank, world, args):
    """A generated struct's tensor fields against a tensordict of the same fields."""
    if rank == 0:
        for peer in range(1, world):
            transition_td(peer).send(peer)
            got = transition_td(-7)
            got.recv(peer)
            expect_td(got, transition_td(100 + peer), f"from rank {peer}")
    else:
        got = transition_td(-7)
        got.recv(0)
        expect_td(got, transition_td(rank), "from rank 0")
        transition_td(100 + rank).send(0)


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


# ---- tensordict's consolidated protocol (scenarios_consolidated.cpp has the C++ side) ----


def dense_sample():
    from tensordict import TensorDict

    td = TensorDict(
        obs=torch.arange(12, dtype=torch.float32).reshape(2, 6),
        nested=TensorDict(ids=torch.arange(2), flag=torch.tensor([True, False]), batch_size=[2]),
        reward=torch.tensor([0.5, -1.5], dtype=torch.double).reshape(2, 1),
        batch_size=[2],
    )
    td["label"] = "walk"
    return td


def lazy_sample():
    from tensordict import LazyStackedTensorDict, TensorDict

    return LazyStackedTensorDict(TensorDict(obs=torch.full((3,), 1.0)), TensorDict(obs=torch.full((5,), 2.0)), stack_dim=0)


def expect_dense(got, what):
    want = dense_sample()
    # The rebuild puts non-tensor entries first, then leaves, then nested levels.
    if set(got.keys()) != set(want.keys()):
        raise AssertionError(f"check failed: {what}: keys {list(got.keys())}")
    for key in want.keys(include_nested=True, leaves_only=True):
        if key == "label":
            if got["label"] != "walk":
                raise AssertionError(f"check failed: {what}: label {got['label']!r}")
            continue
        expect_equal(got[key], want[key], f"{what}: {key}")
    if not got.is_consolidated():
        raise AssertionError(f"check failed: {what}: not consolidated")


def expect_lazy(got, what):
    from tensordict import LazyStackedTensorDict

    if not isinstance(got, LazyStackedTensorDict):
        raise AssertionError(f"check failed: {what}: a {type(got).__name__}")
    expect_equal(got.tensordicts[0]["obs"], torch.full((3,), 1.0), f"{what}: member 0")
    expect_equal(got.tensordicts[1]["obs"], torch.full((5,), 2.0), f"{what}: member 1")


def rank_sample(rank):
    from tensordict import TensorDict

    return TensorDict(a=torch.full((3,), float(rank)), n=TensorDict(x=torch.arange(3) + rank, batch_size=[3]), batch_size=[3])


@scenario
def object_lists(rank, world, args):
    first = {"x": [1, 2.5, "three", None, True], "y": {"z": -7}}
    if rank == 0:
        dist.send_object_list([first, "second"], dst=1)
    elif rank == 1:
        got = [None, None]
        dist.recv_object_list(got, src=0)
        if got != [first, "second"]:
            raise AssertionError(f"check failed: recv_object_list: {got!r}")
    lst = [42, {"k": [1, 2]}] if rank == 0 else [None, None]
    dist.broadcast_object_list(lst, src=0)
    if lst != [42, {"k": [1, 2]}]:
        raise AssertionError(f"check failed: broadcast_object_list: {lst!r}")
    out = [None] * world
    dist.all_gather_object(out, [rank, "x" * (rank * 3)])
    if out != [[i, "x" * (i * 3)] for i in range(world)]:
        raise AssertionError(f"check failed: all_gather_object: {out!r}")


@scenario
def init_remote(rank, world, args):
    from tensordict import TensorDict

    if rank == 0:
        for dst in range(1, world):
            dense_sample().init_remote(dst=dst)
            lazy_sample().init_remote(dst=dst)
        dense_sample().init_remote(use_broadcast=True)
    else:
        expect_dense(TensorDict.from_remote_init(src=0), "from_remote_init")
        expect_lazy(TensorDict.from_remote_init(src=0), "from_remote_init of a lazy stack")
        expect_dense(TensorDict.from_remote_init(src=0, use_broadcast=True), "from_remote_init(use_broadcast)")


@scenario
def broadcast(rank, world, args):
    from tensordict import TensorDict

    mine = dense_sample() if rank == 0 else TensorDict()
    expect_dense(mine.broadcast(src=0), "broadcast")


@scenario
def all_gather(rank, world, args):
    mine = rank_sample(rank)
    if rank == 1:
        mine["extra"] = torch.arange(12, dtype=torch.int32).reshape(3, 4)
    got = mine.all_gather()
    if len(got) != world:
        raise AssertionError(f"check failed: {len(got)} tensordicts")
    for i, td in enumerate(got):
        expect_equal(td["a"], rank_sample(i)["a"], f"a of rank {i}")
        expect_equal(td["n", "x"], rank_sample(i)["n", "x"], f"n.x of rank {i}")
        if ("extra" in td.keys()) != (i == 1):
            raise AssertionError(f"check failed: extra in rank {i}'s")


@scenario
def gather_and_stack(rank, world, args):
    from tensordict import TensorDict

    if rank == 0:
        out = TensorDict(
            a=torch.zeros(world - 1, 3),
            n=TensorDict(x=torch.zeros(world - 1, 3, dtype=torch.long), batch_size=[world - 1, 3]),
            batch_size=[world - 1, 3],
        )
        out.gather_and_stack(0)
        for i in range(1, world):
            expect_equal(out["a"][i - 1], rank_sample(i)["a"], f"a from rank {i}")
            expect_equal(out["n", "x"][i - 1], rank_sample(i)["n", "x"], f"n.x from rank {i}")
    else:
        rank_sample(rank).gather_and_stack(0)


@scenario
def hostile(rank, world, args):
    # Only the sending side: the receiver (rank 1) is the C++ rank.
    from tensordict import TensorDict

    bad_leaf = {
        "cls": "TensorDict",
        "non_tensors": {},
        "leaves": {"obs": ("torch.float32", [2, 4], 0, 32, 0)},
        "cls_metadata": {"device": None, "names": [None], "batch_size": [2], "is_locked": False},
        "_total_bytes": 16,
    }
    if rank == 0:
        dist.send_object_list([bad_leaf], dst=1)
        dist.send(torch.zeros(16, dtype=torch.uint8), dst=1)
        TensorDict(a=torch.zeros(4)).gather_and_stack(1)


def observation(n, seed):
    from tc.rl import Observation

    return Observation(
        pixels=(torch.arange(n * 3 * 2 * 2).reshape(n, 3, 2, 2) + int(seed)).to(torch.uint8),
        state=torch.arange(n * 4, dtype=torch.float32).reshape(n, 4) * seed,
        batch_size=[n],
    )


def transition(n, seed):
    from tc.rl import Transition

    return Transition(
        observation=observation(n, seed),
        action=torch.full((n, 2), float(seed)),
        reward=torch.full((n, 1), float(seed + 1)),
        done=torch.zeros(n, 1, dtype=torch.bool),
        terminated=torch.ones(n, 1, dtype=torch.bool),
        next=observation(n, seed + 1),
        env_name="walk",
        batch_size=[n],
    )


def expect_transition(got, want, what):
    for name in ("action", "reward", "done", "terminated"):
        expect_equal(getattr(got, name), getattr(want, name), f"{what}.{name}")
    for name in ("observation", "next"):
        expect_equal(getattr(got, name).pixels, getattr(want, name).pixels, f"{what}.{name}.pixels")
        expect_equal(getattr(got, name).state, getattr(want, name).state, f"{what}.{name}.state")


@scenario
def typed(rank, world, args):
    # tc.rl: the module tensorclass-gen --lang python made of schemas/rl.yaml (on PYTHONPATH).
    from tc.rl import Observation, Transition
    from tensordict import TensorDict

    if rank == 0:
        observation(2, 3).init_remote(dst=1)
        transition(2, 5).init_remote(dst=1)
    elif rank == 1:
        got = TensorDict.from_remote_init(src=0)
        if type(got) is not Observation:
            raise AssertionError(f"check failed: a {type(got)!r}, not tc.rl.Observation")
        want = observation(2, 3)
        expect_equal(got.pixels, want.pixels, "Observation.pixels")
        expect_equal(got.state, want.state, "Observation.state")
        got = TensorDict.from_remote_init(src=0)
        if type(got) is not Transition:
            raise AssertionError(f"check failed: a {type(got)!r}, not tc.rl.Transition")
        want = transition(2, 5)
        for name in ("action", "reward", "done", "terminated"):
            expect_equal(getattr(got, name), getattr(want, name), f"Transition.{name}")
        for name in ("observation", "next"):
            expect_equal(getattr(got, name).pixels, getattr(want, name).pixels, f"Transition.{name}.pixels")
            expect_equal(getattr(got, name).state, getattr(want, name).state, f"Transition.{name}.state")
        if got.env_name != "walk":
            raise AssertionError(f"check failed: Transition.env_name {got.env_name!r}")
    # broadcast sends the class too (_tensorclass_type).
    got = observation(2, 7).broadcast(src=0) if rank == 0 else TensorDict().broadcast(src=0)
    if type(got) is not Observation:
        raise AssertionError(f"check failed: broadcast gave a {type(got)!r}, not tc.rl.Observation")
    expect_equal(got.state, observation(2, 7).state, "broadcast Observation.state")
    expect_equal(got.pixels, observation(2, 7).pixels, "broadcast Observation.pixels")
    # Point to point into the same structure (scenarios_typed.cpp's exchange):
    # with tensordict's fallback warning an error, which it would give for the
    # nested Observations unless the class has its own _send, _recv...
    with warnings.catch_warnings():
        warnings.filterwarnings("error", message=".*wasn't explicitly implemented for tensorclass")
        for sender, receiver, seed in ((0, 1, 9), (1, 0, 13)):
            if rank == sender:
                transition(2, seed).send(receiver)
                transition(2, seed + 2).isend(receiver)
            elif rank == receiver:
                got = transition(2, 0)
                got.recv(sender)
                expect_transition(got, transition(2, seed), "recv Transition")
                got.irecv(sender)
                expect_transition(got, transition(2, seed + 2), "irecv Transition")


# ---- live weights (scenarios_weights.cpp has the C++ actor's side) ----


@scenario
def weights(rank, world, args):
    """The learner (rank 0) sends TensorDict.from_module(policy).data to the C++ actor (rank 1)."""
    from tensordict.nn import TensorDictModule
    from torch import nn

    packages = os.environ["TENSORCLASS_AOTI_PACKAGES"]
    # The exported policy's structure (tests/aoti/export_cases.py's mlp), as
    # the learner holds it, with the exported weights, then trained on.
    policy = TensorDictModule(nn.Sequential(nn.Linear(3, 16), nn.Tanh(), nn.Linear(16, 2)), in_keys=["obs"],
                              out_keys=["action"])
    # Cloned out of the memory map: tensordict 0.14's to_module cannot make a
    # Parameter of a MemoryMappedTensor under torch 2.15.
    TensorDict.load_memmap(os.path.join(packages, "mlp_params")).clone().to_module(policy)
    exported = TensorDict.from_module(policy).data.clone()
    TensorDict.load_memmap(os.path.join(packages, "mlp_new_params")).clone().to_module(policy)
    trained = TensorDict.from_module(policy).data
    trained.send(1)
    for work in exported.isend(1, return_early=True):
        work.wait()
    trained.broadcast(src=0)
    # A Gaussian policy's new weights (tests/aoti/export_cases.py's).
    TensorDict.load_memmap(os.path.join(packages, "gaussian_new_params")).clone().send(1)


# ---- NCCL (scenarios_nccl.cpp has the C++ side; run_mixed.py --backend nccl) ----


def nccl_sample(v, device):
    # The tensordict's own device: consolidate() (init_remote) puts the storage there.
    return TensorDict(
        obs=torch.arange(6, dtype=torch.float32).reshape(2, 3) + v,
        nested=TensorDict(act=torch.arange(2, dtype=torch.int64) * (v + 1), batch_size=[2]),
        batch_size=[2],
        device=device,
    )


@scenario
def nccl(rank, world, args):
    device = torch.device("cuda", torch.cuda.current_device())
    if rank == 0:
        nccl_sample(3, device).send(1, init_tag=2)
        nccl_sample(4, device).init_remote(dst=1, device=device)
    else:
        got = nccl_sample(0, device)
        got.recv(0, init_tag=2)
        expect_td(got.cpu(), nccl_sample(3, "cpu"), "recv")
        remote = TensorDict.from_remote_init(src=0, device=device)
        if not remote.is_consolidated() or remote["obs"].device != device:
            raise AssertionError("check failed: from_remote_init: consolidated on this rank's GPU")
        expect_td(remote.cpu(), nccl_sample(4, "cpu"), "from_remote_init")
    mine = nccl_sample(rank, device)
    mine.all_reduce()
    expect_equal(
        mine["obs"].cpu(),
        torch.arange(6, dtype=torch.float32).reshape(2, 3) * world + world * (world - 1) // 2,
        "all_reduce: obs",
    )
    expect_equal(
        mine["nested", "act"].cpu(), torch.arange(2, dtype=torch.int64) * (world * (world + 1) // 2), "all_reduce: act"
    )


def main() -> int:
    name, args = sys.argv[1], sys.argv[2:]
    if name not in SCENARIOS:
        print(f"mixed_rank.py: no scenario {name!r}", file=sys.stderr)
        return 2
    try:
        # run_mixed.py --backend nccl: one GPU per rank, the LOCAL_RANK-th, made current as torch's docs ask.
        backend = os.environ.get("MIXED_BACKEND", "gloo")
        if backend == "nccl":
            torch.cuda.set_device(int(os.environ["LOCAL_RANK"]))
        dist.init_process_group(backend, timeout=datetime.timedelta(seconds=60))
        rank, world = dist.get_rank(), dist.get_world_size()
        SCENARIOS[name](rank, world, args)
        print(f"rank {rank} (Python): {name} ok")
        dist.destroy_process_group()
        return 0
    except Exception:
        traceback.print_exc()
        return 1


def fork_ranks(ranks: list[tuple[int, str]]) -> int:
    """Runs each (rank, log file) as a child forked from this process.

    run_mixed.py starts a line-up's Python ranks this way: torch and tensordict
    are imported once, not once a rank (about 4 s of CPU each). Each child
    writes to its log and runs main() with its RANK. When one fails, the others
    are killed; the exit code is 0, or 10 + the rank that failed first.
    """
    sys.stdout.flush()
    sys.stderr.flush()
    children: dict[int, int] = {}
    for rank, log in ranks:
        pid = os.fork()
        if pid == 0:
            fd = os.open(log, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
            os.dup2(fd, 1)
            os.dup2(fd, 2)
            os.close(fd)
            os.environ["RANK"] = os.environ["LOCAL_RANK"] = str(rank)
            code = 1
            try:
                code = main()
            finally:
                sys.stdout.flush()
                sys.stderr.flush()
                os._exit(code)
        children[pid] = rank
    failed = None
    while children:
        pid, status = os.wait()
        rank = children.pop(pid)
        if os.waitstatus_to_exitcode(status) != 0 and failed is None:
            failed = rank
            for other in children:
                os.kill(other, 9)
    return 0 if failed is None else 10 + failed


def serve(path: str, idle_seconds: float = 900.0) -> int:
    """A rank server at the Unix socket `path` (the suite's CTest fixture).

    It imports torch and tensordict once, then for each request (a JSON line:
    argv, env, log) forks a rank that runs main() with that environment and
    that log as its output; the connection gets the rank's pid, then its exit
    code. run_mixed.py --server uses it when it is up, so that no
    case pays for the imports (about 4 s of CPU a Python rank). The caller
    returns once the socket listens; the server leaves after `idle_seconds`
    without a request, or on {"stop": true}.
    """
    import json
    import select
    import signal
    import socket

    if os.path.exists(path):
        os.unlink(path)
    listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    listener.bind(path)
    listener.listen(64)
    sys.stdout.flush()
    sys.stderr.flush()
    if os.fork() != 0:
        return 0  # the fixture's test: the server runs on in the child
    os.setsid()
    devnull = os.open(os.devnull, os.O_RDWR)
    for fd in (0, 1, 2):
        os.dup2(devnull, fd)
    signal.signal(signal.SIGCHLD, signal.SIG_IGN)  # handlers are reaped by the kernel
    while True:
        ready, _, _ = select.select([listener], [], [], idle_seconds)
        if not ready:
            break
        conn, _ = listener.accept()
        try:
            request = json.loads(conn.makefile().readline() or "{}")
        except ValueError:
            request = {}
        if request.get("stop"):
            conn.close()
            break
        if not all(key in request for key in ("argv", "env", "log")):
            conn.close()  # a probe, or nothing to run
            continue
        if os.fork() != 0:
            conn.close()
            continue
        # The handler: forks the rank, reports its pid and exit code.
        listener.close()
        signal.signal(signal.SIGCHLD, signal.SIG_DFL)
        pid = os.fork()
        if pid == 0:
            conn.close()
            fd = os.open(request["log"], os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
            os.dup2(fd, 1)
            os.dup2(fd, 2)
            os.close(fd)
            os.environ.clear()
            os.environ.update(request["env"])
            sys.path[:0] = [p for p in request["env"].get("PYTHONPATH", "").split(os.pathsep) if p]
            sys.argv = request["argv"]
            code = 1
            try:
                code = main()
            finally:
                sys.stdout.flush()
                sys.stderr.flush()
                os._exit(code)
        conn.sendall(f'{{"pid": {pid}}}\n'.encode())
        _, status = os.waitpid(pid, 0)
        try:
            conn.sendall(f'{{"status": {os.waitstatus_to_exitcode(status)}}}\n'.encode())
        except OSError:
            pass
        os._exit(0)
    listener.close()
    os.unlink(path)
    os._exit(0)


if __name__ == "__main__":
    # The suite's fixture: --serve SOCKET (see serve()).
    if len(sys.argv) == 3 and sys.argv[1] == "--serve":
        sys.exit(serve(sys.argv[2]))
    # run_mixed.py: --fork RANK=LOG,RANK=LOG SCENARIO ARGS...
    if len(sys.argv) > 2 and sys.argv[1] == "--fork":
        spec = [(int(r), log) for r, log in (item.split("=", 1) for item in sys.argv[2].split(","))]
        sys.argv = [sys.argv[0], *sys.argv[3:]]
        sys.exit(fork_ranks(spec))
    sys.exit(main())
