// check_device (calls.h): what NCCL refuses, said before anything moves.
#include <fmt/format.h>

#include "distributed/calls.h"
#include "tensordict/errors.h"

namespace tensordict::dist {

bool cuda_only(const ProcessGroupPtr& group) { return group->getBackendName() == "nccl"; }

void check_device(const ProcessGroupPtr& group, const at::Device& device, const std::string& context,
                  const std::string& what) {
  if (device.is_cuda() || !cuda_only(group)) return;
  throw ValueError(fmt::format("{}: {} is on {}, and an NCCL group moves CUDA tensors only (move the tensordict to "
                               "a CUDA device, or pass a CUDA device)",
                               context, what, device.str()));
}

}  // namespace tensordict::dist
