// Generated tensorclasses of schemas/rl.yaml with values every rank computes
// on its own (shared by test_tensorclass.cpp and the mixed scenarios, whose
// Python side, mixed_rank.py, builds the same ones).
#pragma once

#include <ATen/ATen.h>

#include "rl.tc.h"

namespace td_test {

inline tc::rl::Observation observation(int64_t n, double seed) {
  return tc::rl::Observation(
      {.pixels = (at::arange(n * 3 * 2 * 2).reshape({n, 3, 2, 2}) + static_cast<int64_t>(seed)).to(at::kByte),
       .state = at::arange(n * 4, at::kFloat).reshape({n, 4}) * seed},
      {n});
}

inline tc::rl::Transition transition(int64_t n, double seed) {
  return tc::rl::Transition({.observation = observation(n, seed),
                             .action = at::full({n, 2}, seed),
                             .reward = at::full({n, 1}, seed + 1),
                             .done = at::zeros({n, 1}, at::kBool),
                             .terminated = at::ones({n, 1}, at::kBool),
                             .next = observation(n, seed + 1),
                             .env_name = "walk"},
                            {n});
}

}  // namespace td_test
