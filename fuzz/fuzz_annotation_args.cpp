// Fuzzes the annotation-argument parser of the header frontend
// (TC_FIELD(...) / TC_TENSORCLASS(...) argument strings). The parser never
// throws; a parse either yields arguments that print back to text parsing to
// the same arguments, or an error whose offset lies inside the text.
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <string_view>

#include "tcgen/annotation_args.h"

namespace {

void check(bool ok, const char* what) {
  if (!ok) {
    std::fprintf(stderr, "fuzz_annotation_args: invariant violated: %s\n", what);
    std::abort();
  }
}

std::string print(const std::vector<tcgen::AnnotationArg>& args) {
  std::string out;
  for (const auto& a : args) {
    if (!out.empty()) out += ", ";
    out += a.key;
    switch (a.value) {
      case tcgen::AnnotationArg::Value::Flag: break;
      case tcgen::AnnotationArg::Value::Integer: out += "=" + std::to_string(a.int_value); break;
      case tcgen::AnnotationArg::Value::String:
        out += "=\"";
        for (char c : a.string_value) {
          if (c == '"' || c == '\\') out += '\\', out += c;
          else if (c == '\n') out += "\\n";
          else if (c == '\t') out += "\\t";
          else out += c;
        }
        out += '"';
        break;
    }
  }
  return out;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  const auto result = tcgen::parse_annotation_args(text);
  if (const auto* err = std::get_if<tcgen::AnnotationParseError>(&result)) {
    check(err->offset <= size, "error offset inside the text");
    check(!err->message.empty(), "error has a message");
    return 0;
  }
  const auto& args = std::get<std::vector<tcgen::AnnotationArg>>(result);
  for (const auto& a : args) check(!a.key.empty(), "argument keys are not empty");
  const std::string printed = print(args);
  const auto again = tcgen::parse_annotation_args(printed);
  const auto* args2 = std::get_if<std::vector<tcgen::AnnotationArg>>(&again);
  check(args2 != nullptr, "printed arguments parse again");
  check(args2->size() == args.size(), "same argument count after a round trip");
  for (std::size_t i = 0; i < args.size(); ++i) {
    const auto& a = args[i];
    const auto& b = (*args2)[i];
    check(a.key == b.key && a.value == b.value && a.string_value == b.string_value && a.int_value == b.int_value,
          "same arguments after a round trip");
  }
  return 0;
}
