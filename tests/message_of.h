// message_of: what a call throws, for tests of error messages (shared by the
// test suites).
#pragma once

#include <exception>
#include <string>

namespace td_test {

// The message of the exception `fn()` throws, or "<no exception>".
template <class Fn>
std::string message_of(Fn&& fn) {
  try {
    fn();
  } catch (const std::exception& e) {
    return e.what();
  }
  return "<no exception>";
}

}  // namespace td_test
