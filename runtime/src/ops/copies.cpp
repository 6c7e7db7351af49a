// dtype casts and copies: leaf-wise maps that keep the batch size (device
// moves and pinning: device_moves.cpp).
#include <stdexcept>

#include "ops/map_leaves.h"
#include "tensordict/dense.h"

namespace tensordict {

// Casts and copies treat every element alone (OpKind::Leafwise): a nested
// lazy stack is copied member by member; contiguous() stacks it.
TensorDict detail::leafwise(const TensorDictBase& td, c10::function_ref<at::Tensor(const at::Tensor&)> fn, const char* op,
                            ShapeCheck check, OpKind kind) {
  return TensorDict(
      TensorDictBase(map_leaves(*td.impl(), {td.batch_size().vec(), td.names()}, td.device(), kind, fn, op, check)));
}

TensorDict detail::dense_shallow_copy(const TensorDictBase& td, const char* op) {
  return leafwise(td, [](const at::Tensor& t) { return t; }, op, ShapeCheck::Planned);
}

TensorDictBase TensorDictBase::to(at::ScalarType dtype) const {
  if (auto parts = impl_->map_parts([&](const TensorDictBase& part) { return part.to(dtype); })) return TensorDictBase(parts);
  return detail::leafwise(*this, [&](const at::Tensor& t) { return t.to(dtype); }, "to", detail::ShapeCheck::Planned);
}

#define TENSORDICT_DEFINE_CAST(name, dtype) \
  TensorDictBase TensorDictBase::name() const { return to(dtype); }
TENSORDICT_DTYPE_CASTS(TENSORDICT_DEFINE_CAST)
#undef TENSORDICT_DEFINE_CAST

TensorDictBase TensorDictBase::cpu() const { return to(at::Device(at::kCPU)); }

TensorDictBase TensorDictBase::cuda(std::optional<int> index, bool non_blocking) const {
  return to(at::Device(at::kCUDA, static_cast<c10::DeviceIndex>(index.value_or(0))), non_blocking);
}

TensorDictBase TensorDictBase::clone(bool recurse) const {
  if (auto parts = impl_->map_parts([&](const TensorDictBase& part) { return part.clone(recurse); })) return TensorDictBase(parts);
  if (!recurse) return detail::dense_shallow_copy(*this, "clone");
  return detail::leafwise(*this, [](const at::Tensor& t) { return t.clone(); }, "clone", detail::ShapeCheck::Planned);
}

TensorDictBase TensorDictBase::detach() const {
  if (auto parts = impl_->map_parts([](const TensorDictBase& part) { return part.detach(); })) return TensorDictBase(parts);
  return detail::leafwise(*this, [](const at::Tensor& t) { return t.detach(); }, "detach", detail::ShapeCheck::Planned);
}

TensorDict TensorDictBase::contiguous() const {
  return detail::leafwise(*this, [](const at::Tensor& t) { return t.contiguous(); }, "contiguous", detail::ShapeCheck::Planned,
                          detail::OpKind::Value);
}

TensorDict TensorDictBase::to_tensordict() const {
  // A kind whose entries are built on access (a lazy stack's stacks, an h5
  // file's reads) gives fresh tensors already.
  if (!impl_->entries_alias_storage()) return contiguous();
  return detail::leafwise(*this, [](const at::Tensor& t) { return t.clone(); }, "to_tensordict", detail::ShapeCheck::Planned,
                          detail::OpKind::Value);
}

bool TensorDictBase::is_shared() const {
  auto d = device();
  return d && d->is_cuda();
}

}  // namespace tensordict
