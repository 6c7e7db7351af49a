// The same schema as typed_common.yaml, as an annotated C++ header.
#pragma once

#include <string>

#include <tensordict/annotations.h>
#include <tensordict/tensorclass.h>
#include <torch/types.h>

namespace tct::typed::common {

/// Where the agent is.
struct TC_TENSORCLASS(python_form = "both") Agent : tensordict::TensorClass<Agent> {
  /// Position in metres
  TC_FIELD(dtype = "float32", shape = "..., 2") torch::Tensor pos;
  std::string nickname = "agent";
};

}  // namespace tct::typed::common
