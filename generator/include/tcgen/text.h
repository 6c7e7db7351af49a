// Spelling schema text (docs, names, defaults) safely into generated source:
// whatever a schema holds, it ends up inside a literal or a comment and never
// as code (no raw control character leaves the generator).
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace tcgen {

// C++ string literal for `s` ("\"a\\\"b\"").
std::string cpp_string_literal(std::string_view s);
// A C++ initializer of a std::string or std::string_view holding exactly
// `s`: its literal, or {literal, size} when `s` holds a NUL (the literal alone
// would end there, as a const char* and as a string_view made from one).
std::string cpp_string_value(std::string_view s);
// Python string literal for `s` ('"a\\"b"'); UTF-8 text is kept as it is.
std::string python_string_literal(std::string_view s);
// A validated schema number as a floating literal of C++ and Python: no '+',
// and ".0" after a whole number (both languages read "100000000000000000000"
// as an integer, one too large for any C++ integer type).
std::string float_literal(std::string_view number);
// `s` with every control character (tab excepted) written as `\xNN`: text for
// a comment line that cannot end it or start a new line.
std::string printable(std::string_view s);
// A doc string as comment lines: split at '\n', each line printable() with its
// trailing blanks removed, trailing empty lines dropped.
std::vector<std::string> doc_lines(std::string_view doc);

}  // namespace tcgen
