// Writes into a tensordict's entries, and the errors they raise, that every
// layer makes: the handle (core), the kinds, the ops (private).
#pragma once

#include <ATen/core/Tensor.h>

#include <string>

#include "tensordict/base.h"
#include "tensordict/batch_index.h"
#include "tensordict/non_tensor.h"

namespace tensordict::detail {

// Whether any dim has a name (TensorDict::has_names, for an impl's names).
bool any_named(const Names& names);

// True when writing into the tensors a walk yields writes into `td` at every
// level (no lazy stack or copying sub-view inside): in-place ops can then work
// on the entries; otherwise they compute their result and update_() it.
bool writes_through(const TensorDictImpl& td);

// target[index] = value in place, `target` being the tensor entry `key` of
// `level` as level.find() gave it. A kind whose find() builds its tensors (a
// lazy stack's stacked copy, a sub-view's advanced-index copy) gets the
// result assigned back, so the write reaches its storage.
void put_entry(TensorDictImpl& level, const std::string& key, const at::Tensor& target, const BatchIndex& index,
               const at::Tensor& value);

// put_non_tensor into the entry `key.back()` of `level` (of batch size
// `batch`), which holds `current`; a memory-mapped level's files follow
// (memmap::write_non_tensor_entry). `key`: the path, for errors.
void put_non_tensor_entry(TensorDictImpl& level, const NestedKey& key, const NonTensorData& current, at::IntArrayRef batch,
                          const BatchIndex& index, const NonTensorData& value);

// Replaces the entry at an existing key path without validating it (for ops
// that rewrite leaves they just derived, whose shapes they control).
void replace_entry(const TensorDict& td, const NestedKey& key, Value value);

// Rethrows the exception in flight naming `op` and `key` (libtorch's message
// without its backtrace): libtorch's IndexError, ValueError and TypeError as
// ours, anything else as RuntimeError. Call from a catch block.
[[noreturn]] void rethrow_for_key(const char* op, const NestedKey& key);
// The same with ValueError for anything else: for in-place writes (set_,
// update_), whose failures tensordict reports as ValueError.
[[noreturn]] void rethrow_invalid_for_key(const char* op, const NestedKey& key);

// What put_non_tensor_entry calls on a memory-mapped level (memmap_dir() set)
// so that its files follow: memmap::write_non_tensor_entry, which memmap
// installs when it maps a level (the handle and the kinds include nothing of
// memmap: kinds/README.md, "Layering").
using MemmapNonTensorWriter = void (*)(const TensorDictImpl& level, const NestedKey& key, const NonTensorData& before,
                                       const NonTensorData& after);
void set_memmap_non_tensor_writer(MemmapNonTensorWriter writer);

}  // namespace tensordict::detail
