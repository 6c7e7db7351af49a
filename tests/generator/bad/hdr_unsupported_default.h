#pragma once
#include <string>
#include <tensordict/annotations.h>
#include <tensordict/tensorclass.h>

namespace rl {
struct TC_TENSORCLASS() Obs : tensordict::TensorClass<Obs> {
  std::string task = std::string("x") + "y";
};
}  // namespace rl
// expect: 8:15: error: unsupported default member initializer for field 'task'; use a literal ("text", 42, 1.5, true) or a braced list of literals
