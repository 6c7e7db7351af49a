#include "safetensors/safetensors_format.h"

#include <nlohmann/json.hpp>

#include <fmt/format.h>

#include <array>
#include <cmath>

namespace tensordict::detail::safetensors {

namespace {
constexpr std::array<Dtype, 11> kDtypes{{
    {at::kBool, "BOOL", 0},
    {at::kByte, "U8", 1},
    {at::kChar, "I8", 2},
    {at::kShort, "I16", 5},
    {at::kHalf, "F16", 7},
    {at::kBFloat16, "BF16", 8},
    {at::kInt, "I32", 9},
    {at::kFloat, "F32", 11},
    {at::kComplexFloat, "C64", 12},
    {at::kDouble, "F64", 13},
    {at::kLong, "I64", 14},
}};

void append_string(std::string& out, const std::string& s) {
  out += '"';
  // Decode UTF-8 (nlohmann holds valid UTF-8) and escape as Python does.
  for (std::size_t i = 0; i < s.size();) {
    const auto c = static_cast<unsigned char>(s[i]);
    uint32_t code = c;
    std::size_t len = 1;
    if (c >= 0xF0) {
      code = c & 0x07u, len = 4;
    } else if (c >= 0xE0) {
      code = c & 0x0Fu, len = 3;
    } else if (c >= 0xC0) {
      code = c & 0x1Fu, len = 2;
    }
    for (std::size_t k = 1; k < len && i + k < s.size(); ++k) code = (code << 6) | (static_cast<unsigned char>(s[i + k]) & 0x3Fu);
    i += len;
    switch (code) {
      case '"': out += "\\\""; break;
      case '\\': out += "\\\\"; break;
      case '\n': out += "\\n"; break;
      case '\r': out += "\\r"; break;
      case '\t': out += "\\t"; break;
      case '\b': out += "\\b"; break;
      case '\f': out += "\\f"; break;
      default:
        if (code < 0x20 || (code >= 0x7F && code < 0x10000)) {
          out += fmt::format("\\u{:04x}", code);
        } else if (code >= 0x10000) {
          code -= 0x10000;
          out += fmt::format("\\u{:04x}\\u{:04x}", 0xD800 + (code >> 10), 0xDC00 + (code & 0x3FF));
        } else {
          out += static_cast<char>(code);
        }
    }
  }
  out += '"';
}

void append(std::string& out, const Json& value) {
  switch (value.type()) {
    case Json::value_t::object: {
      out += '{';
      bool first = true;
      for (const auto& [key, item] : value.items()) {
        if (!first) out += ", ";
        first = false;
        append_string(out, key);
        out += ": ";
        append(out, item);
      }
      out += '}';
      return;
    }
    case Json::value_t::array: {
      out += '[';
      for (std::size_t i = 0; i < value.size(); ++i) {
        if (i) out += ", ";
        append(out, value[i]);
      }
      out += ']';
      return;
    }
    case Json::value_t::string: append_string(out, value.get_ref<const std::string&>()); return;
    case Json::value_t::number_float: {
      const double d = value.get<double>();
      if (std::isnan(d)) {
        out += "NaN";
      } else if (std::isinf(d)) {
        out += d > 0 ? "Infinity" : "-Infinity";
      } else {
        out += value.dump();  // shortest round trip, ".0" kept, as Python's repr
      }
      return;
    }
    default: out += value.dump(); return;  // null, booleans, integers
  }
}
}  // namespace

const Dtype* find_dtype(at::ScalarType type) {
  for (const auto& d : kDtypes) {
    if (d.type == type) return &d;
  }
  return nullptr;
}

const Dtype* find_dtype(std::string_view name) {
  for (const auto& d : kDtypes) {
    if (d.name == name) return &d;
  }
  return nullptr;
}

std::string known_dtypes() {
  std::string out;
  for (const auto& d : kDtypes) out += (out.empty() ? "" : ", ") + std::string(d.name);
  return out;
}

std::string python_json_dumps(const Json& value) {
  std::string out;
  append(out, value);
  return out;
}

}  // namespace tensordict::detail::safetensors
