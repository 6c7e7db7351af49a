// The calls whose packed-protocol form lives apart from tensordict's (private):
// distributed.h's functions pick one by WireProtocol.
#pragma once

#include <c10/core/Device.h>
#include <nlohmann/json.hpp>

#include <optional>
#include <string>
#include <string_view>

#include "tensordict/distributed.h"

namespace tensordict::dist {

// The structure as a JSON header, then the leaves as send() sends them (remote_init.cpp).
void init_remote_packed(const TensorDict& td, const ProcessGroupPtr& group, int dst);
TensorDict from_remote_init_packed(const ProcessGroupPtr& group, int src, std::optional<at::Device> device,
                                   int64_t max_receive_bytes);
// The tensordict a received structure header describes (its depth bounded
// while it is parsed, its leaves' bytes checked against max_receive_bytes
// before they are allocated, zeroed), ready for its leaves: the part of
// from_remote_init_packed that reads the peer's bytes, apart for the fuzzer
// (fuzz/fuzz_packed_header.cpp). RuntimeError/ValueError naming `context`.
TensorDict structure_from_header(std::string_view json, std::optional<at::Device> device, int64_t max_receive_bytes,
                                 const std::string& context, const std::string& peer);
// A structure check, then the leaves in one buffer (collectives.cpp).
void broadcast_packed(const TensorDict& td, const ProcessGroupPtr& group, int src);
void gather_and_stack_packed(const TensorDict& td, const ProcessGroupPtr& group, int dst);

}  // namespace tensordict::dist
