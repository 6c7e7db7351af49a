// What goes on the wire (private): the leaves of a tensordict in tensordict's
// order, their byte layout in one buffer, and the structure descriptor both
// sides compare before any data is trusted.
#pragma once

#include <ATen/core/Tensor.h>

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "tensordict/base.h"

namespace tensordict::dist {

// One tensor leaf: where it lives (to write a received value back) and how to show it.
struct Leaf {
  std::string path;     // ('a', 'b'); a lazy stack's member as [i]: ('obs', [1], 'x')
  TensorDict level;  // the tensordict holding it
  std::string key;      // its key there
  at::Tensor tensor;
  int64_t offset = 0;  // in the flat buffer
};

// `td`'s own entries, their keys sorted (tensordict's sorted_keys).
std::vector<std::pair<NestedKey, Value>> sorted_items(const TensorDict& td);

// A key path as the messages show it: its parts ('a', [1] for a lazy stack's
// member), joined as a tuple when there are several.
std::string path_repr(const std::vector<std::string>& parts);

// The leaves of `td` in tensordict's order: at each level the keys sorted,
// nested tensordicts where their key sorts, a lazy stack's members in turn.
// Leaves that cannot travel as bytes (sparse, nested, quantized) are refused,
// naming `op` and the key. Offsets are set as consolidate() lays leaves out.
struct Leaves {
  std::vector<Leaf> leaves;
  int64_t bytes = 0;  // the flat buffer's size
  std::optional<at::Device> device;  // of every leaf (nullopt: no leaf)
};
Leaves collect_leaves(const TensorDict& td, const char* op);

// The structure both sides must share: each leaf's path, dtype and shape.
std::string describe(const Leaves& leaves);
uint64_t structure_hash(const std::string& descriptor);
// Why `theirs` (another rank's descriptor) differs from `ours`, naming the
// first differing key and both dtypes and shapes; nullopt when they agree.
std::optional<std::string> first_difference(const std::string& theirs, const std::string& ours,
                                           const std::string& their_name);

// `td`'s consolidated storage when its layout is exactly `leaves`' (then it can
// be sent or received into with no copy); undefined otherwise.
at::Tensor storage_in_wire_layout(const TensorDict& td, const Leaves& leaves);
// A fresh buffer holding every leaf at its offset.
at::Tensor pack(const Leaves& leaves);
// The same into `buffer` (a fresh uint8 tensor on the leaves' device) from
// `base` on, a multiple of 64.
void pack_into(const Leaves& leaves, const at::Tensor& buffer, int64_t base);
// Writes `value` into the leaf, in the tensordict it came from (no autograd).
void write_leaf(const Leaf& leaf, const at::Tensor& value);
// Writes each leaf's bytes from `buffer` (a fresh uint8 tensor; the leaves
// from `base` on, a multiple of 64) back into the tensordict it came from.
void unpack(const Leaves& leaves, const at::Tensor& buffer, int64_t base = 0);

}  // namespace tensordict::dist
