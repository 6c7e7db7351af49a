// torch.distributed's object-list calls (send_object_list, recv_object_list,
// broadcast_object_list, all_gather_object) at the level of the pickled
// bytes (private): exactly the c10d calls torch issues, so that a Python
// peer's call matches each of them (tag 0; an int64 tensor of the sizes, then
// the pickles concatenated in one uint8 tensor; all_gather_object pads every
// pickle to the largest). The public Json forms (distributed.h) and the
// consolidated protocol (init_remote, broadcast, all_gather) are built on them.
#pragma once

#include <c10/core/Device.h>
#include <nlohmann/json.hpp>

#include <string>
#include <vector>

#include "tensordict/distributed.h"

namespace tensordict::dist {

// `device`: where the sizes and bytes travel (the CPU for Gloo; a CUDA device for NCCL).
void send_pickles(const std::vector<std::string>& pickles, const ProcessGroupPtr& group, int dst, at::Device device,
                  const std::string& context);
// `count` pickles from `src` (the receiver must know how many, as in Python).
// `max_receive_bytes`: the most bytes of pickles the peer may announce (check_announced).
std::vector<std::string> recv_pickles(std::size_t count, const ProcessGroupPtr& group, int src, at::Device device,
                                      const std::string& context, int64_t max_receive_bytes);
// On `src`, `pickles` are sent; elsewhere, `count` pickles are returned.
std::vector<std::string> broadcast_pickles(const std::vector<std::string>& pickles, std::size_t count,
                                           const ProcessGroupPtr& group, int src, at::Device device,
                                           const std::string& context, int64_t max_receive_bytes);
// Every rank's pickle, in rank order.
std::vector<std::string> all_gather_pickles(const std::string& pickle, const ProcessGroupPtr& group, at::Device device,
                                            const std::string& context, int64_t max_receive_bytes);

}  // namespace tensordict::dist
