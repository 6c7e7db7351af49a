// The same schema as agent.yaml, as an annotated C++ header.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include <tensordict/annotations.h>
#include <tensordict/tensorclass.h>
#include <torch/types.h>

namespace rl {

/// Where the agent is.
struct TC_TENSORCLASS() Agent : tensordict::TensorClass<Agent> {
  /// Position in metres
  TC_FIELD(dtype = "float32", shape = "..., 2") torch::Tensor pos;
  TC_FIELD(dtype = "float32", shape = "..., 2") torch::Tensor vel;
};

/// One environment step.
struct TC_TENSORCLASS(batch = "env,time") Observation : tensordict::TensorClass<Observation> {
  TC_FIELD(dtype = "uint8", shape = "..., 3, H, W", doc = "RGB frame") torch::Tensor pixels;
  TC_FIELD(dtype = "float32", shape = "..., H, W", optional) torch::Tensor depth;
  torch::Tensor reward;  // unannotated: any dtype and shape
  Agent agent;
  std::string task = "pick \"red\"";
  std::int64_t steps = -3;
  double scale = 1.5;
  bool done = false;
  std::vector<std::string> tags = {"a", "b"};
  std::vector<int64_t> ids;

  int helper() const { return 42; }  // methods are ignored
};

}  // namespace rl
