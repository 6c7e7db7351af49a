// The tags of tensordict's per-leaf messages (private).
#pragma once

#include <cstdint>

namespace tensordict::dist {

// tensordict.utils._int_generator(seed): numpy's default_rng(seed) (a
// SeedSequence seeding PCG64), its first 8 bytes read big-endian, modulo
// 10000. `seed` must be non-negative (numpy refuses negative seeds).
int int_generator(uint64_t seed);

// The tag after `tag`: tag + 1, or with pseudo_rand int_generator(tag + 1)
// (tensordict's _send/_recv; the first leaf's tag follows init_tag - 1).
int next_tag(int tag, bool pseudo_rand);

}  // namespace tensordict::dist
