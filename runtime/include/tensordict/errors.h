// Exceptions thrown by the runtime. They map onto tensordict's Python errors so
// that a user catching them knows what happened:
//   KeyError          -> tensordict::KeyError (a std::out_of_range)
//   IndexError        -> std::out_of_range
//   ValueError        -> std::invalid_argument
//   TypeError         -> std::invalid_argument
//   RuntimeError      -> std::runtime_error (shape, device, lock problems)
// Where libtorch raises for a leaf, its error keeps its meaning the same way
// (c10::IndexError -> std::out_of_range, c10::ValueError and c10::TypeError ->
// std::invalid_argument, other c10::Errors -> std::runtime_error), with the
// op and the key path in front of libtorch's message: no c10::Error escapes
// an op on a tensordict.
// Messages name the key path and the shapes involved.
#pragma once

#include <stdexcept>
#include <string>

namespace tensordict {

class KeyError : public std::out_of_range {
 public:
  using std::out_of_range::out_of_range;
};

}  // namespace tensordict
