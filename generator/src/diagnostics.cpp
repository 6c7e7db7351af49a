#include "tcgen/diagnostics.h"

#include <fmt/format.h>

namespace tcgen {

std::string Diagnostic::str() const {
  const char* sev = severity == Severity::Error ? "error" : "note";
  if (loc.file.empty()) return fmt::format("{}: {}", sev, message);
  if (loc.line <= 0) return fmt::format("{}: {}: {}", loc.file, sev, message);
  return fmt::format("{}:{}:{}: {}: {}", loc.file, loc.line, loc.col, sev, message);
}

void Diagnostics::error(const SourceLoc& loc, std::string message) {
  diags_.push_back({loc, Severity::Error, std::move(message)});
}

void Diagnostics::note(const SourceLoc& loc, std::string message) {
  diags_.push_back({loc, Severity::Note, std::move(message)});
}

bool Diagnostics::has_errors() const {
  for (const auto& d : diags_)
    if (d.severity == Severity::Error) return true;
  return false;
}

void Diagnostics::append(const Diagnostics& other) {
  diags_.insert(diags_.end(), other.diags_.begin(), other.diags_.end());
}

void Diagnostics::throw_if_errors() const {
  if (has_errors()) throw Error(diags_);
}

static std::string first_message(const std::vector<Diagnostic>& diags) {
  return diags.empty() ? std::string("tensorclass-gen error") : diags.front().str();
}

Error::Error(std::vector<Diagnostic> diags)
    : std::runtime_error(first_message(diags)), diags_(std::move(diags)) {}

Error::Error(const SourceLoc& loc, std::string message)
    : Error(std::vector<Diagnostic>{{loc, Severity::Error, std::move(message)}}) {}

}  // namespace tcgen
