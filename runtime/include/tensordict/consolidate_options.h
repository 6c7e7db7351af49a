// Options of consolidate(), kept light so that base.h can name them.
#pragma once

#include <c10/core/Device.h>

#include <optional>
#include <string>

namespace tensordict {

// tensordict's consolidate() keyword arguments. `num_threads`, `inplace`,
// `return_early`, `use_buffer` and `metadata` are not offered (docs/differences.md,
// "Device moves").
struct ConsolidateOptions {
  // Where the storage lives. Default: the tensordict's device, else the CPU
  // (tensordict's rule); leaves elsewhere are copied there.
  std::optional<at::Device> device = std::nullopt;
  // A page-locked (pinned) storage, which an accelerator reads asynchronously
  // and at full bus speed. Needs a CPU storage and an accelerator in libtorch.
  bool pin_memory = false;
  // The copies into the storage may still run when consolidate() returns
  // (wait as after to(device, non_blocking)).
  bool non_blocking = false;
  // A file to hold the storage (tensordict's layout: the leaves, then the
  // metadata as JSON, then its length as a little-endian int64), which
  // TensorDict::from_consolidated reads back, here or in Python. The leaves
  // are views of a shared mapping of the file: in-place writes reach it. The
  // file appears whole or not at all (written beside it, then renamed).
  // Needs a CPU storage. Empty: the storage lives in memory.
  std::string filename = {};
  // A storage in shared memory (a POSIX shared-memory object, as torch's
  // share_memory_()), which another process maps through its descriptor:
  // at::MapAllocator::fromDataPtr(storage.storage().data_ptr())->fd(),
  // inherited by a child or passed over a Unix socket. Accelerator storages
  // are shared already (ignored there, as in tensordict). A file storage is
  // shared memory too.
  bool share_memory = false;
};

}  // namespace tensordict
