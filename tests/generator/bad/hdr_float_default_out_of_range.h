#pragma once
#include <tensordict/annotations.h>
#include <tensordict/tensorclass.h>

namespace rl {
struct TC_TENSORCLASS() Obs : tensordict::TensorClass<Obs> {
  double huge = 1e400;  // clang only warns
};
}  // namespace rl
// expect: 7:10: error: invalid default '1e400' for float field 'huge'; expected a number within the range of a double (at most about 1.8e308 in magnitude; other than 0, at least about 4.9e-324)
