// Pendulum-v1 as gymnasium 1.x defines it
// (gymnasium/envs/classic_control/pendulum.py), batched over environments:
// the same equations, limits, reward and 200-step truncation, the same reset
// distribution (theta uniform in [-pi, pi], its velocity in [-1, 1]).
// Plain C++ on doubles, as gymnasium steps numpy float64 state; the
// observation is float32. tests/torchrl checks it step for step against
// gymnasium.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <random>
#include <vector>

namespace pendulum {

struct Pendulum {
  static constexpr double kMaxSpeed = 8.0, kMaxTorque = 2.0, kDt = 0.05, kG = 10.0, kM = 1.0, kL = 1.0;
  static constexpr int kMaxSteps = 200;  // gymnasium's TimeLimit for Pendulum-v1
  static constexpr double kPi = 3.14159265358979323846;

  struct Step {
    double reward;
    bool terminated, truncated;  // Pendulum never terminates; it truncates at kMaxSteps
  };

  explicit Pendulum(int64_t num_envs, uint64_t seed = 0)
      : theta(num_envs), theta_dot(num_envs), elapsed(num_envs), rng_(seed) {
    for (int64_t i = 0; i < num_envs; ++i) reset(i);
  }

  int64_t num_envs() const { return static_cast<int64_t>(theta.size()); }

  // gymnasium's angle_normalize: ((x + pi) % (2 pi)) - pi, numpy's % (the
  // result takes the divisor's sign).
  static double angle_normalize(double x) {
    const double two_pi = 2 * kPi, y = std::fmod(x + kPi, two_pi);
    return (y < 0 ? y + two_pi : y) - kPi;
  }

  void reset(int64_t i) {
    theta[i] = uniform_(rng_) * kPi;
    theta_dot[i] = uniform_(rng_);
    elapsed[i] = 0;
  }
  void set_state(int64_t i, double th, double th_dot) {
    theta[i] = th;
    theta_dot[i] = th_dot;
    elapsed[i] = 0;
  }

  // cos(theta), sin(theta), angular velocity, as float32.
  void observe(int64_t i, float* obs) const {
    obs[0] = static_cast<float>(std::cos(theta[i]));
    obs[1] = static_cast<float>(std::sin(theta[i]));
    obs[2] = static_cast<float>(theta_dot[i]);
  }

  // One step of environment i under torque `action` (float32, as the action
  // space's dtype; clipped to [-2, 2]). As gymnasium computes it, with
  // numpy 2's promotion: the terms in u are float32, the rest float64.
  Step step(int64_t i, float action) {
    const float u = std::clamp(action, static_cast<float>(-kMaxTorque), static_cast<float>(kMaxTorque));
    const double th = theta[i], th_dot = theta_dot[i];
    const double norm = angle_normalize(th);
    const double costs = norm * norm + 0.1 * th_dot * th_dot + static_cast<double>(0.001f * (u * u));
    double new_th_dot = th_dot + (3 * kG / (2 * kL) * std::sin(th) + static_cast<double>(3.0f * u)) * kDt;
    new_th_dot = std::clamp(new_th_dot, -kMaxSpeed, kMaxSpeed);
    theta[i] = th + new_th_dot * kDt;
    theta_dot[i] = new_th_dot;
    ++elapsed[i];
    return {-costs, false, elapsed[i] >= kMaxSteps};
  }

  std::vector<double> theta, theta_dot;
  std::vector<int> elapsed;

 private:
  std::mt19937_64 rng_;
  std::uniform_real_distribution<double> uniform_{-1.0, 1.0};
};

}  // namespace pendulum
