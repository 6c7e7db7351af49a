// Compiler-style diagnostics: `file:line:col: error: message`.
#pragma once

#include <stdexcept>
#include <string>
#include <vector>

namespace tcgen {

// A position in a schema file; line and column are 1-based, 0 means unknown.
struct SourceLoc {
  std::string file;
  int line = 0;
  int col = 0;
};

enum class Severity { Error, Note };

struct Diagnostic {
  SourceLoc loc;
  Severity severity = Severity::Error;
  std::string message;

  // "file:line:col: error: message" (location parts omitted when unknown).
  std::string str() const;
};

// Collects diagnostics; frontends and validation keep going after an error so
// that one run reports as many problems as possible.
class Diagnostics {
 public:
  void error(const SourceLoc& loc, std::string message);
  void note(const SourceLoc& loc, std::string message);
  bool has_errors() const;
  const std::vector<Diagnostic>& all() const { return diags_; }
  void append(const Diagnostics& other);
  // Throws Error carrying every diagnostic if any error was recorded.
  void throw_if_errors() const;

 private:
  std::vector<Diagnostic> diags_;
};

// Thrown when generation cannot go on; carries the diagnostics to print.
class Error : public std::runtime_error {
 public:
  explicit Error(std::vector<Diagnostic> diags);
  Error(const SourceLoc& loc, std::string message);
  const std::vector<Diagnostic>& diagnostics() const { return diags_; }

 private:
  std::vector<Diagnostic> diags_;
};

}  // namespace tcgen
