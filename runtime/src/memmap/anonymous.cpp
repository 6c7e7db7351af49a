// memmap_() without a prefix: the leaves move into anonymous shared memory
// (tensordict's MemoryMappedTensor.from_tensor(filename=None)).
#include <ATen/ATen.h>

#include <stdexcept>

#include "core/kind_ops.h"
#include "core/format.h"
#include "kinds/lazy/lazy_impl.h"
#include "core/nesting.h"
#include "core/unbatched.h"
#include "memmap/memmap_detail.h"
#include "tensordict/errors.h"
#include "tensordict/detail/impl.h"

namespace tensordict {

namespace {

// Refuses a tree holding a nested (jagged) tensor leaf, naming its key:
// anonymous shared memory holds one strided buffer per leaf. Walks a lazy
// stack's members where they are (its stacked values may not exist).
void refuse_jagged(const TensorDictImpl& level, std::vector<std::string>& path) {
  detail::NestingGuard guard("memmap_");  // a hostile depth is a named error, not a stack overflow
  if (const auto* lazy = detail::as_stacked(level)) {
    for (const auto& member : lazy->members()) refuse_jagged(*member.impl(), path);
    return;
  }
  level.for_each_key([&](const std::string& key, EntryKind kind) {
    if (kind == EntryKind::NonTensor) return;
    const Value value = *level.find(key);
    path.push_back(key);
    if (kind == EntryKind::TensorDict) {
      refuse_jagged(*value.impl(), path);
    } else if (value.tensor().is_nested()) {
      throw ValueError(fmt::format(
          "memmap_: key {} is a nested (jagged) tensor, which shared memory does not hold: memmap it into a directory",
          NestedKey(path).repr()));
    }
    path.pop_back();
  });
}

// Moves every tensor leaf of `impl`'s tree into shared memory and marks each
// level memory-mapped with no path. A lazy stack's members are mapped where
// they are.
void map_level(const std::shared_ptr<TensorDictImpl>& impl) {
  if (const auto* lazy = detail::as_stacked(*impl)) {
    for (const auto& member : lazy->members()) map_level(member.impl());
    detail::memmap::mark_memmapped(impl, {});
    return;
  }
  std::vector<std::pair<std::string, Value>> moved;
  impl->for_each([&](const std::string& key, const Value& value) {
    if (value.is_unbatched()) detail::refuse_memmap_unbatched(NestedKey(key));
    if (value.is_tensordict()) {
      map_level(value.impl());
    } else if (value.is_tensor() && !detail::memmap::is_anonymous_mapping(value.tensor())) {
      const at::Tensor& t = value.tensor();
      at::Tensor shared = detail::memmap::map_anonymous(t.scalar_type(), t.sizes());
      shared.copy_(t);
      moved.emplace_back(key, Value(std::move(shared)));
    }
  });
  for (auto& [key, value] : moved) impl->insert(key, std::move(value));
  impl->set_meta(impl->batch_size().vec(), at::Device(at::kCPU), impl->names());
  detail::memmap::mark_memmapped(impl, {});
}

}  // namespace

TensorDict& TensorDict::memmap_() {
  // The leaves of these kinds live elsewhere (the source, the file): they
  // cannot be replaced by shared memory (tensordict's messages).
  if (const char* refusal = detail::kind_ops(*impl_).memmap_in_place_refusal) throw RuntimeError(refusal);
  // tensordict: a tensordict is in shared memory or memory-mapped, not both.
  if (impl_->marked_shared()) throw RuntimeError("memmap_: memmap and shared memory are mutually exclusive features.");
  std::vector<std::string> path;
  refuse_jagged(*impl_, path);  // first: a refusal changes nothing
  map_level(impl_);
  impl_->set_consolidated_storage(at::Tensor());
  return lock_();
}

}  // namespace tensordict
