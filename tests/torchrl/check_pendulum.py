#!/usr/bin/env python3
"""examples/torchrl/pendulum.h against gymnasium's Pendulum-v1, step for step.

    check_pendulum.py PENDULUM_TRACE

For several seeds, gymnasium's env (gymnasium.make, with its 200-step
TimeLimit) is reset and stepped with random torques, some past the bounds
(clipped to [-2, 2]); pendulum_trace starts from the same state and takes the
same torques. Every step's observation, reward and terminated/truncated
flags must agree (observations to 1e-5, rewards to 1e-5 relative), over 200
steps, through the speed limit (states started near it under full torque) and
the angle normalization of the cost (the pole spun past pi). Then the reset
distribution: theta in [-pi, pi], its velocity in [-1, 1], both covering the
range; and angle_normalize against gymnasium's.
"""

import subprocess
import sys

import gymnasium as gym
import numpy as np
from gymnasium.envs.classic_control.pendulum import angle_normalize

TRACE = sys.argv[1]
failures = []


def trace(*args) -> np.ndarray:
    out = subprocess.run([TRACE, *map(str, args)], check=True, capture_output=True, text=True).stdout
    return np.array([[float(x) for x in line.split()] for line in out.splitlines()])


def compare(name, th, thdot, actions, env):
    env.unwrapped.state = np.array([th, thdot])
    want = []
    for a in actions:
        obs, reward, terminated, truncated, _ = env.step(np.array([a], dtype=np.float32))
        want.append([*obs, reward, terminated, truncated])
    want = np.array(want, dtype=np.float64)
    got = trace("step", repr(float(th)), repr(float(thdot)), *[repr(float(a)) for a in actions])
    if got.shape != want.shape:
        failures.append(f"{name}: {got.shape[0]} steps, gymnasium {want.shape[0]}")
        return
    bad_obs = np.abs(got[:, :3] - want[:, :3]).max()
    bad_rew = (np.abs(got[:, 3] - want[:, 3]) / np.maximum(1.0, np.abs(want[:, 3]))).max()
    if bad_obs > 1e-5 or bad_rew > 1e-5 or not np.array_equal(got[:, 4:], want[:, 4:]):
        first = int(np.argmax((np.abs(got - want) > 1e-5).any(axis=1)))
        failures.append(f"{name}: differs from step {first}: got {got[first].tolist()}, gymnasium {want[first].tolist()} "
                        f"(max obs error {bad_obs:.2e}, reward {bad_rew:.2e})")
    return want


rng = np.random.default_rng(0)
max_speed_seen = 0.0
for seed in range(6):
    env = gym.make("Pendulum-v1")
    env.reset(seed=seed)
    th, thdot = env.unwrapped.state
    actions = rng.uniform(-3.0, 3.0, size=200).astype(np.float32)  # past the bounds: clipped
    want = compare(f"seed {seed}", th, thdot, actions, env)
    if want is not None:
        if not (want[-1, 5] == 1 and want[:-1, 5].sum() == 0):
            failures.append(f"seed {seed}: gymnasium did not truncate at step 200 alone")
        max_speed_seen = max(max_speed_seen, np.abs(want[:, 2]).max())
# At the speed limit and spinning past pi (the cost's angle normalization).
env = gym.make("Pendulum-v1")
env.reset(seed=100)
spin = compare("spinning at the speed limit", 3.0, 7.9, np.full(200, 2.0, dtype=np.float32), env)
if spin is not None and np.abs(spin[:, 2]).max() < 8.0 - 1e-6:
    failures.append("the speed-limit trajectory never reached the limit")
env = gym.make("Pendulum-v1")
env.reset(seed=101)
compare("spinning backwards", -3.0, -7.5, np.full(200, -5.0, dtype=np.float32), env)

# angle_normalize, including numpy's modulo of negative numbers.
xs = np.array([-10.0, -7.0, -np.pi, -1.0, 0.0, 1.0, np.pi, 4.0, 7.0, 12.5, 100.0])
got = trace("normalize", *[repr(float(x)) for x in xs]).ravel()
if np.abs(got - angle_normalize(xs)).max() > 1e-12:
    failures.append(f"angle_normalize: {got.tolist()} against {angle_normalize(xs).tolist()}")

# The reset distribution: gymnasium's bounds, covered.
states = trace("reset", 7, 2000)
th, thdot, obs = states[:, 0], states[:, 1], states[:, 2:]
if th.min() < -np.pi or th.max() > np.pi or thdot.min() < -1 or thdot.max() > 1:
    failures.append(f"reset out of bounds: theta {th.min()}..{th.max()}, velocity {thdot.min()}..{thdot.max()}")
if th.min() > -0.95 * np.pi or th.max() < 0.95 * np.pi or thdot.min() > -0.95 or thdot.max() < 0.95:
    failures.append("reset does not cover gymnasium's range")
gym_states = []
for seed in range(300):
    env.reset(seed=seed)
    gym_states.append(env.unwrapped.state.copy())
gym_states = np.array(gym_states)
if not (np.abs(gym_states[:, 0]) <= np.pi).all() or not (np.abs(gym_states[:, 1]) <= 1).all():
    failures.append("gymnasium's own resets are outside the bounds this test assumes")
if np.abs(obs[:, 0] - np.cos(th)).max() > 1e-6 or np.abs(obs[:, 2] - thdot).max() > 1e-6:
    failures.append("reset observations do not match the states")

for f in failures:
    print("FAIL:", f)
print(f"{'FAIL' if failures else 'PASS'}: 8 trajectories of 200 steps against gymnasium {gym.__version__}, "
      f"angle_normalize, 2000 resets (max |velocity| seen {max(max_speed_seen, 8.0 if spin is not None else 0):.3f})")
sys.exit(1 if failures else 0)
