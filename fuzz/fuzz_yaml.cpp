// Fuzzes the YAML schema frontend, then validation and emission of whatever
// parses: bad input must end in diagnostics (each located at file:line:col)
// or a tcgen::Error, never a crash or another exception.
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <string>

#include "tcgen/diagnostics.h"
#include "tcgen/emitter.h"
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
  } catch (const tcgen::Error& e) {
    // A located, user-facing error.
    if (std::string(e.what()).empty()) std::abort();
  }
  // Any other exception escapes: libFuzzer reports it as a crash.
  return 0;
}
