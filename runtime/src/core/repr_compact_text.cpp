// The text of the compact repr (tensordict's _compact_token, _compact_flat,
// _compact_render, _compact_repr), shared by tensordicts and tensorclasses.
#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>

#include "tensordict/dtype.h"
#include "tensordict/detail/tensorclass_support.h"

namespace tensordict::detail {

namespace {

constexpr std::size_t kCompactWidth = 80;

// f32, i64, u8, c64, bf16, bool: torch's name with float/uint/int/complex
// shortened, in this order (tensordict's _compact_dtype).
std::string compact_dtype(at::ScalarType dtype) {
  std::string name(dtype_name(dtype));
  for (auto [from, to] : {std::pair{"float", "f"}, {"uint", "u"}, {"int", "i"}, {"complex", "c"}}) {
    const std::string_view f(from);
    for (auto at = name.find(f); at != std::string::npos; at = name.find(f, at + 1)) name.replace(at, f.size(), to);
  }
  return name;
}

std::string flat(const CompactNode& node) {
  if (!node.container) return node.text;
  std::vector<std::string> items;
  for (const auto& e : node.entries) items.push_back(e.key + ": " + flat(e));
  return fmt::format("{}{{{}}}", node.text, fmt::join(items, ", "));
}

// One line if it fits, given the `used` columns before it and the `tail`
// ones after it; otherwise one entry per line, each by the same rule.
std::string render(const CompactNode& node, const std::string& indent, std::size_t used, std::size_t tail) {
  std::string text = flat(node);
  if (!node.container || node.entries.empty() || used + text.size() + tail <= kCompactWidth) return text;
  const std::string pad = indent + "    ";
  std::vector<std::string> lines;
  for (std::size_t i = 0; i < node.entries.size(); ++i) {
    const auto& e = node.entries[i];
    const std::size_t value_tail = i + 1 == node.entries.size() ? tail + 1 : 1;
    lines.push_back(pad + e.key + ": " + render(e, pad, pad.size() + e.key.size() + 2, value_tail));
  }
  return fmt::format("{}{{\n{}}}", node.text, fmt::join(lines, ",\n"));
}

CompactNode container(std::vector<CompactNode> entries) {
  CompactNode node;
  node.container = true;
  node.entries = std::move(entries);
  return node;
}

}  // namespace

std::string compact_dims(at::IntArrayRef dims) { return fmt::format("[{}]", fmt::join(dims, ",")); }

std::string compact_token(at::IntArrayRef feature_shape, at::ScalarType dtype, std::vector<std::string> devices,
                          bool level_has_device, const PrintOptions& options) {
  std::string token = compact_dims(feature_shape);
  if (options.show_dtype) token = compact_dtype(dtype) + token;
  std::sort(devices.begin(), devices.end());
  devices.erase(std::unique(devices.begin(), devices.end()), devices.end());
  if (!level_has_device && devices != std::vector<std::string>{"cpu"}) token += fmt::format("@{}", fmt::join(devices, ","));
  return token;
}

void sort_compact(std::vector<CompactNode>& entries, const PrintOptions& options) {
  if (!options.sort_keys.is_alphabetical() && !options.sort_keys.less()) return;
  std::vector<std::pair<std::string, CompactNode>> keyed;
  for (auto& e : entries) keyed.emplace_back(e.key + ": " + flat(e), std::move(e));
  const auto& less = options.sort_keys.less();
  std::stable_sort(keyed.begin(), keyed.end(), [&](const auto& a, const auto& b) {
    return less ? less(a.first, b.first) : a.first < b.first;
  });
  for (std::size_t i = 0; i < entries.size(); ++i) entries[i] = std::move(keyed[i].second);
}

std::string compact_repr(std::string_view class_name, const std::vector<std::string>& header,
                         std::vector<CompactNode> fields, std::vector<CompactNode> exclusive) {
  std::string head = std::string(class_name) + "(";
  for (const auto& h : header) head += h + ", ";
  head += "fields=";
  // on the last line of the fields come the exclusive fields, if any
  const std::string exclusive_label = ", exclusive_fields=";
  const std::size_t tail = exclusive.empty() ? 1 : 1 + (exclusive_label + "{").size();
  std::string out = head + render(container(std::move(fields)), "", head.size(), tail);
  if (!exclusive.empty()) {
    const auto last_line = out.rfind('\n');
    const std::size_t used =
        (last_line == std::string::npos ? out.size() : out.size() - last_line - 1) + exclusive_label.size();
    out += exclusive_label + render(container(std::move(exclusive)), "", used, 1);
  }
  return out + ")";
}

}  // namespace tensordict::detail
