// The whole pipeline for one run: load schemas (and imports), validate,
// render everything in memory, then write files atomically.
#pragma once

#include <map>
#include <string>
#include <vector>

#include "tcgen/emitter.h"
#include "tcgen/header_frontend.h"
#include "tcgen/ir.h"

namespace tcgen {

struct LoadedSchema {
  Schema schema;
  std::vector<std::string> dependencies;  // the schema file and all imports
};

// Loads one schema (YAML or header, chosen by extension), loads and validates
// its imports, validates it. Throws Error with all diagnostics on failure.
LoadedSchema load_schema(const std::string& file, const HeaderOptions& header_options);

struct GeneratedFile {
  std::string path;
  std::string content;
};

// What the generator writes: C++ headers, or Python modules.
enum class Language { Cpp, Python };

struct RunOptions {
  std::vector<std::string> inputs;
  Language language = Language::Cpp;
  std::string out_dir;
  HeaderOptions header;
  EmitOptions emit;
  std::string depfile;  // empty: none
};

// Renders every input; throws Error (nothing written) on any problem.
// `dependencies` (optional) receives every file read; `schemas` (optional)
// the validated schemas, in input order.
std::vector<GeneratedFile> generate(const RunOptions& options,
                                    std::vector<std::string>* dependencies = nullptr,
                                    std::vector<Schema>* schemas = nullptr);

// Makefile depfile: "<target>: dep dep ...".
std::string make_depfile(const std::vector<std::string>& targets,
                         const std::vector<std::string>& dependencies);

// Writes `content` to `path` via a temp file + rename unless the file already
// has exactly this content. Returns true when the file was (re)written. The
// temp file is created exclusively (O_EXCL: a planted file or link there is
// never written through); the result keeps an existing file's permissions.
bool write_file_atomically(const std::string& path, const std::string& content);

}  // namespace tcgen
