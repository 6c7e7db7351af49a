// CPU storages in POSIX shared memory (private): what torch's
// share_memory_() does, which libtorch's C++ API lacks (at::share_memory_
// came with torch 2.x; Debian's libtorch 1.13 has only ATen's MapAllocator,
// which both versions use here, so both behave the same).
#pragma once

#include <ATen/core/Tensor.h>
#include <c10/util/FunctionRef.h>

#include <cstdint>
#include <string>

namespace tensordict::detail {

// `bytes` of uint8 in a POSIX shared-memory object, as torch's share_memory_()
// makes them (its name unlinked at once, the descriptor kept for passing on).
at::Tensor shared_memory_storage(int64_t bytes);

// torch's Tensor.share_memory_() for a CPU tensor: the bytes of its storage
// are copied into a new shared-memory object and the storage itself is
// pointed there, so every tensor viewing that storage follows. A storage
// already in shared memory (storage_in_shared_memory) stays. The storage can
// no longer be resized (torch's would crash on it). `what` names the tensor
// in errors ("key 'a'"); it is called only on failure. The tensor must have a
// storage.
void move_storage_to_shared_memory(const at::Tensor& tensor, c10::function_ref<std::string()> what);

}  // namespace tensordict::detail
