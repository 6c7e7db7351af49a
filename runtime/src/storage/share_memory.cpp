// TensorDict::share_memory_(): the leaves move into shared memory, then every
// level is marked shared and locked (tensordict's _share_memory_ of each
// kind). Two walks over the tree: the first refuses, before anything moves,
// what cannot be shared; the second moves and marks.
#include <c10/core/Layout.h>

#include <sstream>
#include <string>
#include <vector>

#include "core/format.h"
#include "core/nesting.h"
#include "storage/shared_memory.h"
#include "tensordict/base.h"
#include "tensordict/errors.h"
#include "tensordict/detail/impl.h"

namespace tensordict {

namespace {

// tensordict leaves a tensordict on a CUDA device as it is: its tensors are
// shared already.
bool on_cuda(const TensorDict& level) {
  const auto device = level.device();
  return device && device->is_cuda();
}

std::string key_of(const std::vector<std::string>& path) { return NestedKey(path).repr(); }

// " (the tensordict at key 'n')" for a nested level; nothing for the top.
std::string where(const std::vector<std::string>& path) {
  return path.empty() ? std::string() : fmt::format(" (the tensordict at key {})", key_of(path));
}

std::string layout_name(c10::Layout layout) {
  std::ostringstream out;
  out << layout;
  return out.str();
}

// A kind whose leaves live elsewhere (the hook throws), a memory-mapped level
// or a CPU leaf without a storage of its own anywhere in the tree: refused.
// A lazy stack's members are checked where they are (its stacked values are
// built, not held).
void check_shareable(const TensorDict& level, std::vector<std::string>& path) {
  detail::NestingGuard guard("share_memory_");
  const TensorDictImpl& impl = *level.impl();
  impl.check_share_memory();
  if (level.is_memmap()) {
    throw RuntimeError(
        fmt::format("share_memory_: memmap and shared memory are mutually exclusive features{}.", where(path)));
  }
  if (on_cuda(level)) return;
  if (!impl.entries_alias_storage()) {
    impl.for_each_child([&](const TensorDict& part) { check_shareable(part, path); });
    return;
  }
  impl.for_each([&](const std::string& key, const Value& value) {
    path.push_back(key);
    if (value.is_tensordict()) {
      check_shareable(value.tensordict(), path);
    } else if (value.is_tensor() && value.tensor().device().is_cpu() && !value.tensor().has_storage()) {
      // torch raises "Cannot access storage of SparseTensorImpl" at this leaf.
      throw NotImplementedError(fmt::format(
          "share_memory_: key {} is a {} tensor, which has no storage to move into shared memory", key_of(path),
          layout_name(value.tensor().layout())));
    }
    path.pop_back();
  });
}

// Moves the CPU leaves of `level` (and of every level below) into shared
// memory, then marks the level shared and locks it, as tensordict does level
// by level. A level on a CUDA device stays as it is, unmarked.
void share_level(const TensorDict& level, std::vector<std::string>& path) {
  detail::NestingGuard guard("share_memory_");
  if (on_cuda(level)) return;
  const TensorDictImpl& impl = *level.impl();
  if (impl.entries_alias_storage()) {
    impl.for_each([&](const std::string& key, const Value& value) {
      path.push_back(key);
      if (value.is_tensordict()) {
        share_level(value.tensordict(), path);
      } else if (value.is_tensor()) {
        detail::move_storage_to_shared_memory(value.tensor(), [&] { return "key " + key_of(path); });
      }
      path.pop_back();
    });
  } else {
    impl.for_each_child([&](const TensorDict& part) { share_level(part, path); });
  }
  level.impl()->set_marked_shared(true);
  TensorDict(level).lock_();
}

}  // namespace

TensorDict& TensorDict::share_memory_() {
  std::vector<std::string> path;
  check_shareable(*this, path);
  share_level(*this, path);
  return *this;
}

}  // namespace tensordict
