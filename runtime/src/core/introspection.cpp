// What a tensordict holds, measured: depth, bytes, data pointers.
#include <ATen/ATen.h>

#include <algorithm>
#include <cstdint>
#include <unordered_set>

#include "tensordict/base.h"

namespace tensordict {

int64_t TensorDict::depth() const {
  int64_t deepest = 0;
  for (const auto& key : keys({.include_nested = true, .leaves_only = true, .is_leaf = IsLeaf::NonTensor})) deepest = std::max<int64_t>(deepest, static_cast<int64_t>(key.size()) - 1);
  return deepest;
}

namespace {
// The bytes of one tensor's elements; a nested tensor's are its components'.
int64_t element_bytes(const at::Tensor& t) {
  if (t.is_nested()) {
    int64_t total = 0;
    for (const auto& part : t.unbind(0)) total += element_bytes(part);
    return total;
  }
  return t.numel() * static_cast<int64_t>(t.element_size());
}
}  // namespace

int64_t TensorDict::bytes(const BytesOptions& options) const {
  const bool count_duplicates = options.count_duplicates;
  std::unordered_set<const void*> seen;  // tensors counted, by identity
  int64_t total = 0;
  for (const auto& [key, value] : items({.include_nested = true, .leaves_only = true})) {
    if (!value.is_tensor()) continue;
    const at::Tensor& t = value.tensor();
    if (!count_duplicates && !seen.insert(t.unsafeGetTensorImpl()).second) continue;
    total += element_bytes(t);
    if (t.grad().defined()) total += element_bytes(t.grad());
  }
  return total;
}

int64_t TensorDict::param_count(const BytesOptions& options) const {
  std::unordered_set<const void*> seen;  // tensors counted, by identity
  int64_t total = 0;
  for (const auto& [key, value] : items({.include_nested = true, .leaves_only = true})) {
    if (!value.is_tensor()) continue;
    const at::Tensor& t = value.tensor();
    if (!options.count_duplicates && !seen.insert(t.unsafeGetTensorImpl()).second) continue;
    total += t.numel();
  }
  return total;
}

TensorDict TensorDict::data_ptr(const DataPtrOptions& options) const {
  const bool storage = options.storage;
  TensorDict out;
  for (const auto& [key, value] : items({.include_nested = true, .leaves_only = true})) {
    if (!value.is_tensor()) continue;
    const at::Tensor& t = value.tensor();
    const void* ptr = storage ? t.storage().unsafeGetStorageImpl()->data_ptr().get() : t.data_ptr();
    out.set(key, at::scalar_tensor(static_cast<int64_t>(reinterpret_cast<std::uintptr_t>(ptr)), at::kLong));
  }
  return out;
}

}  // namespace tensordict
