// dtype casts and copies: leaf-wise maps that keep the batch size (device
// moves and pinning: device_moves.cpp).
#include <stdexcept>

#include "map_leaves.h"
#include "tensordict/dense.h"

namespace tensordict {

namespace {

// Casts and copies treat every element alone (OpKind::Leafwise): a nested
// lazy stack is copied member by member; contiguous() stacks it.
TensorDict same_batch(const TensorDictBase& td, std::optional<at::Device> device,
                      c10::function_ref<at::Tensor(const at::Tensor&)> fn, const char* op,
                      detail::OpKind kind = detail::OpKind::Leafwise) {
  return TensorDict(TensorDictBase(detail::map_leaves(*td.impl(), {td.batch_size().vec(), td.names()}, device, kind, fn, op)));
}

}  // namespace

TensorDict TensorDictBase::to(at::ScalarType dtype) const {
  return same_batch(*this, device(), [&](const at::Tensor& t) { return t.to(dtype); }, "to");
}

#define TENSORDICT_DEFINE_CAST(name, dtype) \
  TensorDict TensorDictBase::name() const { return to(dtype); }
TENSORDICT_DTYPE_CASTS(TENSORDICT_DEFINE_CAST)
#undef TENSORDICT_DEFINE_CAST

TensorDict TensorDictBase::cpu() const { return to(at::Device(at::kCPU)); }

TensorDict TensorDictBase::cuda(std::optional<int> index, bool non_blocking) const {
  return to(at::Device(at::kCUDA, static_cast<c10::DeviceIndex>(index.value_or(0))), non_blocking);
}

TensorDict TensorDictBase::clone(bool recurse) const {
  if (!recurse) return same_batch(*this, device(), [](const at::Tensor& t) { return t; }, "clone");
  return same_batch(*this, device(), [](const at::Tensor& t) { return t.clone(); }, "clone");
}

TensorDict TensorDictBase::detach() const {
  return same_batch(*this, device(), [](const at::Tensor& t) { return t.detach(); }, "detach");
}

TensorDict TensorDictBase::contiguous() const {
  return same_batch(*this, device(), [](const at::Tensor& t) { return t.contiguous(); }, "contiguous", detail::OpKind::Value);
}

bool TensorDictBase::is_shared() const {
  auto d = device();
  return d && d->is_cuda();
}

}  // namespace tensordict
