// CPU storages in POSIX shared memory: consolidate({.share_memory = true})'s
// storage and share_memory_()'s leaves. libtorch's C++ API has no
// Tensor::share_memory_() (1.13); this is what torch's does for a CPU
// storage (its "file_descriptor" sharing strategy): a fresh shm name, mapped
// shared, its name unlinked at once so that nothing outlives the last
// mapping, and the descriptor kept, for a child process to inherit or a Unix
// socket to pass on.
#include "storage/shared_memory.h"

#include <ATen/MapAllocator.h>
#include <ATen/ops/empty.h>
#include <c10/core/Storage.h>
#include <c10/core/StorageImpl.h>

#include <cstring>
#include <exception>

#include "core/format.h"
#include "core/shared_leaf.h"
#include "tensordict/errors.h"

namespace tensordict::detail {

namespace {

constexpr int kSharedMemoryFlags = at::ALLOCATOR_MAPPED_SHAREDMEM | at::ALLOCATOR_MAPPED_EXCLUSIVE |
                                   at::ALLOCATOR_MAPPED_KEEPFD | at::ALLOCATOR_MAPPED_UNLINK;

// A new shared-memory object of `bytes`; the error starts with `failure()`.
at::DataPtr shared_memory(std::size_t bytes, c10::function_ref<std::string()> failure) {
  try {
    return at::MapAllocator::makeDataPtr(at::NewProcessWideShmHandle(), kSharedMemoryFlags, bytes, nullptr);
  } catch (const std::exception&) {
    rethrow_reworded([&](std::string_view why) { return fmt::format("{}: {}", failure(), why); });
  }
}

}  // namespace

at::Tensor shared_memory_storage(int64_t bytes) {
  const auto options = at::TensorOptions().dtype(at::kByte);
  if (bytes == 0) return at::empty({0}, options);  // nothing to share
  at::DataPtr data = shared_memory(static_cast<size_t>(bytes), [&] {
    return fmt::format("consolidate: no shared memory for a storage of {} bytes", bytes);
  });
  c10::Storage storage(c10::Storage::use_byte_size_t(), static_cast<size_t>(bytes), std::move(data),
                       /*allocator=*/nullptr, /*resizable=*/false);
  const int64_t size[] = {bytes};
  const int64_t stride[] = {1};
  return at::empty({0}, options).set_(storage, 0, size, stride);
}

void move_storage_to_shared_memory(const at::Tensor& tensor, c10::function_ref<std::string()> what) {
  if (!tensor.device().is_cpu() || storage_in_shared_memory(tensor)) return;
  const c10::Storage& storage = tensor.storage();
  const std::size_t bytes = storage.nbytes();
  at::DataPtr shared =
      shared_memory(bytes, [&] { return fmt::format("share_memory_: no shared memory for {} ({} bytes)", what(), bytes); });
  if (bytes != 0) std::memcpy(shared.get(), storage.data(), bytes);
  // The storage object stays (every tensor viewing it follows); its bytes
  // now live in the shared mapping, and the old allocation is freed. The
  // allocator that made the old bytes must not resize the mapping.
  c10::StorageImpl* impl = storage.unsafeGetStorageImpl();
  impl->set_data_ptr_noswap(std::move(shared));
  impl->set_resizable(false);
}

}  // namespace tensordict::detail
