// The annotated header of docs/schema-language.md ("Annotated headers"), in a
// namespace of its own: tensorclass_generate() makes tc_header.tc.h from it,
// and test_tensorclass_header.cpp defines the constructor declared here.
#pragma once

#include <string>
#include <utility>

#include <tensordict/annotations.h>
#include <tensordict/tensorclass.h>

namespace tch {

struct TC_TENSORCLASS() Agent : tensordict::TensorClass<Agent> {
  TC_FIELD(dtype = "float32", shape = "..., 2") at::Tensor pos;
  TC_FIELD(dtype = "float32", shape = "2, 2", unbatched, optional) at::Tensor frame;  // shared by the batch
};

/// One environment step.
struct TC_TENSORCLASS(batch = "env,time") Observation : tensordict::TensorClass<Observation> {
  TC_FIELD(dtype = "uint8", shape = "..., 3, H, W", doc = "RGB frame") at::Tensor pixels;
  TC_FIELD(dtype = "float32", shape = "..., H, W", optional) at::Tensor depth;
  at::Tensor reward;        // any dtype/shape
  Agent agent;              // a TC_TENSORCLASS struct -> nested
  std::string task = "";    // literal initializers become defaults

  Observation() = default;  // TensorClass's ops default-construct their results
  // Defined where tc_header.tc.h is included: init_ reads the field table.
  Observation(at::Tensor px, at::Tensor r, Agent a, tensordict::BatchSizeArg batch_size);
};

}  // namespace tch
