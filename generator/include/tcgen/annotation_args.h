// Parser for the argument string of TC_TENSORCLASS(...) / TC_FIELD(...).
//
// Grammar (whitespace allowed between tokens):
//   args  := [ entry { "," entry } ]
//   entry := key [ "=" value ]
//   key   := identifier
//   value := string | integer
//   string  := '"' { char | '\' escape } '"'   (escapes: \" \\ \n \t)
//   integer := [ "-" ] digit { digit }
// A key without a value is a flag. Pure function: no I/O, never throws.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

namespace tcgen {

struct AnnotationArg {
  // The form of its value: none (a flag), a string or an integer.
  enum class Value { Flag, String, Integer };
  std::string key;
  Value value = Value::Flag;
  std::string string_value;
  std::int64_t int_value = 0;
};

struct AnnotationParseError {
  std::size_t offset = 0;  // byte offset into the argument string
  std::string message;
};

using AnnotationParseResult =
    std::variant<std::vector<AnnotationArg>, AnnotationParseError>;

AnnotationParseResult parse_annotation_args(std::string_view text);

}  // namespace tcgen
