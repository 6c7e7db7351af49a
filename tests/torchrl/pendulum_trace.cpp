// Prints Pendulum-v1 trajectories of examples/torchrl/pendulum.h for
// check_pendulum.py, which compares them with gymnasium's.
//
//   pendulum_trace step THETA THETA_DOT ACTION...   one line per step:
//                                                   obs0 obs1 obs2 reward terminated truncated
//   pendulum_trace reset SEED COUNT                 COUNT initial states: theta theta_dot obs0 obs1 obs2
//   pendulum_trace normalize X...                   angle_normalize(X), one per line
#include <cstdio>
#include <cstdlib>
#include <string>

#include "pendulum.h"

int main(int argc, char** argv) {
  if (argc < 2) {
    std::fprintf(stderr, "usage: pendulum_trace step|reset|normalize ...\n");
    return 2;
  }
  const std::string mode = argv[1];
  pendulum::Pendulum env(1, 0);
  float obs[3];
  if (mode == "step" && argc >= 4) {
    env.set_state(0, std::strtod(argv[2], nullptr), std::strtod(argv[3], nullptr));
    for (int i = 4; i < argc; ++i) {
      const auto s = env.step(0, std::strtof(argv[i], nullptr));
      env.observe(0, obs);
      std::printf("%.9g %.9g %.9g %.17g %d %d\n", obs[0], obs[1], obs[2], s.reward, s.terminated, s.truncated);
    }
    return 0;
  }
  if (mode == "reset" && argc == 4) {
    pendulum::Pendulum batch(std::atoll(argv[3]), std::strtoull(argv[2], nullptr, 10));
    for (int64_t i = 0; i < batch.num_envs(); ++i) {
      batch.observe(i, obs);
      std::printf("%.17g %.17g %.9g %.9g %.9g\n", batch.theta[i], batch.theta_dot[i], obs[0], obs[1], obs[2]);
    }
    return 0;
  }
  if (mode == "normalize") {
    for (int i = 2; i < argc; ++i)
      std::printf("%.17g\n", pendulum::Pendulum::angle_normalize(std::strtod(argv[i], nullptr)));
    return 0;
  }
  std::fprintf(stderr, "pendulum_trace: bad arguments\n");
  return 2;
}
