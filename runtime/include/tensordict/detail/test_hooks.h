// Named points inside the memmap persistence where the hostile suite plays a
// concurrent process or an attacker at an exact moment (swapping a path
// between a check and a write), so that a race is tested deterministically
// instead of hoped for. Not an API: nothing sets a hook outside tests.
#pragma once

#include <string_view>

namespace tensordict::detail {

// Called with the point's name ("memmap: staging created", "append: checked",
// "load: linked data file"); nullptr (the default) calls nothing.
using TestHook = void (*)(std::string_view point);
// Sets the hook of every thread; returns the one before.
TestHook set_test_hook(TestHook hook);
// Calls the hook, if one is set, with `point`.
void test_hook(std::string_view point);

}  // namespace tensordict::detail
