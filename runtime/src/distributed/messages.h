// A tensordict between two ranks as one or two messages (private; send.cpp, receive.cpp).
//
// tag + 0, at most kFirstBytes (1 MiB): a header (int64 {magic, structure hash,
//   descriptor bytes, payload bytes, parts}), then the structure descriptor
//   (wire.h, so that a receiver with another structure names the first
//   differing key instead of reading garbage) and the payload (every leaf in
//   one buffer) when they fit;
// tag + 1, exact size: what did not fit (the descriptor and/or the payload;
//   a consolidated storage is sent from and received into as it is).
// Why: Gloo aborts the process on a message larger than the posted buffer but
// accepts a shorter one, so the receiver can post the first message at once,
// whatever the sender's structure (one round trip for small tensordicts),
// and sizes the second by the header. A mismatch still consumes both
// messages, so the ranks stay in step.
#pragma once

#include <ATen/core/Tensor.h>

#include <string>

#include "distributed/calls.h"
#include "distributed/wire.h"

namespace tensordict::dist {

constexpr int64_t kMagic = 0x7464696374000002;  // "tdict", protocol 2
constexpr int kFirstTag = 0, kRestTag = 1, kTagsUsed = 2;
// Large enough for a few hundred small leaves in one round trip; a pending
// irecv reserves this much address space, but only the bytes that arrive are
// written (and so backed by memory).
constexpr int64_t kFirstBytes = 1024 * 1024;
constexpr int64_t kHeaderWords = 5, kHeaderBytes = kHeaderWords * 8;
// `parts` bits: what the first message holds after the header.
constexpr int64_t kDescriptorFirst = 1, kPayloadFirst = 2;

inline at::Device device_of(const Leaves& leaves) { return leaves.device.value_or(at::Device(at::kCPU)); }

// Where each part goes, from the sizes alone (both sides compute it).
struct Split {
  int64_t parts = 0;
  int64_t first_bytes = 0;  // the first message's length
  int64_t rest_bytes = 0;   // the second's (0: none)
  int64_t payload_offset = 0;  // in the first message or the second, wherever the payload is
};
inline Split split(int64_t descriptor_bytes, int64_t payload_bytes) {
  Split s;
  s.first_bytes = kHeaderBytes;
  if (s.first_bytes + descriptor_bytes <= kFirstBytes) {
    s.parts |= kDescriptorFirst;
    s.first_bytes += descriptor_bytes;
  }
  // Leaves start 64-byte aligned, as in a consolidated storage.
  const int64_t payload_at = (s.first_bytes + 63) / 64 * 64;
  if ((s.parts & kDescriptorFirst) && payload_at + payload_bytes <= kFirstBytes) {
    s.parts |= kPayloadFirst;
    s.payload_offset = payload_at;
    s.first_bytes = payload_at + payload_bytes;
  } else {
    s.payload_offset = (s.parts & kDescriptorFirst) ? 0 : (descriptor_bytes + 63) / 64 * 64;
    s.rest_bytes = s.payload_offset + payload_bytes;
  }
  return s;
}

// Posts a send or a recv of `t` into `state` (nothing when it is empty and
// `skip_empty`: the packed protocol's receiver knows; tensordict's peers post
// one message per leaf, empty or not).
void post(Work::State& state, const ProcessGroupPtr& group, bool sending, at::Tensor t, int peer, int tag,
          const std::string& context, bool skip_empty = true);

std::string peer_context(const char* op, const char* dir, int peer, int tag);

}  // namespace tensordict::dist
