// A user's translation unit, three ways (tests/benchmarks/timings.py times
// their compiles): the five calls on a generated type, tc::rl::Transition of
// schemas/rl.yaml.
#include "rl.tc.h"

#include <string>

tc::rl::Transition five_calls(const tc::rl::Transition& step, const std::string& prefix) {
  tc::rl::Transition first = step.index({0});
  tc::rl::Transition head = step.index({at::indexing::Slice(0, 2)});
  tc::rl::Transition both = tc::rl::Transition::stack({first, head.index({1})});
  return both.to(at::kDouble).memmap(prefix);
}
