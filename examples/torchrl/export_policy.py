#!/usr/bin/env python3
"""Exports the loop's policy network for the C++ actors.

    python export_policy.py policy.pt2

The network (common.make_policy_net: observation -> loc, scale) is exported
with tensorclass.export, its weights swappable: the learner later sends new
ones, which the actors load into the running package. Any initial weights do:
the learner sends its own before the first rollout.
"""

import sys
import time

import torch
from common import OBS, make_policy_net
from tensordict import TensorDict

from tensorclass.export import export

start = time.monotonic()
torch.set_num_threads(1)
net = make_policy_net()
path = export(net, TensorDict(observation=torch.randn(4, OBS), batch_size=[4]), sys.argv[1])
print(f"exported the policy network to {path} in {time.monotonic() - start:.1f} s")
