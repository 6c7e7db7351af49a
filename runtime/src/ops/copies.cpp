// dtype casts and copies: leaf-wise maps that keep the batch size (device
// moves and pinning: device_moves.cpp).
#include <stdexcept>

#include "ops/copies.h"
#include "tensordict/base.h"
#include "tensordict/detail/impl.h"

namespace tensordict {

// Casts and copies treat every element alone (OpKind::Leafwise): a nested
// lazy stack is copied member by member; contiguous() stacks it.
TensorDict detail::leafwise(const TensorDict& td, c10::function_ref<at::Tensor(const at::Tensor&)> fn, const char* op,
                            ShapeCheck check, OpKind kind) {
  return TensorDict(
      TensorDict(map_leaves(*td.impl(), {td.batch_size().vec(), td.names()}, td.device(), kind, fn, op, check)));
}

TensorDict detail::dense_shallow_copy(const TensorDict& td, const char* op) {
  return leafwise(td, [](const at::Tensor& t) { return t; }, op, ShapeCheck::Planned);
}

TensorDict TensorDict::to(at::ScalarType dtype) const {
  if (auto parts = impl_->map_parts([&](const TensorDict& part) { return part.to(dtype); })) {
    return detail::with_lock_kept(*this, TensorDict(parts));
  }
  return detail::with_lock_kept(
      *this, detail::leafwise(*this, [&](const at::Tensor& t) { return t.to(dtype); }, "to", detail::ShapeCheck::Planned));
}

#define TENSORDICT_DEFINE_CAST(name, dtype) \
  TensorDict TensorDict::name() const { return to(dtype); }
TENSORDICT_DTYPE_CASTS(TENSORDICT_DEFINE_CAST)
#undef TENSORDICT_DEFINE_CAST

TensorDict TensorDict::cpu() const { return to(at::Device(at::kCPU)); }

TensorDict TensorDict::cuda(std::optional<int> index, const ToOptions& options) const {
  return to(at::Device(at::kCUDA, static_cast<c10::DeviceIndex>(index.value_or(0))), options);
}

TensorDict TensorDict::clone(const CloneOptions& options) const {
  const bool recurse = options.recurse;
  if (auto parts = impl_->map_parts([&](const TensorDict& part) { return part.clone(options); })) return TensorDict(parts);
  if (!recurse) return detail::dense_shallow_copy(*this, "clone");
  return detail::leafwise(*this, [](const at::Tensor& t) { return t.clone(); }, "clone", detail::ShapeCheck::Planned);
}

TensorDict TensorDict::detach() const {
  if (auto parts = impl_->map_parts([](const TensorDict& part) { return part.detach(); })) return TensorDict(parts);
  return detail::leafwise(*this, [](const at::Tensor& t) { return t.detach(); }, "detach", detail::ShapeCheck::Planned);
}

TensorDict TensorDict::contiguous() const {
  return detail::leafwise(*this, [](const at::Tensor& t) { return t.contiguous(); }, "contiguous", detail::ShapeCheck::Planned,
                          detail::OpKind::Value);
}

TensorDict TensorDict::to_tensordict() const {
  // A kind whose entries are built on access (a lazy stack's stacks, an h5
  // file's reads) gives fresh tensors already.
  if (!impl_->entries_alias_storage()) return contiguous();
  return detail::leafwise(*this, [](const at::Tensor& t) { return t.clone(); }, "to_tensordict", detail::ShapeCheck::Planned,
                          detail::OpKind::Value);
}

bool TensorDict::is_shared() const { return impl_->is_shared(); }

// ---- writing into existing entries ---------------------------------------------------

TensorDict& TensorDict::copy_(const TensorDict& other) { return update_(other); }

TensorDict& TensorDict::copy_at_(const TensorDict& other, at::ArrayRef<TensorIndex> index) {
  return update_at_(other, index);
}

TensorDict TensorDict::replace(const TensorDict& entries) const {
  if (entries.num_keys() == 0) return *this;
  TensorDict out = clone({.recurse = false});
  out.update(entries);
  return out;
}

}  // namespace tensordict
