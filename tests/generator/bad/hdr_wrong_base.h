#pragma once
#include <tensordict/annotations.h>
#include <tensordict/tensorclass.h>

namespace rl {
struct TC_TENSORCLASS() Agent : tensordict::TensorClass<Agent> {
  at::Tensor pos;
};
// Copied from Agent, base and all.
struct TC_TENSORCLASS() Obs : tensordict::TensorClass<Agent> {
  at::Tensor pixels;
};
}  // namespace rl
// expect: 10:25: error: tensorclass 'Obs' derives from tensordict::TensorClass<rl::Agent>; expected tensordict::TensorClass<Obs> (the base names the class itself)
