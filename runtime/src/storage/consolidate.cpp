// consolidate(), is_consolidated(), consolidated_storage(): every tensor leaf
// copied into one flat uint8 storage and viewed there (tensordict's
// consolidate; the device moves in device_moves.cpp then move one block).
// The storage is memory, a file or shared memory (consolidated_file.h).
#include <ATen/Context.h>
#include <ATen/ops/empty.h>
#include <c10/util/Exception.h>

#include <algorithm>
#include <sstream>
#include <stdexcept>

#include "core/kind_ops.h"
#include "storage/consolidated_file.h"
#include "storage/flat_storage.h"
#include "storage/shared_memory.h"
#include "core/shared_leaf.h"
#include "core/format.h"
#include "core/nesting.h"
#include "core/unbatched.h"
#include "kinds/dense/map_leaves.h"
#include "tensordict/detail/impl.h"
#include "tensordict/detail/tensorclass_support.h"  // align_to_leaf, is_view_of: shared with the typed layer
#include "tensordict/device_sync.h"
#include "tensordict/errors.h"

namespace tensordict {

namespace {

// tensordict pads every leaf to a multiple of 8 bytes, so each starts aligned
// for any dtype up to 8 bytes wide; wider ones (complex128) align to their size.
constexpr int64_t kLeafAlignment = 8;

// Why `t` cannot be a view of one flat storage (tensordict refuses the same
// leaves, or cannot take them from C++), as the part of the message after
// the key.
void check_consolidatable(const at::Tensor& t) {
  if (t.is_nested()) {
    throw ValueError(
        "a nested tensor cannot be consolidated: tensordict consolidates jagged-layout nested tensors only, which "
        "libtorch's "
        "C++ API does not build; pad it with to_padded_tensor() or exclude the key first");
  }
  if (t.layout() != at::kStrided) {
    std::ostringstream layout;
    layout << t.layout();
    throw ValueError("a tensor of layout " + layout.str() +
                     " cannot be consolidated: only strided tensors can be views of one flat storage; call to_dense() "
                     "or exclude the key first");
  }
  if (t.is_quantized()) {
    throw ValueError(
        "a quantized tensor cannot be consolidated: its quantizer is not part of a flat storage; "
        "dequantize() it or exclude the key first");
  }
}

// tensordict refuses an UnbatchedTensor anywhere in the tree. Asked of each
// entry's metadata, which every kind answers without building the tensor (a
// lazy stack stacks nothing).
void refuse_unbatched(const TensorDictImpl& td, std::vector<std::string>& path) {
  td.for_each_key([&](const std::string& key, EntryKind kind) {
    path.push_back(key);
    if (kind == EntryKind::Tensor && td.tensor_meta(key).unbatched) detail::refuse_consolidate_unbatched(NestedKey(path));
    if (kind == EntryKind::TensorDict) refuse_unbatched(*td.find(key)->impl(), path);
    path.pop_back();
  });
}

// The tensor leaves of `td` part by part: a lazy stack's are its members'
// (never stacked, so members of different shapes consolidate as they are).
void for_each_part_tensor(const TensorDictImpl& td, c10::function_ref<void(const at::Tensor&)> fn, const char* op) {
  if (const auto* lazy = detail::as_stacked(td)) {
    for (const TensorDict& member : lazy->members()) for_each_part_tensor(*member.impl(), fn, op);
    return;
  }
  detail::for_each_tensor(td, fn, op);
}

// `td`'s structure over `views` (from `next` on, in for_each_part_tensor's
// order): a lazy stack stays one, of its members rebuilt (tensordict).
TensorDict with_part_views(const TensorDict& td, const std::vector<at::Tensor>& views, std::size_t& next,
                           at::Device device) {
  if (auto parts = td.impl()->map_parts(
          [&](const TensorDict& member) { return with_part_views(member, views, next, device); })) {
    return TensorDict(parts);
  }
  std::size_t n = 0;
  detail::for_each_tensor(*td.impl(), [&](const at::Tensor&) { ++n; }, "consolidate");
  const auto first = views.begin() + static_cast<std::ptrdiff_t>(next);
  next += n;
  return detail::with_leaves(td, std::vector<at::Tensor>(first, first + static_cast<std::ptrdiff_t>(n)),
                             td.device() ? std::optional<at::Device>(device) : std::nullopt, "consolidate");
}

at::Tensor allocate_storage(int64_t bytes, at::Device device, bool pin_memory) {
  auto options = at::TensorOptions().dtype(at::kByte).device(device);
  if (!pin_memory) return at::empty({bytes}, options);
  if (!at::hasCUDA()) {
    throw RuntimeError("consolidate: pin_memory=true needs an accelerator, and this libtorch has none (or sees no device)");
  }
  return at::empty({bytes}, options.pinned_memory(true));
}

}  // namespace

TensorDict TensorDict::consolidate(const ConsolidateOptions& options) const {
  {
    detail::NestingGuard guard("consolidate");
    std::vector<std::string> path;
    refuse_unbatched(*impl_, path);
  }
  const bool to_file = !options.filename.empty();
  if (to_file && options.device && !options.device->is_cpu()) {
    throw RuntimeError(fmt::format(
        "consolidate: device and filename are mutually exclusive arguments (a file's storage is on the CPU, got "
        "device {})",
        options.device->str()));
  }
  if (to_file && options.pin_memory) {
    throw ValueError("consolidate: pin_memory=true and a filename are exclusive: the storage is a mapping of the file");
  }
  const at::Device device =
      to_file ? at::Device(at::kCPU) : options.device.value_or(this->device().value_or(at::Device(at::kCPU)));
  if (options.pin_memory && !device.is_cpu()) {
    throw ValueError(fmt::format("consolidate: pin_memory=true pins a storage on the CPU, but the storage goes to {}",
                                 device.str()));
  }
  // Accelerator storages are shared already (tensordict), and a file is.
  const bool share = options.share_memory && device.is_cpu() && !to_file;
  if (share && options.pin_memory) {
    throw ValueError("consolidate: pin_memory=true and share_memory=true are exclusive: a storage is either pinned or "
                     "in shared memory");
  }
  if (const auto storage = consolidated_storage(); storage && !to_file && (!share || detail::storage_in_shared_memory(*storage))) {
    // Already one storage: tensordict returns it as it is; a storage elsewhere
    // (or to be pinned) moves in one copy and stays consolidated.
    const bool pinned_enough = !options.pin_memory || storage->is_pinned();
    if (storage->device() == device && pinned_enough) return TensorDict(*this);
    return options.pin_memory ? pin_memory() : TensorDict(to(device, {.non_blocking = options.non_blocking}));  // dense: consolidated
  }

  std::vector<at::Tensor> leaves;
  for_each_part_tensor(*impl_, [&](const at::Tensor& t) {
    check_consolidatable(t);
    leaves.push_back(t);
  }, "consolidate");

  std::vector<int64_t> offsets;
  offsets.reserve(leaves.size());
  int64_t end = 0;
  for (const auto& t : leaves) {
    end = detail::align_up(end, std::max<int64_t>(kLeafAlignment, static_cast<int64_t>(t.element_size())));
    offsets.push_back(end);
    end += detail::byte_size(t);
  }
  // The storage holds whole padded leaves, as tensordict's (the last one
  // too): its reader slices each leaf up to its padded end, and a peer's
  // recv(consolidated=True) expects exactly that many bytes.
  const int64_t total = detail::align_up(end, kLeafAlignment);
  std::optional<detail::ConsolidatedFileWriter> file;
  if (to_file) file.emplace(options.filename, total);
  const at::Tensor storage = file    ? file->storage()
                             : share ? detail::shared_memory_storage(total)
                                     : allocate_storage(total, device, options.pin_memory);

  // Each leaf lands contiguous at its offset (tensordict's layout). Copies
  // across devices do not wait one by one: at most one synchronisation per
  // device at the end.
  std::vector<at::Tensor> views;
  views.reserve(leaves.size());
  std::vector<at::Device> crossed;
  for (std::size_t i = 0; i < leaves.size(); ++i) {
    views.push_back(detail::view_at(storage, leaves[i], offsets[i], /*keep_strides=*/false));
    const at::Device from = leaves[i].device();
    const bool across = from != device;
    // A leaf that requires grad is copied detached (tensordict 0.15.3): the
    // consolidated value requires no grad, and the storage joins no graph
    // (copy_ of a leaf requiring grad would record one on the storage).
    const at::Tensor& leaf = leaves[i];
    views.back().copy_(leaf.requires_grad() ? leaf.detach() : leaf, /*non_blocking=*/across);
    if (across && std::find(crossed.begin(), crossed.end(), from) == crossed.end()) crossed.push_back(from);
  }
  if (!crossed.empty() && (!options.non_blocking || file)) {
    synchronize(device);
    for (const auto& d : crossed) synchronize(d);
  }

  std::size_t next = 0;
  TensorDict out = detail::as_stacked(*impl_)
                       ? with_part_views(*this, views, next, device)
                       : detail::with_leaves(*this, views, this->device() ? std::optional<at::Device>(device) : std::nullopt,
                                             "consolidate");
  out.impl()->set_consolidated_storage(storage);
  if (file) file->commit(out, is_locked());
  out.lock_();
  return out;
}

bool TensorDict::is_consolidated() const {
  const at::Tensor& storage = impl_->consolidated_storage();
  if (!storage.defined()) return false;
  // A claim checked against the leaves: anything that replaced one (a raw
  // write into a nested level, memmap_) ends it.
  bool all = true;
  for_each_part_tensor(*impl_, [&](const at::Tensor& t) { all = all && detail::is_view_of(t, storage); },
                          "is_consolidated");
  return all;
}

std::optional<at::Tensor> TensorDict::consolidated_storage() const {
  if (!is_consolidated()) return std::nullopt;
  return impl_->consolidated_storage();
}

}  // namespace tensordict
