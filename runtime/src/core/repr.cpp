#include "tensordict/detail/impl.h"
#include "tensordict/repr.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <cmath>

#include "core/kind_ops.h"
#include "core/nesting.h"
#include "core/repr_forms.h"
#include "core/shared_leaf.h"
#include "tensordict/dtype.h"
#include "tensordict/lazy.h"
#include "tensordict/non_tensor.h"
#include "tensordict/detail/tensorclass_support.h"

namespace tensordict {

namespace detail {

// Python's textwrap.indent: prefixes every line that is not whitespace only.
std::string indent(const std::string& text, int width) {
  const std::string pad(width, ' ');
  std::string out;
  std::size_t start = 0;
  while (start < text.size()) {
    std::size_t end = text.find('\n', start);
    end = end == std::string::npos ? text.size() : end + 1;
    const std::string_view line(text.data() + start, end - start);
    if (line.find_first_not_of(" \t\r\n") != std::string_view::npos) out += pad;
    out += line;
    start = end;
  }
  return out;
}

std::string torch_size(at::IntArrayRef sizes) { return fmt::format("torch.Size([{}])", fmt::join(sizes, ", ")); }

std::string python_bool(bool b) { return b ? "True" : "False"; }

namespace {
// tensordict's _tensor_repr_fields: the attributes of a leaf the options select.
std::vector<std::string> meta_fields(const TensorMeta& m, const PrintOptions& o) {
  std::vector<std::string> parts;
  if (o.show_shape) parts.push_back("shape=" + torch_size(m.shape));
  if (o.show_field_device) parts.push_back("device=" + m.device.str());
  if (o.show_dtype) parts.push_back(fmt::format("dtype=torch.{}", dtype_name(m.dtype)));
  if (o.show_field_is_shared) parts.push_back("is_shared=" + python_bool(m.is_shared));
  return parts;
}

// Python's format(complex, ".4g").
std::string python_complex(double real, double imag) { return fmt::format("{:.4g}{:+.4g}j", real, imag); }

// tensordict's _plain_summary: mean and std of a floating (or complex)
// tensor, min and max of another one.
std::string plain_summary(const at::Tensor& tensor) {
  if (tensor.numel() == 0) return "[]";
  at::Tensor t = tensor.is_nested() ? at::cat(tensor.unbind(), 0).reshape(-1) : tensor;
  if (t.is_floating_point() || t.is_complex()) {
    t = t.to(t.is_complex() ? at::kComplexDouble : at::kDouble);
    const double std = t.numel() > 1 ? t.std().item<double>() : std::nan("");
    if (t.is_complex()) {
      const auto mean = t.mean().item<c10::complex<double>>();
      return fmt::format("mean={}, std={:.4g}", python_complex(mean.real(), mean.imag()), std);
    }
    return fmt::format("mean={:.4g}, std={:.4g}", t.mean().item<double>(), std);
  }
  if (t.scalar_type() == at::kBool) {
    return fmt::format("min={}, max={}", python_bool(t.min().item<bool>()), python_bool(t.max().item<bool>()));
  }
  return fmt::format("min={}, max={}", t.min().item<int64_t>(), t.max().item<int64_t>());
}
}  // namespace

std::string meta_repr(const TensorMeta& m, const PrintOptions& options, std::string_view type_name) {
  return fmt::format("{}({})", type_name, fmt::join(meta_fields(m, options), ", "));
}

namespace {
// The detailed leaf repr with the attributes that need the data (`m`: the
// metadata part).
std::string data_repr(const TensorMeta& m, const at::Tensor& t, const PrintOptions& o, std::string_view type_name) {
  auto parts = meta_fields(m, o);
  if (o.show_grad) parts.push_back("requires_grad=" + python_bool(t.requires_grad()));
  if (o.show_is_contiguous) parts.push_back("is_contiguous=" + python_bool(!t.is_nested() && t.is_contiguous()));
  if (o.show_is_view) parts.push_back("is_view=" + python_bool(t.is_view()));
  if (o.show_storage_size) parts.push_back(fmt::format("storage_size={}", t.storage().nbytes()));
  if (o.plain) parts.push_back(plain_summary(t));
  return fmt::format("{}({})", type_name, fmt::join(parts, ", "));
}
}  // namespace

std::string tensor_repr(const at::Tensor& t, const PrintOptions& o, std::string_view type_name) {
  return data_repr({leaf_shape(t), t.scalar_type(), t.device(), tensor_is_shared(t)}, t, o, type_name);
}

std::string non_tensor_repr(const NonTensorData& data, at::IntArrayRef batch_size, const std::optional<at::Device>& device) {
  if (!data.is_stack()) return non_tensor_data_repr(data.str(), batch_size, device);
  const std::string where = device ? device->str() : "None";
  return fmt::format("NonTensorStack(\n{},\n{},\n{})", indent(data.str(), 4),
                     indent("batch_size=" + torch_size(data.ids().sizes()), 4), indent("device=" + where, 4));
}

std::string non_tensor_data_repr(std::string data, at::IntArrayRef batch_size, const std::optional<at::Device>& device) {
  // tensordict's NonTensorData.__repr__ shortens a long value
  if (data.size() > 200) data = data.substr(0, 20) + "  ...  " + data.substr(data.size() - 20);
  return fmt::format("NonTensorData(data={}, batch_size={}, device={})", data, torch_size(batch_size),
                     device ? device->str() : std::string("None"));
}

std::string python_tuple_str(const std::vector<std::string>& item_reprs) {
  if (item_reprs.size() == 1) return "(" + item_reprs.front() + ",)";
  return fmt::format("({})", fmt::join(item_reprs, ", "));
}

std::vector<std::string> header_parts(at::IntArrayRef batch_size, const std::optional<at::Device>& device,
                                      bool is_shared, const PrintOptions& o) {
  std::vector<std::string> parts;
  if (o.show_batch_size) parts.push_back("batch_size=" + torch_size(batch_size));
  if (o.show_device) parts.push_back("device=" + (device ? device->str() : std::string("None")));
  if (o.show_is_shared) parts.push_back("is_shared=" + python_bool(is_shared));
  return parts;
}

std::string shape_string(at::IntArrayRef sizes) { return fmt::format("[{}]", fmt::join(sizes, ", ")); }

std::string python_repr(const std::string& v) {
  // Python's repr: single quotes unless the text holds one and no double quote.
  const bool dq = v.find('\'') != std::string::npos && v.find('"') == std::string::npos;
  const char q = dq ? '"' : '\'';
  std::string out(1, q);
  for (char c : v) {
    if (c == '\\') out += "\\\\";
    else if (c == q) out += std::string("\\") + q;
    else if (c == '\n') out += "\\n";
    else if (c == '\t') out += "\\t";
    else out += c;
  }
  return out + q;
}
std::string python_repr(std::int64_t v) { return std::to_string(v); }
std::string python_repr(double v) {
  if (std::isnan(v)) return "nan";
  if (std::isinf(v)) return v > 0 ? "inf" : "-inf";
  std::string s = fmt::format("{}", v);
  if (s.find_first_of(".e") == std::string::npos) s += ".0";
  return s;
}
std::string python_repr(bool v) { return python_bool(v); }

}  // namespace detail

using detail::indent;
using detail::python_bool;
using detail::meta_repr;
using detail::torch_size;

namespace {

std::string non_tensor_repr(const NonTensorData& data, const TensorDict& level) {
  return detail::non_tensor_repr(data, level.batch_size(), level.device());
}

// The first member of a lazy stack that is not one, descending (the level
// itself for another kind).
TensorDict first_leaf_member(TensorDict td) {
  for (;;) {
    const auto* parts = detail::as_stacked(*td.impl());
    if (!parts || parts->members().empty()) return td;
    TensorDict first = parts->members().front();
    td = std::move(first);
  }
}

// The detailed repr of tensor entry `key` (tensordict's _td_fields): from the
// metadata where the options need no data, as a lazy stack stacks nothing
// and an h5 file reads no dataset; a lazy stack's entry whose members differ
// in shape prints with its first member's class.
std::string tensor_entry_repr(const TensorDict& td, const std::string& key, const PrintOptions& o) {
  const TensorDictImpl& impl = *td.impl();
  const bool lazy = detail::as_stacked(impl) != nullptr;
  const bool needs_data = o.show_grad || o.show_is_contiguous || o.show_is_view || o.show_storage_size || o.plain;
  const TensorMeta meta = impl.tensor_meta(key);
  const bool ragged = std::find(meta.shape.begin(), meta.shape.end(), -1) != meta.shape.end();
  if (lazy) {
    if (ragged) return meta_repr(meta, o, first_leaf_member(td).is_memmap() ? "MemoryMappedTensor" : "Tensor");
    if (meta.unbatched) return needs_data ? detail::data_repr(meta, impl.find(key)->tensor(), o, "UnbatchedTensor") : meta_repr(meta, o, "UnbatchedTensor");
    return needs_data ? detail::tensor_repr(impl.find(key)->tensor(), o) : meta_repr(meta, o);
  }
  if (!impl.memmap_dir()) {
    const char* cls = meta.unbatched ? "UnbatchedTensor" : "Tensor";
    return needs_data ? detail::data_repr(meta, impl.find(key)->tensor(), o, cls) : meta_repr(meta, o, cls);
  }
  // tensordict's MemoryMappedTensor: one mapped from a file is shared, one
  // in anonymous memory (memmap_() without a prefix) is not
  TensorMeta mapped = meta;
  mapped.is_shared = !impl.memmap_dir()->empty();
  return needs_data ? detail::data_repr(mapped, impl.find(key)->tensor(), o, "MemoryMappedTensor")
                    : meta_repr(mapped, o, "MemoryMappedTensor");
}

// "key: <repr>" for every entry of `td`'s level (or only `keys`), unsorted.
std::vector<std::string> field_lines(const TensorDict& td, const std::vector<std::string>* keys, const PrintOptions& o) {
  std::vector<std::string> fields;
  const TensorDictImpl& impl = *td.impl();
  auto line = [&](const std::string& key, EntryKind kind) {
    std::string text = kind == EntryKind::Tensor       ? tensor_entry_repr(td, key, o)
                       : kind == EntryKind::TensorDict ? detail::detailed_repr(impl.find(key)->tensordict(), o)
                                                       : non_tensor_repr(impl.find(key)->non_tensor(), td);
    fields.push_back(key + ": " + text);
  };
  if (keys) {
    // Keys the level may not list itself (a lazy stack's exclusive ones).
    for (const auto& key : *keys) {
      auto value = impl.find(key);
      line(key, value->is_tensor() ? EntryKind::Tensor : value->is_tensordict() ? EntryKind::TensorDict : EntryKind::NonTensor);
    }
  } else {
    impl.for_each_key(line);
  }
  return fields;
}

// "\n" + the lines as sort_keys orders them, indented, as tensordict's _td_fields.
std::string fields_block(std::vector<std::string> lines, const PrintOptions& o) {
  if (o.sort_keys.is_alphabetical()) {
    std::sort(lines.begin(), lines.end());
  } else if (o.sort_keys.less()) {
    std::stable_sort(lines.begin(), lines.end(), o.sort_keys.less());
  }
  return indent(fmt::format("\n{}", fmt::join(lines, ",\n")), 4);
}

// A lazy stack's members' keys that not all members have: "0 ->\n    b: ...".
std::string exclusive_fields(const LazyStackedTensorDict& lazy, const PrintOptions& o) {
  std::vector<std::string> entries;
  const auto exclusive = lazy.exclusive_keys();
  for (std::size_t i = 0; i < exclusive.size(); ++i) {
    if (exclusive[i].empty()) continue;
    entries.push_back(indent(fmt::format("{} ->{}", i, fields_block(field_lines(lazy.tensordicts()[i], &exclusive[i], o), o)), 4));
  }
  return fmt::format("\n{}", fmt::join(entries, ",\n"));
}
}  // namespace

namespace detail {
std::string detailed_repr(const TensorDict& td, const PrintOptions& o) {
  detail::NestingGuard guard("repr");
  std::vector<std::string> parts{indent("fields={" + fields_block(field_lines(td, nullptr, o), o) + "}", 4)};
  const auto* stacked = detail::as_stacked(*td.impl());
  if (stacked) parts.push_back(indent("exclusive_fields={" + exclusive_fields(LazyStackedTensorDict(td), o) + "}", 4));
  for (const auto& part : header_parts(td.batch_size(), td.device(), td.is_shared(), o)) parts.push_back(indent(part, 4));
  if (stacked) parts.push_back(indent(fmt::format("stack_dim={}", stacked->stack_dim()), 4));
  return fmt::format("{}(\n{})", td.type_name(), fmt::join(parts, ",\n"));
}
}  // namespace detail

std::string repr(const TensorDict& td) {
  const PrintOptions options = get_printoptions();
  return options.compact ? detail::compact_repr(td, options) : detail::detailed_repr(td, options);
}

std::ostream& operator<<(std::ostream& os, const TensorDict& td) { return os << repr(td); }

}  // namespace tensordict
