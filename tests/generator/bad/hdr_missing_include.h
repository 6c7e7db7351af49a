#pragma once
#include <tensordict/annotations.h>
#include <not/there.h>

struct TC_TENSORCLASS() Obs {
  torch::Tensor reward;
};
// expect: 3:10: error: 'not/there.h' file not found
// expect: error: the header does not compile (1 error above); tensorclass-gen needs a header that compiles
