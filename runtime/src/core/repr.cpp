#include "tensordict/repr.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <cmath>

#include "kinds/lazy/lazy_impl.h"
#include "core/nesting.h"
#include "tensordict/dtype.h"
#include "tensordict/lazy.h"
#include "tensordict/non_tensor.h"
#include "tensordict/tensorclass_support.h"

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

std::string meta_repr(const TensorMeta& m) {
  return fmt::format("Tensor(shape={}, device={}, dtype=torch.{}, is_shared={})", torch_size(m.shape), m.device.str(),
                     dtype_name(m.dtype), python_bool(m.is_shared));
}

std::string tensor_repr(const at::Tensor& t) { return meta_repr({leaf_shape(t), t.scalar_type(), t.device(), t.is_cuda()}); }

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

std::string device_str(const std::optional<at::Device>& device) { return device ? device->str() : "None"; }

// NonTensorData(data=zero!, batch_size=torch.Size([3]), device=None), or a
// NonTensorStack with its tolist() on its own line.
std::string non_tensor_repr(const NonTensorData& data, const TensorDict& level) {
  if (!data.is_stack()) {
    return fmt::format("NonTensorData(data={}, batch_size={}, device={})", data.str(), torch_size(level.batch_size()),
                       device_str(level.device()));
  }
  return fmt::format("NonTensorStack(\n{},\n{},\n{})", indent(data.str(), 4),
                     indent("batch_size=" + torch_size(data.ids().sizes()), 4), indent("device=" + device_str(level.device()), 4));
}

}  // namespace

namespace {
// "key: <repr>" for every entry of `td`'s level (or only `keys`), unsorted.
std::vector<std::string> field_lines(const TensorDict& td, const std::vector<std::string>* keys) {
  std::vector<std::string> fields;
  const TensorDictImpl& impl = *td.impl();
  auto line = [&](const std::string& key, EntryKind kind) {
    std::string text = kind == EntryKind::Tensor       ? meta_repr(impl.tensor_meta(key))
                       : kind == EntryKind::TensorDict ? repr(impl.find(key)->tensordict())
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

// "\n" + the sorted lines, indented, as tensordict's _td_fields.
std::string fields_block(std::vector<std::string> lines) {
  std::sort(lines.begin(), lines.end());
  return indent(fmt::format("\n{}", fmt::join(lines, ",\n")), 4);
}

// A lazy stack's members' keys that not all members have: "0 ->\n    b: ...".
std::string exclusive_fields(const LazyStackedTensorDict& lazy) {
  std::vector<std::string> entries;
  const auto exclusive = lazy.exclusive_keys();
  for (std::size_t i = 0; i < exclusive.size(); ++i) {
    if (exclusive[i].empty()) continue;
    entries.push_back(indent(fmt::format("{} ->{}", i, fields_block(field_lines(lazy.tensordicts()[i], &exclusive[i]))), 4));
  }
  return fmt::format("\n{}", fmt::join(entries, ",\n"));
}
}  // namespace

std::string repr(const TensorDict& td) {
  detail::NestingGuard guard("repr");
  const auto device = td.device();
  std::vector<std::string> parts{indent("fields={" + fields_block(field_lines(td, nullptr)) + "}", 4)};
  const bool lazy = detail::as_lazy(*td.impl()) != nullptr;
  if (lazy) parts.push_back(indent("exclusive_fields={" + exclusive_fields(LazyStackedTensorDict(td)) + "}", 4));
  parts.push_back(indent("batch_size=" + torch_size(td.batch_size()), 4));
  parts.push_back(indent("device=" + device_str(device), 4));
  parts.push_back(indent("is_shared=" + python_bool(td.is_shared()), 4));
  if (lazy) parts.push_back(indent(fmt::format("stack_dim={}", LazyStackedTensorDict(td).stack_dim()), 4));
  return fmt::format("{}(\n{})", td.type_name(), fmt::join(parts, ",\n"));
}

std::ostream& operator<<(std::ostream& os, const TensorDict& td) { return os << repr(td); }

}  // namespace tensordict
