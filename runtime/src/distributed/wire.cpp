// The leaves of a tensordict on the wire: order, layout, descriptor, packing.
#include "distributed/wire.h"

#include <ATen/core/grad_mode.h>
#include <ATen/ops/empty.h>

#include <algorithm>
#include <cstring>
#include <sstream>
#include <stdexcept>

#include "core/kind_ops.h"
#include "storage/flat_storage.h"
#include "core/format.h"
#include "tensordict/dtype.h"
#include "tensordict/errors.h"
#include "tensordict/lazy.h"

namespace tensordict::dist {

namespace {

// consolidate()'s rule (tensordict's): every leaf starts at a multiple of 8
// bytes, or of its element size when wider.
constexpr int64_t kLeafAlignment = 8;

void check_sendable(const at::Tensor& t, const std::string& path, const char* op) {
  const char* what = nullptr;
  if (t.is_nested()) {
    what = "a nested tensor";
  } else if (t.layout() != at::kStrided) {
    what = "not a strided (dense) tensor";
  } else if (t.is_quantized()) {
    what = "a quantized tensor";
  } else if (!t.has_storage()) {
    what = "a tensor without storage";
  }
  if (what) {
    std::ostringstream layout;
    layout << t.layout();
    throw ValueError(fmt::format(
        "{}: key {} is {} (layout {}): only dense strided tensors travel between processes; call to_dense() or "
        "to_padded_tensor(), or exclude the key first",
        op, path, what, layout.str()));
  }
}

void walk(const TensorDict& td, std::vector<std::string>& parts, Leaves& out, const char* op) {
  if (const auto* lazy = detail::as_stacked(*td.impl())) {
    // tensordict sends a lazy stack member after member.
    const auto& members = lazy->members();
    for (std::size_t i = 0; i < members.size(); ++i) {
      parts.push_back(fmt::format("[{}]", i));
      walk(members[i], parts, out, op);
      parts.pop_back();
    }
    return;
  }
  for (auto& [key, value] : sorted_items(td)) {
    const std::string& name = key.path().back();
    parts.push_back(fmt::format("'{}'", name));
    if (value.is_tensor()) {
      Leaf leaf{path_repr(parts), td, name, value.tensor(), 0};
      check_sendable(leaf.tensor, leaf.path, op);
      if (out.device && *out.device != leaf.tensor.device()) {
        throw ValueError(
            fmt::format("{}: key {} is on {} but earlier leaves are on {}: move the tensordict to one "
                        "device first",
                        op, leaf.path, leaf.tensor.device().str(), out.device->str()));
      }
      out.device = leaf.tensor.device();
      const int64_t size = leaf.tensor.element_size();
      out.bytes = detail::align_up(out.bytes, std::max(kLeafAlignment, size));
      leaf.offset = out.bytes;
      out.bytes += detail::byte_size(leaf.tensor);
      out.leaves.push_back(std::move(leaf));
    } else if (value.is_tensordict()) {
      walk(value.tensordict(), parts, out, op);
    }  // non-tensor data does not travel with the leaves (init_remote sends it)
    parts.pop_back();
  }
}

// The descriptor: per leaf, u32 path length, path, u8 dtype-name length,
// dtype name, u8 ndim, int64 dims. Names rather than enum values, so that two
// libtorch versions agree.
template <class T>
void put(std::string& out, T value) {
  out.append(reinterpret_cast<const char*>(&value), sizeof(T));
}

struct LeafMeta {
  std::string path, dtype;
  std::vector<int64_t> sizes;
};

std::vector<LeafMeta> decode(const std::string& d) {
  std::vector<LeafMeta> out;
  std::size_t at = 0;
  auto take = [&](void* dst, std::size_t n) {
    if (d.size() - at < n) throw RuntimeError("a truncated structure descriptor arrived (not sent by tensorclass?)");
    std::memcpy(dst, d.data() + at, n);
    at += n;
  };
  while (at < d.size()) {
    LeafMeta m;
    uint32_t path_len = 0;
    take(&path_len, sizeof path_len);
    m.path.resize(path_len);
    take(m.path.data(), path_len);
    uint8_t dtype_len = 0;
    take(&dtype_len, 1);
    m.dtype.resize(dtype_len);
    take(m.dtype.data(), dtype_len);
    uint8_t ndim = 0;
    take(&ndim, 1);
    m.sizes.resize(ndim);
    take(m.sizes.data(), ndim * sizeof(int64_t));
    out.push_back(std::move(m));
  }
  return out;
}

std::string show(const LeafMeta& m) { return fmt::format("{} {}", m.dtype, shape_string(m.sizes)); }

}  // namespace

std::vector<std::pair<NestedKey, Value>> sorted_items(const TensorDict& td) {
  auto items = td.items();
  std::sort(items.begin(), items.end(),
            [](const auto& a, const auto& b) { return a.first.path().back() < b.first.path().back(); });
  return items;
}

std::string path_repr(const std::vector<std::string>& parts) {
  if (parts.size() == 1) return parts[0];
  return fmt::format("({})", fmt::join(parts, ", "));
}

Leaves collect_leaves(const TensorDict& td, const char* op) {
  Leaves out;
  std::vector<std::string> parts;
  walk(td, parts, out, op);
  return out;
}

std::string describe(const Leaves& leaves) {
  std::string out;
  for (const auto& leaf : leaves.leaves) {
    put(out, static_cast<uint32_t>(leaf.path.size()));
    out += leaf.path;
    const std::string_view dtype = dtype_name(leaf.tensor.scalar_type());
    put(out, static_cast<uint8_t>(dtype.size()));
    out += dtype;
    put(out, static_cast<uint8_t>(leaf.tensor.dim()));
    for (int64_t s : leaf.tensor.sizes()) put(out, s);
  }
  return out;
}

uint64_t structure_hash(const std::string& descriptor) {
  uint64_t h = 1469598103934665603ull;  // FNV-1a
  for (unsigned char c : descriptor) {
    h ^= c;
    h *= 1099511628211ull;
  }
  return h;
}

std::optional<std::string> first_difference(const std::string& theirs, const std::string& ours,
                                           const std::string& their_name) {
  if (theirs == ours) return std::nullopt;
  const auto a = decode(theirs);
  const auto b = decode(ours);
  for (std::size_t i = 0; i < std::min(a.size(), b.size()); ++i) {
    if (a[i].path != b[i].path) {
      return fmt::format("structure mismatch at leaf #{} (keys sorted): {} has key {} ({}) where this tensordict has key {} ({})",
                         i, their_name, a[i].path, show(a[i]), b[i].path, show(b[i]));
    }
    if (a[i].dtype != b[i].dtype || a[i].sizes != b[i].sizes) {
      return fmt::format("structure mismatch at key {}: {} has {}, this tensordict has {}", a[i].path, their_name, show(a[i]),
                         show(b[i]));
    }
  }
  if (a.size() > b.size()) {
    return fmt::format("structure mismatch: {} has {} leaves, this tensordict {}; its key {} ({}) is missing here",
                       their_name, a.size(), b.size(), a[b.size()].path, show(a[b.size()]));
  }
  return fmt::format("structure mismatch: {} has {} leaves, this tensordict {}; key {} ({}) is missing there", their_name,
                     a.size(), b.size(), b[a.size()].path, show(b[a.size()]));
}

at::Tensor storage_in_wire_layout(const TensorDict& td, const Leaves& leaves) {
  const auto storage = td.consolidated_storage();
  // consolidate() pads the storage to a multiple of 8 bytes after the last leaf.
  if (!storage || storage->numel() != detail::align_up(leaves.bytes, kLeafAlignment)) return {};
  const auto* base = static_cast<const char*>(storage->data_ptr());
  for (const auto& leaf : leaves.leaves) {
    const auto* at = static_cast<const char*>(leaf.tensor.data_ptr());
    if (!leaf.tensor.is_contiguous() || at - base != leaf.offset) return {};
  }
  return storage->narrow(0, 0, leaves.bytes);
}

void pack_into(const Leaves& leaves, const at::Tensor& buffer, int64_t base) {
  at::NoGradGuard no_grad;  // bytes on the wire keep no autograd history
  for (const auto& leaf : leaves.leaves) {
    detail::view_at(buffer, leaf.tensor, base + leaf.offset, /*keep_strides=*/false).copy_(leaf.tensor);
  }
}

at::Tensor pack(const Leaves& leaves) {
  const at::Tensor buffer =
      at::empty({leaves.bytes}, at::TensorOptions().dtype(at::kByte).device(leaves.device.value_or(at::kCPU)));
  pack_into(leaves, buffer, 0);
  return buffer;
}

void write_leaf(const Leaf& leaf, const at::Tensor& value) {
  at::NoGradGuard no_grad;  // tensordict's recv writes into leaves that may require grad
  if (leaf.level.kind() == Kind::Dense) {
    leaf.tensor.copy_(value);  // the stored tensor itself
  } else {
    TensorDict level = leaf.level;  // a handle: other kinds write through their set_
    level.set_(leaf.key, value);
  }
}

void unpack(const Leaves& leaves, const at::Tensor& buffer, int64_t base) {
  for (const auto& leaf : leaves.leaves) {
    write_leaf(leaf, detail::view_at(buffer, leaf.tensor, base + leaf.offset, /*keep_strides=*/false));
  }
}

}  // namespace tensordict::dist
