#pragma once
#include <tensordict/annotations.h>
#include <tensordict/tensorclass.h>

// The header compiles; what is generated from it would reopen namespace std.
namespace std {
struct TC_TENSORCLASS() Obs : tensordict::TensorClass<Obs> {
  at::Tensor reward;
};
}  // namespace std
// expect: 7:25: error: invalid namespace 'std': 'std' is reserved for the C++ standard library
