"""Writes bench_aoti's packages (tensorclass.export, CPU).

    aoti_package.py OUT.pt2 [MLP.pt2 FOLDED.pt2]

OUT.pt2: ten [64, 8] float32 inputs x0..x9, their sum at y (fixed batch size).
MLP.pt2: a policy of about 1M float32 parameters (obs [*, 32] -> action
[*, 8]), with swappable weights (the default); FOLDED.pt2: the same with
swappable_weights=False, whose calls bench_aoti compares. `aoti_package.py
--mlp MLP.pt2` writes only the first MLP (bench_aoti's timed export).
"""

import sys

import torch
from tensordict import TensorDict
from tensordict.nn import TensorDictModule
from torch import nn

from tensorclass.export import export


def mlp_policy():
    torch.manual_seed(0)
    net = nn.Sequential(nn.Linear(32, 512), nn.Tanh(), nn.Linear(512, 1024), nn.Tanh(), nn.Linear(1024, 512),
                        nn.Tanh(), nn.Linear(512, 8))
    return TensorDictModule(net, in_keys=["obs"], out_keys=["action"])


def export_mlp(path, **kwargs):
    export(mlp_policy(), TensorDict(obs=torch.randn(16, 32), batch_size=[16]), path, **kwargs)


if sys.argv[1] == "--mlp":
    export_mlp(sys.argv[2])
    sys.exit(0)

keys = [f"x{i}" for i in range(10)]
module = TensorDictModule(lambda *xs: torch.stack(xs).sum(0), in_keys=keys, out_keys=["y"])
example = TensorDict({k: torch.randn(64, 8) for k in keys}, batch_size=[64])
export(module, example, sys.argv[1], dynamic_batch=False)
if len(sys.argv) > 2:
    export_mlp(sys.argv[2])
    export_mlp(sys.argv[3], swappable_weights=False)
