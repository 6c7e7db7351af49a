"""Trains a Gaussian policy in Python, exports it for C++, trains on and
hands the new weights over.

    python train_policy.py policy.pt2

The policy learns to imitate a target controller (action = -obs[..., :2]) by
maximising the log-likelihood of its actions. After a first round,
tensorclass.export writes it, called on the schema's robot.PolicyStep, as an
AOTInductor package that run_policy (C++) loads. Then the learner trains on
and writes its new weights, TensorDict.from_module(policy), next to the
package (policy.pt2.weights, a memmap tree): run_policy loads them into the
running package with to_module, without exporting again. (Over the wire,
the learner sends the same tensordict with tensordict's send/broadcast.)
Needs the generated module `robot` (tensorclass-gen --lang python
robot.yaml) and python/ of this project on PYTHONPATH.
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


def train(steps):
    for _ in range(steps):
        obs = torch.randn(64, 4)
        batch = TensorDict(obs=obs, action=-obs[:, :2], batch_size=[64])
        loss = -policy.log_prob(batch).mean()
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
    return loss.item()


print(f"trained: negative log-likelihood {train(40):.3f}")
path = export(policy, PolicyStep(obs=torch.randn(8, 4), batch_size=[8]), sys.argv[1])
print(f"exported to {path}")

# The learner trains on; the actor gets the new weights as they are.
print(f"trained on: negative log-likelihood {train(300):.3f}")
weights = TensorDict.from_module(policy).data
weights.memmap(sys.argv[1] + ".weights", existsok=True)
print(f"new weights in {sys.argv[1]}.weights")
