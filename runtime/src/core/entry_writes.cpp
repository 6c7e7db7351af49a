// Writes into a tensordict's entries that every layer makes (core/entry_writes.h).
#include "core/entry_writes.h"

#include <c10/util/Exception.h>
#include <fmt/format.h>

#include <algorithm>
#include <atomic>
#include <exception>

#include "core/format.h"
#include "core/nesting.h"
#include "tensordict/errors.h"
#include "tensordict/non_tensor.h"
#include "tensordict/non_tensor_ops.h"

namespace tensordict::detail {

namespace {
// Installed by memmap before any level is memory-mapped (mark_memmapped):
// until then no level has a memmap_dir() and it is never called.
void no_files(const TensorDictImpl&, const NestedKey&, const NonTensorData&, const NonTensorData&) {}
std::atomic<MemmapNonTensorWriter> memmap_non_tensor_writer{no_files};
}  // namespace

void set_memmap_non_tensor_writer(MemmapNonTensorWriter writer) {
  memmap_non_tensor_writer.store(writer, std::memory_order_release);
}

namespace {
// libtorch's errors keep their meaning (errors.h): c10's IndexError,
// ValueError, TypeError and NotImplementedError become ours; any other
// c10::Error becomes `Fallback`.
template <class Fallback>
[[noreturn]] void rethrow_as(const char* op, const NestedKey& key) {
  try {
    throw;
  } catch (const c10::IndexError& e) {
    throw IndexError(fmt::format("{} failed for key {}: {}", op, key.repr(), e.what_without_backtrace()));
  } catch (const c10::ValueError& e) {
    throw ValueError(fmt::format("{} failed for key {}: {}", op, key.repr(), e.what_without_backtrace()));
  } catch (const c10::TypeError& e) {
    throw TypeError(fmt::format("{} failed for key {}: {}", op, key.repr(), e.what_without_backtrace()));
  } catch (const c10::NotImplementedError& e) {
    throw NotImplementedError(fmt::format("{} failed for key {}: {}", op, key.repr(), e.what_without_backtrace()));
  } catch (const c10::Error& e) {
    throw Fallback(fmt::format("{} failed for key {}: {}", op, key.repr(), e.what_without_backtrace()));
  } catch (const std::exception& e) {
    throw Fallback(fmt::format("{} failed for key {}: {}", op, key.repr(), e.what()));
  }
}
}  // namespace

void rethrow_for_key(const char* op, const NestedKey& key) { rethrow_as<RuntimeError>(op, key); }

void rethrow_invalid_for_key(const char* op, const NestedKey& key) { rethrow_as<ValueError>(op, key); }

bool any_named(const Names& names) {
  return std::any_of(names.begin(), names.end(), [](const auto& n) { return n.has_value(); });
}

bool writes_through(const TensorDictImpl& td) {
  NestingGuard guard("writes_through");
  if (!td.entries_alias_storage()) return false;
  bool all = true;
  td.for_each_key([&](const std::string& key, EntryKind kind) {
    if (all && kind == EntryKind::TensorDict) all = writes_through(*td.find(key)->impl());
  });
  return all;
}

void put_entry(TensorDictImpl& level, const std::string& key, const at::Tensor& target, const BatchIndex& index,
               const at::Tensor& value) {
  index.put(target, value);
  if (!level.entries_alias_storage()) level.assign(key, target);
}

void replace_entry(const TensorDict& td, const NestedKey& key, Value value) {
  std::shared_ptr<TensorDictImpl> level = td.impl();
  for (std::size_t depth = 0; depth + 1 < key.size(); ++depth) level = level->find(key[depth])->impl();
  level->insert(key.back(), std::move(value));
}

void put_non_tensor_entry(TensorDictImpl& level, const NestedKey& key, const NonTensorData& current, at::IntArrayRef batch,
                          const BatchIndex& index, const NonTensorData& value) {
  NonTensorData written = put_non_tensor(current, batch, index, value);
  // A memory-mapped level keeps its files in step (or refuses).
  if (level.memmap_dir()) memmap_non_tensor_writer.load(std::memory_order_acquire)(level, key, current, written);
  // tensordict's rule for a level in shared memory: its one value for the
  // whole batch may not turn into a stack of values.
  if (level.marked_shared() && !current.is_stack() && written != current) {
    throw RuntimeError(fmt::format(
        "cannot write at an index of key {}: a tensordict in shared memory holds its one value {} there, and the "
        "write would make it {} (tensordict: \"You're attempting to update a leaf in-place with a shared tensordict, "
        "but the new value does not match the previous\"); store a NonTensorStack there before share_memory_() to "
        "write per element",
        key.repr(), tensordict::python_repr(current.data()), tensordict::python_repr(written.data())));
  }
  level.insert(key.back(), std::move(written));
}

}  // namespace tensordict::detail
