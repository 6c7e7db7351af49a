// Shared by the rl suite: transitions to store, and their expected rows.
#pragma once

#include <ATen/ATen.h>
#include <catch2/catch.hpp>
#include <tensordict/rl.h>
#include <tensordict/tensordict.h>

#include "../message_of.h"
#include "../temp_dir.h"

namespace td_test {

#define TD_MESSAGE(expr) ::td_test::message_of([&] { (void)(expr); })

// n transitions numbered from `first`: obs[i] = first + i (in every column),
// ("next", "reward")[i] = -(first + i), done[i] = (first + i) odd.
inline tensordict::TensorDict transitions(int64_t first, int64_t n) {
  const at::Tensor id = at::arange(first, first + n, at::kFloat);
  return tensordict::TensorDict(
      {{"obs", id.unsqueeze(1).repeat({1, 3})},
       {tensordict::NestedKey({"next", "reward"}), -id.unsqueeze(1)},
       {"done", (at::arange(first, first + n, at::kLong) % 2 == 1).unsqueeze(1)}},
      {n});
}

// The transition number each stored row holds (obs[:, 0]).
inline at::Tensor ids_of(const tensordict::TensorDict& rows) { return rows.get("obs").select(1, 0).to(at::kLong); }

}  // namespace td_test
