// to(device, non_blocking) and pin_memory():
// moving a tensordict between host and accelerator with as few copies and
// synchronisations as its leaves allow. Device-generic: c10 streams and
// events, ATen's pinned allocator; nothing here names CUDA's API.
//
// The routes, best first:
// - leaves that all view one storage (a consolidated tensordict, or the result
//   of pin_memory() or of a move below) move as one copy of that storage and
//   are rebuilt as views of the copy;
// - host -> accelerator from pageable memory: one pinned staging buffer
//   (memcpy, overlapped with the DMA of what is already staged) and one
//   device allocation, whose views the leaves become;
// - accelerator -> host: one pinned buffer, one asynchronous copy per leaf;
// - anything else (autograd leaves, nested or sparse tensors, pinned leaves
//   of their own, moves between accelerators): libtorch's Tensor::to, async.
// Then one synchronisation per device involved, unless the caller asked for
// non_blocking.
#include <ATen/Context.h>
#include <ATen/Parallel.h>
#include <ATen/ops/empty.h>
#include <c10/core/impl/DeviceGuardImplInterface.h>
#include <c10/core/impl/VirtualGuardImpl.h>

#include <algorithm>
#include <cstring>
#include <optional>
#include <stdexcept>

#include "storage/flat_storage.h"
#include "kinds/dense/map_leaves.h"
#include "tensordict/device_sync.h"
#include "tensordict/detail/impl.h"

namespace tensordict {

namespace {

// Leaves of a staging or landing buffer start on a cache line, which keeps the
// 16-byte alignment that vectorised kernels need.
constexpr int64_t kMoveAlignment = 64;
// Bytes staged before their DMA is queued: large enough that a copy launch is
// cheap next to it, small enough that the host copy and the bus overlap.
constexpr int64_t kStagingChunk = 4 << 20;
// Host copies this large run on several threads (one cannot fill the bus).
constexpr int64_t kParallelCopyFrom = 1 << 20;

enum class Route : uint8_t { Keep, Stage, Gather, Pin, Each };

const auto kByte = at::TensorOptions().dtype(at::kByte);

// Pinned host memory comes from libtorch's CUDA hooks (ROCm's masquerade as
// CUDA); other accelerators take the per-leaf route.
bool can_pin() { return at::hasCUDA(); }

at::Tensor pinned_bytes(int64_t n) { return at::empty({n}, kByte.pinned_memory(true)); }

void host_copy(void* dst, const void* src, int64_t n) {
  if (n < kParallelCopyFrom) {
    std::memcpy(dst, src, static_cast<std::size_t>(n));
    return;
  }
  at::parallel_for(0, n, kParallelCopyFrom / 4, [&](int64_t begin, int64_t end) {
    std::memcpy(static_cast<char*>(dst) + begin, static_cast<const char*>(src) + begin, static_cast<std::size_t>(end - begin));
  });
}

// Copies host tensor `src` into `dst` (host memory of the same shape, with
// src's strides when src is dense): one memcpy when it can be.
void host_copy_into(const at::Tensor& dst, const at::Tensor& src) {
  if (src.is_non_overlapping_and_dense() && dst.strides() == src.strides()) {
    host_copy(dst.data_ptr(), src.data_ptr(), detail::byte_size(src));
  } else {
    dst.copy_(src);
  }
}

// A non_blocking copy that reads device tensor `t` on a side stream (not its
// device's default one) must keep the caching allocator from handing t's
// memory to other work if t is freed before the copy ran: libtorch's
// record_stream.
void keep_for_current_stream(const at::Tensor& t) {
  if (t.device().is_cpu()) return;
  const c10::impl::DeviceGuardImplInterface* guard = c10::impl::getDeviceGuardImpl(t.device().type());
  const c10::Stream current = guard->getStream(t.device());
  if (current != guard->getDefaultStream(t.device())) t.record_stream(current);
}

// The devices with queued copies, waited for once each.
class Pending {
 public:
  void add(at::Device device) {
    if (!device.is_cpu() && std::find(devices_.begin(), devices_.end(), device) == devices_.end()) devices_.push_back(device);
  }
  void wait() const {
    for (const auto& d : devices_) synchronize(d);
  }

 private:
  std::vector<at::Device> devices_;
};

// `device` with the current index of its type when it names none ("cuda"
// means the current CUDA device, as for Tensor::to). Left as given where
// libtorch has no such device type: the per-leaf move then says so.
at::Device with_index(at::Device device) {
  if (device.is_cpu() || device.has_index()) return device;
  try {
    return c10::impl::VirtualGuardImpl(device.type()).getDevice();
  } catch (const c10::Error&) {
    return device;
  }
}

// Leaves that all view one storage without overlapping and cover at least
// half of it: that storage, as one uint8 tensor, moves in one copy.
struct Block {
  at::Tensor bytes;
  bool consolidated;  // the storage consolidate() made
};

std::optional<Block> one_block(const std::vector<at::Tensor>& leaves, const at::Tensor& consolidated) {
  if (leaves.empty() || !leaves[0].has_storage()) return std::nullopt;
  const c10::StorageImpl* storage = leaves[0].storage().unsafeGetStorageImpl();
  for (const auto& t : leaves) {
    if (!detail::flat_movable(t) || t.storage().unsafeGetStorageImpl() != storage) return std::nullopt;
  }
  if (consolidated.defined() && consolidated.storage().unsafeGetStorageImpl() == storage) return Block{consolidated, true};
  std::vector<std::pair<int64_t, int64_t>> extents;
  extents.reserve(leaves.size());
  int64_t covered = 0;
  for (const auto& t : leaves) {
    if (t.numel() == 0) continue;
    const auto item = static_cast<int64_t>(t.element_size());
    int64_t last = 0;
    for (int64_t d = 0; d < t.dim(); ++d) last += (t.size(d) - 1) * t.stride(d);
    const int64_t start = t.storage_offset() * item;
    const int64_t end = start + (last + 1) * item;
    if (end - start < detail::byte_size(t)) return std::nullopt;  // overlaps itself (expanded)
    extents.emplace_back(start, end);
    covered += detail::byte_size(t);
  }
  std::sort(extents.begin(), extents.end());
  for (std::size_t i = 1; i < extents.size(); ++i) {
    if (extents[i].first < extents[i - 1].second) return std::nullopt;  // shared or interleaved bytes
  }
  const auto total = static_cast<int64_t>(leaves[0].storage().nbytes());
  if (covered * 2 < total) return std::nullopt;
  const int64_t size[] = {total};
  const int64_t stride[] = {1};
  return Block{detail::view_storage(leaves[0], caffe2::TypeMeta::Make<uint8_t>(), size, stride, 0), false};
}

// Host tensors `sources` copied into one new allocation on `device` through
// pinned staging memory: source i lands at byte offsets[i] (keeping its
// strides when dense). Every kStagingChunk bytes, the DMA of what is staged
// is queued, so that host copies and the bus overlap.
at::Tensor stage(const std::vector<at::Tensor>& sources, const std::vector<int64_t>& offsets, int64_t total, at::Device device,
                 Pending& pending) {
  // The pinned buffer is freed on return while its copies may still run:
  // libtorch's pinned allocator recorded them and reuses the block only after.
  const at::Tensor pinned = pinned_bytes(total);
  at::Tensor out = at::empty({total}, kByte.device(device));
  auto* base = static_cast<char*>(pinned.data_ptr());
  int64_t queued = 0;
  auto queue_until = [&](int64_t end) {
    if (end <= queued) return;
    detail::bytes_at(out, queued, end - queued).copy_(detail::bytes_at(pinned, queued, end - queued), /*non_blocking=*/true);
    queued = end;
  };
  for (std::size_t i = 0; i < sources.size(); ++i) {
    const at::Tensor& src = sources[i];
    const int64_t n = detail::byte_size(src);
    if (src.is_non_overlapping_and_dense()) {
      const auto* from = static_cast<const char*>(src.data_ptr());
      for (int64_t done = 0; done < n;) {
        const int64_t step = std::min(kStagingChunk, n - done);
        host_copy(base + offsets[i] + done, from + done, step);
        done += step;
        if (offsets[i] + done - queued >= kStagingChunk) queue_until(offsets[i] + done);
      }
    } else {
      detail::view_at(pinned, src, offsets[i], /*keep_strides=*/false).copy_(src);
      if (offsets[i] + n - queued >= kStagingChunk) queue_until(offsets[i] + n);
    }
  }
  queue_until(total);
  pending.add(device);
  return out;
}

// One storage (as uint8 bytes) on `device`, in one copy (or staged).
at::Tensor move_block(const at::Tensor& bytes, at::Device device, bool non_blocking, Pending& pending) {
  const at::Device from = bytes.device();
  const int64_t n = bytes.numel();
  if (from.is_cpu() && device.is_cuda() && can_pin() && !bytes.is_pinned()) return stage({bytes}, {0}, n, device, pending);
  if (non_blocking) keep_for_current_stream(bytes);
  pending.add(from);
  pending.add(device);
  if (device.is_cpu() && can_pin()) {
    at::Tensor out = pinned_bytes(n);
    out.copy_(bytes, /*non_blocking=*/true);
    return out;
  }
  return bytes.to(device, /*non_blocking=*/true);
}

// `leaves` rebuilt over `storage`, a copy of the storage they view.
std::vector<at::Tensor> rebased(const std::vector<at::Tensor>& leaves, const at::Tensor& storage) {
  std::vector<at::Tensor> out;
  out.reserve(leaves.size());
  for (const auto& t : leaves) out.push_back(detail::view_storage(storage, t.dtype(), t.sizes(), t.strides(), t.storage_offset()));
  return out;
}

TensorDict finish_block(const TensorDict& td, const std::vector<at::Tensor>& leaves, const Block& block,
                        const at::Tensor& moved, std::optional<at::Device> device, const char* op) {
  TensorDict out = detail::with_leaves(td, rebased(leaves, moved), device, op);
  if (block.consolidated) {
    // tensordict: a consolidated tensordict moves to a consolidated, locked one.
    out.impl()->set_consolidated_storage(moved);
    out.lock_();
  }
  return out;
}

// Byte offset for `t` after `end` in a buffer laid out by kMoveAlignment.
int64_t place(int64_t& end, const at::Tensor& t) {
  const int64_t offset = detail::align_up(end, std::max<int64_t>(kMoveAlignment, static_cast<int64_t>(t.element_size())));
  end = offset + detail::byte_size(t);
  return offset;
}

// to(device) of a tensordict not already on `target`.
TensorDict moved_to(const TensorDict& td, at::Device target, const ToOptions& options) {
  const bool non_blocking = options.non_blocking;
  if (auto parts = td.impl()->map_parts([&](const TensorDict& part) { return part.to(target, options); })) {
    return TensorDict(parts);
  }
  const at::Device device = with_index(target);
  const std::vector<at::Tensor> leaves = detail::tensor_leaves(*td.impl(), "to");
  Pending pending;

  const auto block = one_block(leaves, td.impl()->consolidated_storage());
  // A device-less consolidated tensordict whose storage is already there: a
  // new consolidated one over the same storage, with the device.
  if (block && block->consolidated && block->bytes.device() == device) {
    return finish_block(td, leaves, *block, block->bytes, device, "to");
  }
  if (block && block->bytes.device() != device) {
    at::Tensor moved;
    try {
      moved = move_block(block->bytes, device, non_blocking, pending);
    } catch (const c10::Error& e) {
      throw RuntimeError(std::string("to failed for the storage its leaves share: ") + e.what_without_backtrace());
    }
    if (!non_blocking) pending.wait();
    return finish_block(td, leaves, *block, moved, device, "to");
  }

  const bool staging = device.is_cuda() && can_pin();
  const bool gathering = device.is_cpu() && can_pin();
  std::vector<Route> routes(leaves.size(), Route::Each);
  std::vector<int64_t> offsets(leaves.size(), 0);
  std::vector<at::Tensor> staged;
  std::vector<int64_t> staged_offsets;
  int64_t staged_end = 0, gathered_end = 0;
  for (std::size_t i = 0; i < leaves.size(); ++i) {
    const at::Tensor& t = leaves[i];
    if (t.device() == device) {
      routes[i] = Route::Keep;
    } else if (!detail::flat_movable(t)) {
      routes[i] = Route::Each;
    } else if (gathering) {
      routes[i] = Route::Gather;
      offsets[i] = place(gathered_end, t);
    } else if (staging && t.device().is_cpu() && !t.is_pinned()) {
      routes[i] = Route::Stage;
      offsets[i] = place(staged_end, t);
      staged.push_back(t);
      staged_offsets.push_back(offsets[i]);
    }
  }
  const at::Tensor staged_buffer = staged.empty() ? at::Tensor() : stage(staged, staged_offsets, staged_end, device, pending);
  const bool any_gathered = std::find(routes.begin(), routes.end(), Route::Gather) != routes.end();
  const at::Tensor landing = any_gathered ? pinned_bytes(gathered_end) : at::Tensor();

  std::vector<at::Tensor> moved;
  moved.reserve(leaves.size());
  std::size_t i = 0;
  // The per-leaf work runs inside a walk, so that an error names the key.
  detail::for_each_tensor(*td.impl(), [&](const at::Tensor&) {
    const at::Tensor& t = leaves[i];
    switch (routes[i]) {
      case Route::Keep:
        moved.push_back(t);
        break;
      case Route::Stage:
        moved.push_back(detail::view_at(staged_buffer, t, offsets[i], /*keep_strides=*/true));
        break;
      case Route::Gather: {
        at::Tensor dst = detail::view_at(landing, t, offsets[i], /*keep_strides=*/true);
        if (non_blocking) keep_for_current_stream(t);
        dst.copy_(t, /*non_blocking=*/true);
        pending.add(t.device());
        moved.push_back(std::move(dst));
        break;
      }
      default:
        if (non_blocking) keep_for_current_stream(t);
        moved.push_back(t.to(device, /*non_blocking=*/true));
        pending.add(t.device());
        pending.add(device);
    }
    ++i;
  }, "to");
  if (!non_blocking) pending.wait();
  return detail::with_leaves(td, moved, device, "to");
}
}  // namespace

TensorDict TensorDict::to(at::Device target, const ToOptions& options) const {
  // tensordict: a move to where the tensordict already is returns it (which
  // keeps a consolidated one consolidated); a device-less one gets a new
  // tensordict with the device, sharing the tensors already there.
  if (device() && *device() == with_index(target)) return *this;
  return detail::with_lock_kept(*this, moved_to(*this, target, options));
}

TensorDict TensorDict::pin_memory() const {
  const std::vector<at::Tensor> leaves = detail::tensor_leaves(*impl_, "pin_memory");
  if (!can_pin()) {
    // libtorch's own error, naming the key.
    return TensorDict(TensorDict(detail::map_leaves(*impl_, {batch_size().vec(), names()}, device(), detail::OpKind::Value,
                                                       [](const at::Tensor& t) { return t.pin_memory(); }, "pin_memory")));
  }
  if (auto block = one_block(leaves, impl_->consolidated_storage()); block && block->bytes.device().is_cpu()) {
    at::Tensor pinned = block->bytes;
    if (!pinned.is_pinned()) {
      pinned = pinned_bytes(block->bytes.numel());
      host_copy(pinned.data_ptr(), block->bytes.data_ptr(), block->bytes.numel());
    }
    return finish_block(*this, leaves, *block, pinned, device(), "pin_memory");
  }

  // One pinned allocation for the host leaves not pinned yet.
  std::vector<Route> routes(leaves.size(), Route::Each);
  std::vector<int64_t> offsets(leaves.size(), 0);
  int64_t end = 0;
  for (std::size_t i = 0; i < leaves.size(); ++i) {
    const at::Tensor& t = leaves[i];
    if (!detail::flat_movable(t) || !t.device().is_cpu()) continue;
    if (t.is_pinned()) {
      routes[i] = Route::Keep;
    } else {
      routes[i] = Route::Pin;
      offsets[i] = place(end, t);
    }
  }
  const bool any_pinned = std::find(routes.begin(), routes.end(), Route::Pin) != routes.end();
  const at::Tensor buffer = any_pinned ? pinned_bytes(end) : at::Tensor();
  std::vector<at::Tensor> pinned;
  pinned.reserve(leaves.size());
  std::size_t i = 0;
  detail::for_each_tensor(*impl_, [&](const at::Tensor&) {
    const at::Tensor& t = leaves[i];
    if (routes[i] == Route::Keep) {
      pinned.push_back(t);
    } else if (routes[i] == Route::Pin) {
      at::Tensor dst = detail::view_at(buffer, t, offsets[i], /*keep_strides=*/true);
      host_copy_into(dst, t);
      pinned.push_back(std::move(dst));
    } else {
      pinned.push_back(t.pin_memory());
    }
    ++i;
  }, "pin_memory");
  return detail::with_leaves(*this, pinned, device(), "pin_memory");
}

// ---- the device of the leaves -------------------------------------------------------------

TensorDict& TensorDict::auto_device_() {
  std::optional<at::Device> common;
  bool several = false;
  for (const Value& value : values({.include_nested = true, .leaves_only = true})) {
    if (!value.is_tensor()) continue;
    const at::Device d = value.tensor().device();
    if (common && *common != d) several = true;
    common = d;
  }
  const std::optional<at::Device> device = several ? std::nullopt : common;
  // This level and every nested one (the leaves stay where they are).
  std::vector<TensorDict> levels{*this};
  for (const Value& value : values({.include_nested = true})) {
    if (value.is_tensordict()) levels.push_back(value.tensordict());
  }
  for (TensorDict& level : levels) level.impl()->set_meta(level.batch_size().vec(), device, level.names());
  return *this;
}

TensorDict& TensorDict::record_stream(c10::Stream stream) {
  detail::for_each_tensor(*impl_, [&](const at::Tensor& leaf) { leaf.record_stream(stream); }, "record_stream");
  return *this;
}

}  // namespace tensordict
