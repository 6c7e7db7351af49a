#include "tcgen/text.h"

#include <fmt/format.h>

namespace tcgen {
namespace {

bool is_control(unsigned char c) { return c < 0x20 || c == 0x7f; }

std::string hex_escape(unsigned char c) { return fmt::format("\\x{:02x}", c); }

// "..." with the escapes C++ and Python share; other control characters
// written by `control`.
template <class Control>
std::string quoted(std::string_view s, Control control) {
  std::string out = "\"";
  for (unsigned char c : s) {
    switch (c) {
      case '"': out += "\\\""; break;
      case '\\': out += "\\\\"; break;
      case '\n': out += "\\n"; break;
      case '\t': out += "\\t"; break;
      case '\r': out += "\\r"; break;
      default:
        if (is_control(c)) out += control(c);
        else out += static_cast<char>(c);
    }
  }
  return out + "\"";
}

}  // namespace

std::string cpp_string_literal(std::string_view s) {
  // Octal, not \x: a C++ hex escape would swallow the hex digits after it.
  return quoted(s, [](unsigned char c) { return fmt::format("\\{:03o}", c); });
}

std::string cpp_string_value(std::string_view s) {
  if (s.find('\0') == std::string_view::npos) return cpp_string_literal(s);
  return fmt::format("{{{}, {}}}", cpp_string_literal(s), s.size());
}

std::string python_string_literal(std::string_view s) {
  return quoted(s, hex_escape);  // Python's \x takes exactly two digits
}

std::string float_literal(std::string_view number) {
  if (!number.empty() && number.front() == '+') number.remove_prefix(1);
  std::string out(number);
  if (out.find_first_of(".eE") == std::string::npos) out += ".0";
  return out;
}

std::string printable(std::string_view s) {
  std::string out;
  for (unsigned char c : s) {
    if (is_control(c) && c != '\t') out += hex_escape(c);
    else out += static_cast<char>(c);
  }
  return out;
}

std::vector<std::string> doc_lines(std::string_view doc) {
  std::vector<std::string> lines;
  while (!doc.empty()) {
    const auto end = doc.find('\n');
    std::string_view line = doc.substr(0, end);
    doc = end == std::string_view::npos ? std::string_view() : doc.substr(end + 1);
    // A "\r\n" line ending is a line ending, not a character to show.
    while (!line.empty() && (line.back() == ' ' || line.back() == '\t' || line.back() == '\r')) line.remove_suffix(1);
    lines.push_back(printable(line));
  }
  while (!lines.empty() && lines.back().empty()) lines.pop_back();
  return lines;
}

}  // namespace tcgen
