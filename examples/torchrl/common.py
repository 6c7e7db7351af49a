"""What the TorchRL loop's scripts share: the networks, the rollout layout.

The policy network (observation -> loc, scale) is what tensorclass.export
writes for the C++ actors; the TorchRL actor wraps it in a TanhNormal over
Pendulum's torque bounds, as the C++ actor samples it (actor.cpp).
"""

from __future__ import annotations

import torch
from tensordict import TensorDict
from tensordict.nn import NormalParamExtractor, TensorDictModule, TensorDictSequential
from torchrl.modules import MLP, ProbabilisticActor, TanhNormal, ValueOperator

OBS, ACT = 3, 1
MAX_TORQUE = 2.0
HIDDEN = [64, 64]


def make_policy_net(seed: int = 0) -> TensorDictSequential:
    """observation -> loc, scale: the part exported for C++ (its weights travel)."""
    torch.manual_seed(seed)
    net = torch.nn.Sequential(MLP(in_features=OBS, out_features=2 * ACT, num_cells=HIDDEN), NormalParamExtractor())
    return TensorDictSequential(TensorDictModule(net, in_keys=["observation"], out_keys=["loc", "scale"]))


def make_actor(policy_net: TensorDictSequential) -> ProbabilisticActor:
    """TorchRL's actor over the policy network: TanhNormal in [-2, 2]."""
    return ProbabilisticActor(
        policy_net,
        in_keys=["loc", "scale"],
        out_keys=["action"],
        distribution_class=TanhNormal,
        distribution_kwargs={"low": -MAX_TORQUE, "high": MAX_TORQUE},
        return_log_prob=False,
    )


def make_qvalue(seed: int = 1) -> ValueOperator:
    torch.manual_seed(seed)
    return ValueOperator(MLP(in_features=OBS + ACT, out_features=1, num_cells=[256, 256]), in_keys=["observation", "action"])


def deterministic_action(policy_net: TensorDictSequential, observation: torch.Tensor) -> torch.Tensor:
    """TanhNormal's deterministic sample, as actor.cpp computes its probe."""
    with torch.no_grad():
        loc = policy_net(TensorDict(observation=observation, batch_size=observation.shape[:-1]))["loc"]
    lim = 1.0 - torch.finfo(loc.dtype).resolution
    return MAX_TORQUE * loc.tanh().clamp(-lim, lim)


def rollout_template(envs: int, steps: int) -> TensorDict:
    """pendulum::Transition of batch [envs, steps] (pendulum.yaml), as a TensorDict."""
    b = [envs, steps]
    f = lambda *s: torch.zeros(*b, *s)  # noqa: E731
    z = lambda: torch.zeros(*b, 1, dtype=torch.bool)  # noqa: E731
    return TensorDict(
        observation=f(OBS),
        action=f(ACT),
        next=TensorDict(
            observation=f(OBS), reward=f(1), done=z(), terminated=z(), truncated=z(), episode_reward=f(1), batch_size=b
        ),
        batch_size=b,
    )


def probe_template(probes: int = 5) -> TensorDict:
    """pendulum::Probe (actor.cpp's five fixed observations)."""
    return TensorDict(
        observation=torch.zeros(probes, OBS),
        action=torch.zeros(probes, ACT),
        version=torch.zeros(probes, dtype=torch.int64),
        batch_size=[probes],
    )
