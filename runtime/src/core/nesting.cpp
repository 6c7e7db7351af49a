#include "core/nesting.h"

#include <stdexcept>

#include "core/format.h"

namespace tensordict::detail {

namespace {
thread_local std::size_t depth = 0;
}

NestingGuard::NestingGuard(const char* op) {
  if (depth >= kMaxNestingDepth) {
    throw RuntimeError(fmt::format("{}: tensordicts nested more than {} levels deep are not supported", op,
                                         kMaxNestingDepth));
  }
  ++depth;
}

NestingGuard::~NestingGuard() { --depth; }

}  // namespace tensordict::detail
