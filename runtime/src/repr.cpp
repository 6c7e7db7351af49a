#include "tensordict/repr.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>

#include "tensordict/dtype.h"
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

std::string tensor_repr(const at::Tensor& t) {
  return fmt::format("Tensor(shape={}, device={}, dtype=torch.{}, is_shared={})", torch_size(t.sizes()), t.device().str(),
                     dtype_name(t.scalar_type()), python_bool(t.is_cuda()));
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
using detail::tensor_repr;
using detail::torch_size;

namespace {

std::string device_str(const std::optional<at::Device>& device) { return device ? device->str() : "None"; }

// NonTensorData(data=zero!, batch_size=torch.Size([3]), device=None), or a
// NonTensorStack with its tolist() on its own line.
std::string non_tensor_repr(const NonTensorData& data, const TensorDictBase& level) {
  if (!data.is_stack()) {
    return fmt::format("NonTensorData(data={}, batch_size={}, device={})", data.str(), torch_size(level.batch_size()),
                       device_str(level.device()));
  }
  return fmt::format("NonTensorStack(\n{},\n{},\n{})", indent(data.str(), 4),
                     indent("batch_size=" + torch_size(data.ids().sizes()), 4), indent("device=" + device_str(level.device()), 4));
}

}  // namespace

std::string repr(const TensorDictBase& td) {
  std::vector<std::string> fields;
  td.impl()->for_each([&](const std::string& key, const Value& value) {
    std::string text = value.is_tensor()       ? tensor_repr(value.tensor())
                       : value.is_tensordict() ? repr(value.tensordict())
                                               : non_tensor_repr(value.non_tensor(), td);
    fields.push_back(key + ": " + text);
  });
  std::sort(fields.begin(), fields.end());
  const std::string field_lines = indent("\n" + fmt::format("{}", fmt::join(fields, ",\n")), 4);
  const auto device = td.device();
  const std::vector<std::string> parts{
      indent("fields={" + field_lines + "}", 4),
      indent("batch_size=" + torch_size(td.batch_size()), 4),
      indent("device=" + device_str(device), 4),
      indent("is_shared=" + python_bool(td.is_shared()), 4),
  };
  return fmt::format("{}(\n{})", td.type_name(), fmt::join(parts, ",\n"));
}

std::ostream& operator<<(std::ostream& os, const TensorDictBase& td) { return os << repr(td); }

}  // namespace tensordict
