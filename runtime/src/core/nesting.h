// The bound on how deep tensordicts nest (private).
#pragma once

#include <cstddef>

namespace tensordict::detail {

// Walks over a tree (apply, clone, repr, lock, loading, saving) recurse once
// per level, so an unbounded nesting (a crafted file, or a tree built level
// by level) would overflow the stack. Past this many levels below the top,
// they throw instead. Python's own recursion limit (1000 frames, several per
// level) stops tensordict far earlier.
inline constexpr std::size_t kMaxNestingDepth = 256;

// Counts the nesting depth of the walk running on this thread: each level's
// recursion holds one guard. Throws RuntimeError naming `op` when the
// depth passes kMaxNestingDepth.
class NestingGuard {
 public:
  explicit NestingGuard(const char* op);
  ~NestingGuard();
  NestingGuard(const NestingGuard&) = delete;
  NestingGuard& operator=(const NestingGuard&) = delete;
};

}  // namespace tensordict::detail
