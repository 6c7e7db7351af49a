#pragma once
#include <tensordict/annotations.h>
#include <tensordict/tensorclass.h>

namespace rl {
struct TC_TENSORCLASS() Obs {
  at::Tensor pixels;
};
}  // namespace rl
// expect: 6:25: error: tensorclass 'Obs' must derive from tensordict::TensorClass<Obs>: struct TC_TENSORCLASS(...) Obs : tensordict::TensorClass<Obs> { ... }
