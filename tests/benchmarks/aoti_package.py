"""Writes bench_aoti's package: ten [64, 8] float32 inputs x0..x9, their sum
at y (tensorclass.export, CPU, fixed batch size). Usage: aoti_package.py OUT.pt2
"""

import sys

import torch
from tensordict import TensorDict
from tensordict.nn import TensorDictModule

from tensorclass.export import export

keys = [f"x{i}" for i in range(10)]
module = TensorDictModule(lambda *xs: torch.stack(xs).sum(0), in_keys=keys, out_keys=["y"])
example = TensorDict({k: torch.randn(64, 8) for k in keys}, batch_size=[64])
export(module, example, sys.argv[1], dynamic_batch=False)
