// The same schema as typed.yaml, as an annotated C++ header: every class says
// its python_form (they must agree), and the nested Agent's header says its own.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include <tensordict/annotations.h>
#include <tensordict/tensorclass.h>
#include <torch/types.h>

#include "typed_common_header.h"

namespace tct::typed {

struct TC_TENSORCLASS(python_form = "typed_tensordict") Goal : tensordict::TensorClass<Goal> {
  TC_FIELD(dtype = "float32", shape = "..., 2") torch::Tensor target;
  double tolerance = 0.5;
  std::vector<std::string> tags = {"a", "b c"};
  std::int64_t steps = 10;
  bool sparse = true;
};

/// One step of a batch of environments.
struct TC_TENSORCLASS(batch = "env", python_form = "typed_tensordict") Step : tensordict::TensorClass<Step> {
  TC_FIELD(dtype = "uint8", shape = "..., 3, H, W", doc = "RGB frame") torch::Tensor pixels;
  TC_FIELD(dtype = "float32", shape = "..., H, W", optional) torch::Tensor heights;
  TC_FIELD(dtype = "float32", shape = "...") torch::Tensor reward;
  torch::Tensor extra;
  tct::typed::common::Agent agent;
  std::optional<Goal> goal;
  std::string task = "reach";
  tensordict::NonTensorStack<std::int64_t> seed;
};

}  // namespace tct::typed
