#pragma once
#include <string>
#include <tensordict/annotations.h>
#include <tensordict/tensorclass.h>

namespace rl {
struct TC_TENSORCLASS() Obs : tensordict::TensorClass<Obs> {
  TC_FIELD(unbatched) std::string task;
};
}  // namespace rl
// expect: 8:35: error: 'unbatched' applies only to tensor fields, but field 'task' has type 'std::string'
