// Exceptions thrown by the runtime. They map onto tensordict's Python errors so
// that a user catching them knows what happened:
//   KeyError          -> tensordict::KeyError (a std::out_of_range)
//   IndexError        -> std::out_of_range
//   ValueError        -> std::invalid_argument
//   RuntimeError      -> std::runtime_error (shape, device, lock problems)
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
