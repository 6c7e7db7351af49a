"""Trains a Gaussian policy in Python and exports it for C++.

    python train_policy.py policy.pt2

The policy learns to imitate a target controller (action = -obs[..., :2]) by
maximising the log-likelihood of its actions, then tensorclass.export writes
it, called on the schema's robot.PolicyStep, as an AOTInductor package that
run_policy (C++) loads. Needs the generated module `robot` (tensorclass-gen
--lang python robot.yaml) and python/ of this project on PYTHONPATH.
"""

import sys

import torch
from robot import PolicyStep
from tensordict import TensorDict
from tensordict.nn import (
    NormalParamExtractor,
    ProbabilisticTensorDictModule,
    ProbabilisticTensorDictSequential,
    TensorDictModule,
)
from torch import nn

from tensorclass.export import export

torch.manual_seed(0)
policy = ProbabilisticTensorDictSequential(
    TensorDictModule(nn.Sequential(nn.Linear(4, 32), nn.Tanh(), nn.Linear(32, 4)), in_keys=["obs"], out_keys=["params"]),
    TensorDictModule(NormalParamExtractor(), in_keys=["params"], out_keys=["loc", "scale"]),
    ProbabilisticTensorDictModule(
        in_keys=["loc", "scale"], out_keys=["action"], distribution_class=torch.distributions.Normal,
        return_log_prob=True,
    ),
)
optimizer = torch.optim.Adam(policy.parameters(), lr=1e-2)
for step in range(300):
    obs = torch.randn(64, 4)
    batch = TensorDict(obs=obs, action=-obs[:, :2], batch_size=[64])
    loss = -policy.log_prob(batch).mean()
    optimizer.zero_grad()
    loss.backward()
    optimizer.step()
print(f"trained: negative log-likelihood {loss.item():.3f}")

path = export(policy, PolicyStep(obs=torch.randn(8, 4), batch_size=[8]), sys.argv[1])
print(f"exported to {path}")
