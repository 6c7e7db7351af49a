// A tensordict between two ranks as three messages (private; send.cpp, receive.cpp).
//
// tag + 0: a header, int64 {magic, structure hash, descriptor bytes, payload bytes};
// tag + 1: the structure descriptor (wire.h), so that a receiver with another
//          structure names the first differing key instead of reading garbage;
// tag + 2: every leaf in one buffer (a consolidated storage as it is).
// Empty descriptors and payloads are not sent. The receiver sizes the last
// two by the header (Gloo aborts the process on a message larger than its
// buffer), so a mismatch still consumes all three and the ranks stay in step.
#pragma once

#include <ATen/core/Tensor.h>

#include <string>

#include "calls.h"
#include "wire.h"

namespace tensordict::dist {

constexpr int64_t kMagic = 0x7464696374000001;  // "tdict", protocol 1
constexpr int kHeaderTag = 0, kDescriptorTag = 1, kPayloadTag = 2, kTagsUsed = 3;
constexpr int kHeaderLength = 4;

inline at::Device device_of(const Leaves& leaves) { return leaves.device.value_or(at::Device(at::kCPU)); }

// Posts a send or a recv of `t` (nothing when it is empty) into `state`.
void post(Work::State& state, const ProcessGroupPtr& group, bool sending, at::Tensor t, int peer, int tag,
          const std::string& context);

std::string peer_context(const char* op, const char* dir, int peer, int tag);

}  // namespace tensordict::dist
