#pragma once
#include <tensordict/annotations.h>
#include <tensordict/tensorclass.h>

namespace rl {
class TC_TENSORCLASS() Obs : tensordict::TensorClass<Obs> {
 public:
  at::Tensor pixels;
};
}  // namespace rl
// expect: 6:24: error: tensorclass 'Obs' must derive publicly from tensordict::TensorClass<Obs> (a class's bases are private unless marked public)
