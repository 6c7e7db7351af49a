// Whether a tensor is shared between processes, as torch's Tensor.is_shared()
// says (private). libtorch's C++ API has no is_shared(); torch's Python
// binding answers from the storage: a CUDA storage, or a CPU storage whose
// memory ATen's MapAllocator mapped (share_memory_(), consolidate's shared
// storage, a file mapped shared).
#pragma once

#include <ATen/MapAllocator.h>
#include <ATen/core/Tensor.h>

namespace tensordict::detail {

inline bool storage_in_shared_memory(const at::Tensor& t) {
  return t.defined() && t.has_storage() && at::MapAllocator::fromDataPtr(t.storage().data_ptr()) != nullptr;
}

inline bool tensor_is_shared(const at::Tensor& t) { return t.defined() && (t.is_cuda() || storage_in_shared_memory(t)); }

}  // namespace tensordict::detail
