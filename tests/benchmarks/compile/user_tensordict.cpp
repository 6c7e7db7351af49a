// A user's translation unit, three ways (tests/benchmarks/timings.py times
// their compiles): the five calls on a plain TensorDict.
#include <tensordict/tensordict.h>

#include <string>

tensordict::TensorDict five_calls(const tensordict::TensorDict& td, const std::string& prefix) {
  tensordict::TensorDict first = td.index({0});
  tensordict::TensorDict head = td.index({at::indexing::Slice(0, 2)});
  tensordict::TensorDict both = tensordict::stack({first, head.index({1})});
  return both.to(at::kDouble).memmap(prefix);
}
