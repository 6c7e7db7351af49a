#include "tcgen/annotation_args.h"

#include <fmt/format.h>

#include <limits>

namespace tcgen {
namespace {

class Parser {
 public:
  explicit Parser(std::string_view text) : text_(text) {}

  AnnotationParseResult run() {
    std::vector<AnnotationArg> args;
    skip_space();
    if (at_end()) return args;
    while (true) {
      AnnotationArg arg;
      if (!parse_key(arg.key)) return error_;
      skip_space();
      if (!at_end() && peek() == '=') {
        ++pos_;
        skip_space();
        if (!parse_value(arg)) return error_;
        skip_space();
      }
      args.push_back(std::move(arg));
      if (at_end()) return args;
      if (peek() != ',') return fail(fmt::format("expected ',' or end of arguments, found {}", describe()));
      ++pos_;
      skip_space();
      if (at_end()) return fail("expected an argument after ','");
    }
  }

 private:
  bool at_end() const { return pos_ >= text_.size(); }
  char peek() const { return text_[pos_]; }
  void skip_space() {
    while (!at_end() && (peek() == ' ' || peek() == '\t' || peek() == '\n' || peek() == '\r')) ++pos_;
  }
  static bool ident_start(char c) { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_'; }
  static bool digit(char c) { return c >= '0' && c <= '9'; }

  std::string describe() const {
    if (at_end()) return "end of arguments";
    unsigned char c = static_cast<unsigned char>(peek());
    if (c >= 0x20 && c < 0x7f) return fmt::format("'{}'", static_cast<char>(c));
    return fmt::format("byte 0x{:02x}", c);
  }

  AnnotationParseError fail(std::string message) {
    error_ = {pos_, std::move(message)};
    return error_;
  }

  bool parse_key(std::string& key) {
    if (at_end() || !ident_start(peek())) {
      fail(fmt::format("expected an argument name, found {}", describe()));
      return false;
    }
    std::size_t start = pos_;
    while (!at_end() && (ident_start(peek()) || digit(peek()))) ++pos_;
    key = std::string(text_.substr(start, pos_ - start));
    return true;
  }

  bool parse_value(AnnotationArg& arg) {
    if (at_end()) {
      fail(fmt::format("expected a value for '{}' after '='", arg.key));
      return false;
    }
    if (peek() == '"') return parse_string(arg);
    if (peek() == '-' || digit(peek())) return parse_integer(arg);
    fail(fmt::format("expected a string or an integer for '{}', found {}", arg.key, describe()));
    return false;
  }

  bool parse_string(AnnotationArg& arg) {
    std::size_t start = pos_;
    ++pos_;  // opening quote
    std::string out;
    while (true) {
      if (at_end()) {
        pos_ = start;
        fail(fmt::format("unterminated string for '{}'", arg.key));
        return false;
      }
      char c = peek();
      ++pos_;
      if (c == '"') break;
      if (c == '\\') {
        if (at_end()) continue;  // reported as unterminated on the next turn
        char e = peek();
        ++pos_;
        switch (e) {
          case '"': out += '"'; break;
          case '\\': out += '\\'; break;
          case 'n': out += '\n'; break;
          case 't': out += '\t'; break;
          default:
            pos_ -= 2;
            fail(fmt::format("unknown escape sequence '\\{}' in string for '{}'", e, arg.key));
            return false;
        }
      } else {
        out += c;
      }
    }
    arg.value = AnnotationArg::Value::String;
    arg.string_value = std::move(out);
    return true;
  }

  bool parse_integer(AnnotationArg& arg) {
    std::size_t start = pos_;
    bool negative = false;
    if (peek() == '-') {
      negative = true;
      ++pos_;
    }
    if (at_end() || !digit(peek())) {
      fail(fmt::format("expected digits after '-' for '{}'", arg.key));
      return false;
    }
    // Accumulate as a negative number so INT64_MIN fits.
    std::int64_t value = 0;
    constexpr auto min = std::numeric_limits<std::int64_t>::min();
    while (!at_end() && digit(peek())) {
      int d = peek() - '0';
      if (value < (min + d) / 10) {
        pos_ = start;
        fail(fmt::format("integer out of range for '{}'", arg.key));
        return false;
      }
      value = value * 10 - d;
      ++pos_;
    }
    if (!at_end() && (ident_start(peek()) || peek() == '.')) {
      fail(fmt::format("invalid integer for '{}'", arg.key));
      return false;
    }
    if (!negative) {
      if (value == min) {
        pos_ = start;
        fail(fmt::format("integer out of range for '{}'", arg.key));
        return false;
      }
      value = -value;
    }
    arg.value = AnnotationArg::Value::Integer;
    arg.int_value = value;
    return true;
  }

  std::string_view text_;
  std::size_t pos_ = 0;
  AnnotationParseError error_;
};

}  // namespace

AnnotationParseResult parse_annotation_args(std::string_view text) { return Parser(text).run(); }

}  // namespace tcgen
