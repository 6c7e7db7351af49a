// Fuzzes the YAML schema frontend, then validation and emission (C++ header
// and Python module) of whatever parses: bad input must end in diagnostics
// (each located at file:line:col) or a tcgen::Error, never a crash or another
// exception, and no raw control character may reach emitted text (a '\r' in a
// comment ends it for some compilers and lets the schema inject code).
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <string>

#include "tcgen/diagnostics.h"
#include "tcgen/emitter.h"
#include "tcgen/python_emitter.h"
#include "tcgen/validate.h"
#include "tcgen/yaml_frontend.h"

namespace {

void check_located(const tcgen::Diagnostics& diags, const std::string& input) {
  for (const auto& d : diags.all()) {
    if (d.severity != tcgen::Severity::Error) continue;
    if (d.loc.file != "fuzz.yaml" || d.loc.line <= 0 || d.loc.col <= 0 || d.message.empty()) {
      std::fprintf(stderr, "fuzz_yaml: error without file:line:col: '%s'\ninput:\n%s\n", d.str().c_str(),
                   input.c_str());
      std::abort();
    }
  }
}

// Emitted text holds printable characters, newlines, tabs and UTF-8 bytes
// only (a tab cannot end a comment or a literal in either language).
void check_no_control_chars(const std::string& out, const char* what, const std::string& input) {
  for (const char c : out) {
    const auto byte = static_cast<unsigned char>(c);
    if ((byte < 0x20 && byte != '\n' && byte != '\t') || byte == 0x7f) {
      std::fprintf(stderr, "fuzz_yaml: control character 0x%02x in the %s\ninput:\n%s\n", byte, what, input.c_str());
      std::abort();
    }
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string text(reinterpret_cast<const char*>(data), size);
  try {
    tcgen::Diagnostics diags;
    tcgen::Schema schema = tcgen::parse_yaml_schema("fuzz.yaml", text, diags);
    check_located(diags, text);
    if (diags.has_errors()) return 0;
    tcgen::validate(schema, {}, diags);
    check_located(diags, text);
    if (diags.has_errors()) return 0;
    const std::string header = tcgen::emit_header(schema, {});
    if (header.empty()) std::abort();
    check_no_control_chars(header, "C++ header", text);
    // Python rejects some names C++ takes (keywords), TypedTensorDict more
    // (names of its attributes): a located tcgen::Error, as below.
    for (const auto form : {tcgen::PythonForm::Tensorclass, tcgen::PythonForm::TypedTensorDict}) {
      tcgen::EmitOptions options;
      options.python_form = form;
      try {
        for (const auto& module : tcgen::emit_python(schema, options))
          check_no_control_chars(module.text, "Python module", text);
      } catch (const tcgen::Error& e) {
        if (std::string(e.what()).empty()) std::abort();
      }
    }
  } catch (const tcgen::Error& e) {
    // A located, user-facing error.
    if (std::string(e.what()).empty()) std::abort();
  }
  // Any other exception escapes: libFuzzer reports it as a crash.
  return 0;
}
