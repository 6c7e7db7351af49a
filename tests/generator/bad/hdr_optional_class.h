#pragma once
#include <tensordict/annotations.h>
#include <tensordict/tensorclass.h>

namespace rl {
struct TC_TENSORCLASS() Pose : tensordict::TensorClass<Pose> {
  TC_FIELD(shape = "..., 3") at::Tensor xyz;
};
struct TC_TENSORCLASS() Obs : tensordict::TensorClass<Obs> {
  TC_FIELD(optional) Pose pose;
};
}  // namespace rl
// expect: 10:27: error: field 'pose': an optional nested tensorclass is declared as std::optional<Pose>
