// The same schema as stack.yaml, as an annotated C++ header.
#pragma once

#include <cstdint>
#include <string>

#include <tensordict/annotations.h>
#include <tensordict/tensorclass.h>
#include <torch/types.h>

namespace tc::test::stack {

struct TC_TENSORCLASS() Env : tensordict::TensorClass<Env> {
  TC_FIELD(dtype = "float32", shape = "..., 2") torch::Tensor obs;
  /// One task per environment
  tensordict::NonTensorStack<std::string> task = "reach";
  tensordict::NonTensorStack<std::int64_t> seed;
  tensordict::NonTensorStack<double> scale = 0.5;
  tensordict::NonTensorStack<bool> done = false;
};

}  // namespace tc::test::stack
