// consolidate({.share_memory = true}): the storage in a POSIX shared-memory
// object. libtorch's C++ API has no Tensor::share_memory_(); this is what it
// does for a CPU storage (torch's "file_descriptor" sharing strategy): a
// fresh shm name, mapped shared, its name unlinked at once so that nothing
// outlives the last mapping, and the descriptor kept, for a child process
// to inherit or a Unix socket to pass on.
#include <ATen/MapAllocator.h>
#include <ATen/ops/empty.h>
#include <c10/core/Storage.h>

#include <exception>

#include "core/format.h"
#include "storage/consolidated_file.h"
#include "tensordict/errors.h"

namespace tensordict::detail {

at::Tensor shared_memory_storage(int64_t bytes) {
  const auto options = at::TensorOptions().dtype(at::kByte);
  if (bytes == 0) return at::empty({0}, options);  // nothing to share (shm refuses an empty object)
  constexpr int kFlags = at::ALLOCATOR_MAPPED_SHAREDMEM | at::ALLOCATOR_MAPPED_EXCLUSIVE |
                         at::ALLOCATOR_MAPPED_KEEPFD | at::ALLOCATOR_MAPPED_UNLINK;
  at::DataPtr data;
  try {
    data = at::MapAllocator::makeDataPtr(at::NewProcessWideShmHandle(), kFlags, static_cast<size_t>(bytes), nullptr);
  } catch (const std::exception&) {
    rethrow_reworded([&](std::string_view why) {
      return fmt::format("consolidate: no shared memory for a storage of {} bytes: {}", bytes, why);
    });
  }
  c10::Storage storage(c10::Storage::use_byte_size_t(), static_cast<size_t>(bytes), std::move(data),
                       /*allocator=*/nullptr, /*resizable=*/false);
  const int64_t size[] = {bytes};
  const int64_t stride[] = {1};
  return at::empty({0}, options).set_(storage, 0, size, stride);
}

bool in_shared_memory(const at::Tensor& storage) {
  return storage.defined() && storage.has_storage() && at::MapAllocator::fromDataPtr(storage.storage().data_ptr()) != nullptr;
}

}  // namespace tensordict::detail
