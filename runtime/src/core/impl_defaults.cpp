// The defaults of TensorDictImpl's overridable operations, written against
// its required ones.
#include "tensordict/base.h"
#include "tensordict/detail/impl.h"
#include "tensordict/non_tensor.h"
#include "tensordict/detail/tensorclass_support.h"
#include "core/shared_leaf.h"
#include "core/value_kind.h"

namespace tensordict {

void TensorDictImpl::destroy_nested() {
  // Levels destroyed recursively on this thread, below the one being destroyed.
  constexpr std::size_t kRecursiveLevels = 64;
  thread_local std::size_t depth = 0;
  if (depth < kRecursiveLevels) {
    ++depth;
    release_children([](std::shared_ptr<TensorDictImpl> child) { child.reset(); });
    --depth;
    return;
  }
  std::vector<std::shared_ptr<TensorDictImpl>> pending;
  const auto take = [&](std::shared_ptr<TensorDictImpl> child) { pending.push_back(std::move(child)); };
  release_children(take);
  while (!pending.empty()) {
    std::shared_ptr<TensorDictImpl> level = std::move(pending.back());
    pending.pop_back();
    // Held elsewhere too: it lives on, with what it holds.
    if (level.use_count() == 1) level->release_children(take);
  }  // `level` is destroyed here, holding no tensordict any more
}

void TensorDictImpl::for_each_key(c10::function_ref<void(const std::string&, EntryKind)> fn) const {
  for_each([&](const std::string& key, const Value& value) { fn(key, detail::entry_kind_of(value)); });
}

std::optional<EntryKind> TensorDictImpl::entry_kind(const std::string& key) const {
  const auto found = find(key);
  if (!found) return std::nullopt;
  return detail::entry_kind_of(*found);
}

TensorMeta TensorDictImpl::tensor_meta(const std::string& key) const {
  const Value value = *find(key);
  const at::Tensor& t = value.tensor();
  return {detail::leaf_shape(t), t.scalar_type(), t.device(), detail::tensor_is_shared(t), value.is_unbatched()};
}

bool TensorDictImpl::is_shared() const {
  // tensordict's rule (_base/device.py is_shared): the device decides only
  // for a tensordict that is not memory-mapped.
  const auto d = device();
  if (d && !memmap_dir()) return d->is_cuda() || marked_shared();
  return marked_shared();
}

void TensorDictImpl::for_each_child(c10::function_ref<void(const TensorDict&)> fn) const {
  for_each_key([&](const std::string& key, EntryKind kind) {
    if (kind == EntryKind::TensorDict) fn(find(key)->tensordict());
  });
}

void TensorDictImpl::assign(const std::string& key, const at::Tensor& value) { find(key)->tensor().copy_(value); }

}  // namespace tensordict
