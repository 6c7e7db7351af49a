#pragma once
#include <string>
#include <tensordict/annotations.h>

namespace rl {
struct TC_TENSORCLASS() Obs {
  TC_FIELD(dtype = "uint8") std::string task;
};
}  // namespace rl
// expect: 7:41: error: 'dtype' applies only to tensor fields, but field 'task' has type 'std::string'
