// numpy's SeedSequence and PCG64, as far as tensordict's _int_generator uses
// them (numpy/random/bit_generator.pyx, _pcg64.pyx, pcg64.h): the pool of
// four 32-bit words mixed from the seed, four 64-bit words drawn from it for
// PCG64's state and increment, and one XSL-RR output.
#include "distributed/tags.h"

#include <array>
#include <vector>

namespace tensordict::dist {

namespace {

constexpr uint32_t kInitA = 0x43b0d7e5, kMultA = 0x931e8875, kInitB = 0x8b51f9dd, kMultB = 0x58f38ded;
constexpr uint32_t kMixMultL = 0xca01f9dd, kMixMultR = 0x4973f715;
constexpr int kXShift = 16;
constexpr int kPoolSize = 4;

__extension__ typedef unsigned __int128 u128;  // PCG64's 128-bit state (GCC and Clang)

struct HashMix {
  uint32_t hash_const = kInitA;
  uint32_t operator()(uint32_t value) {
    value ^= hash_const;
    hash_const *= kMultA;
    value *= hash_const;
    value ^= value >> kXShift;
    return value;
  }
};

uint32_t mix(uint32_t x, uint32_t y) {
  uint32_t result = kMixMultL * x - kMixMultR * y;
  result ^= result >> kXShift;
  return result;
}

// SeedSequence(seed).generate_state(4, uint64).
std::array<uint64_t, 4> seed_sequence_state(uint64_t seed) {
  // The seed as 32-bit words, least significant first ([0] for 0).
  std::vector<uint32_t> entropy{static_cast<uint32_t>(seed)};
  if (seed >> 32) entropy.push_back(static_cast<uint32_t>(seed >> 32));
  HashMix hashmix;
  std::array<uint32_t, kPoolSize> pool{};
  for (int i = 0; i < kPoolSize; ++i) pool[i] = hashmix(i < static_cast<int>(entropy.size()) ? entropy[i] : 0);
  for (int src = 0; src < kPoolSize; ++src) {
    for (int dst = 0; dst < kPoolSize; ++dst) {
      if (src != dst) pool[dst] = mix(pool[dst], hashmix(pool[src]));
    }
  }
  // (entropy beyond the pool: none, a seed has at most two words)
  uint32_t hash_const = kInitB;
  std::array<uint32_t, 8> words{};
  for (int i = 0; i < 8; ++i) {
    uint32_t value = pool[i % kPoolSize];
    value ^= hash_const;
    hash_const *= kMultB;
    value *= hash_const;
    value ^= value >> kXShift;
    words[i] = value;
  }
  std::array<uint64_t, 4> out{};
  for (int i = 0; i < 4; ++i) out[i] = words[2 * i] | (uint64_t(words[2 * i + 1]) << 32);  // little-endian pairs
  return out;
}

constexpr u128 kPcgMultiplier = (u128(0x2360ED051FC65DA4ULL) << 64) | 0x4385DF649FCCF645ULL;

}  // namespace

int int_generator(uint64_t seed) {
  const auto v = seed_sequence_state(seed);
  const u128 init_state = (u128(v[0]) << 64) | v[1];
  const u128 init_seq = (u128(v[2]) << 64) | v[3];
  // pcg_setseq_128_srandom_r, then one pcg64_random_r.
  const u128 inc = (init_seq << 1) | 1;
  u128 state = 0;
  state = state * kPcgMultiplier + inc;
  state += init_state;
  state = state * kPcgMultiplier + inc;
  state = state * kPcgMultiplier + inc;
  const uint64_t x = uint64_t(state >> 64) ^ uint64_t(state);
  const unsigned rot = unsigned(state >> 122);
  const uint64_t out = (x >> rot) | (x << ((64 - rot) & 63));
  // Generator.bytes(8): two 32-bit draws (low half first) written little-endian,
  // read back by int.from_bytes(..., "big").
  return static_cast<int>(__builtin_bswap64(out) % 10000);
}

int next_tag(int tag, bool pseudo_rand) {
  return pseudo_rand ? int_generator(static_cast<uint64_t>(static_cast<int64_t>(tag) + 1)) : tag + 1;
}

}  // namespace tensordict::dist
