// warnings_of: the warnings (c10's TORCH_WARN, tensordict's UserWarning) a
// call gives, for tests of warning messages (shared by the test suites).
#pragma once

#include <c10/util/Exception.h>
#include <torch/version.h>

#include <string>
#include <vector>

namespace td_test {

// Records warnings while installed. libtorch 2.x hands the handler a
// c10::Warning and keeps the guard in c10::WarningUtils; 1.13 hands it the
// message and keeps the guard in the c10::Warning namespace.
class WarningCapture : public c10::WarningHandler {
 public:
#if TORCH_VERSION_MAJOR >= 2
  void process(const c10::Warning& warning) override { messages.push_back(warning.msg()); }
  using Guard = c10::WarningUtils::WarningHandlerGuard;
#else
  void process(const c10::SourceLocation&, const std::string& msg, const bool) override { messages.push_back(msg); }
  using Guard = c10::Warning::WarningHandlerGuard;
#endif
  std::vector<std::string> messages;
};

// The messages of the warnings `fn()` gives, in order.
template <class Fn>
std::vector<std::string> warnings_of(Fn&& fn) {
  WarningCapture capture;
  WarningCapture::Guard guard(&capture);
  fn();
  return capture.messages;
}

}  // namespace td_test
