// The C++ side of the mixed-group scenarios (run_mixed.py starts this binary
// and mixed_rank.py as the ranks of one torch.distributed group). Each
// scenario registers itself by name; the Python side has the same names.
#pragma once

#include <ATen/core/Tensor.h>

#include <functional>
#include <string>
#include <vector>

#include "tensordict/distributed.h"

namespace mixed {

struct Rank {
  int rank = 0, world = 0;
  tensordict::ProcessGroupPtr group;
  std::vector<std::string> args;  // after the scenario's name
};

using Scenario = std::function<void(const Rank&)>;

struct Register {
  Register(const char* name, Scenario scenario);
};

// Throws with `what` unless `ok`.
void expect(bool ok, const std::string& what);
// Throws unless `got` has `want`'s dtype, shape and values exactly.
void expect_equal(const at::Tensor& got, const at::Tensor& want, const std::string& what);
// Throws unless `f` throws an error whose message contains `fragment`.
void expect_error(const std::function<void()>& f, const std::string& fragment, const std::string& what);

}  // namespace mixed
