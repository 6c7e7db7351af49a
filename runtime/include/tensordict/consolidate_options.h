// Options of consolidate(), kept light so that base.h can name them.
#pragma once

#include <c10/core/Device.h>

#include <optional>

namespace tensordict {

// tensordict's consolidate() keyword arguments. `filename`, `num_threads`,
// `share_memory`, `inplace` and `metadata` are not offered (README: the
// differences from tensordict).
struct ConsolidateOptions {
  // Where the storage lives. Default: the tensordict's device, else the CPU
  // (tensordict's rule); leaves elsewhere are copied there.
  std::optional<at::Device> device;
  // A page-locked (pinned) storage, which an accelerator reads asynchronously
  // and at full bus speed. Needs a CPU storage and an accelerator in libtorch.
  bool pin_memory = false;
  // The copies into the storage may still run when consolidate() returns
  // (wait as after to(device, non_blocking)).
  bool non_blocking = false;
};

}  // namespace tensordict
