#include "tcgen/driver.h"

#include <fmt/format.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <optional>
#include <set>

#include <sys/stat.h>
#include <unistd.h>

#include "tcgen/files.h"
#include "tcgen/python_emitter.h"
#include "tcgen/validate.h"
#include "tcgen/yaml_frontend.h"

namespace fs = std::filesystem;

namespace tcgen {
namespace {

enum class InputKind { Yaml, Header, Unknown };

InputKind kind_of(const std::string& file) {
  const std::string ext = fs::path(file).extension().string();
  if (ext == ".yaml" || ext == ".yml") return InputKind::Yaml;
  if (ext == ".h" || ext == ".hpp" || ext == ".hh" || ext == ".hxx") return InputKind::Header;
  return InputKind::Unknown;
}

// Real schemas are a few KB; the YAML parser's memory grows with the file
// (yaml_frontend.cpp bounds the nodes).
constexpr std::uintmax_t kMaxSchemaBytes = 4u << 20;

// Reads `path` into `out`; on failure returns why.
std::optional<std::string> read_schema_text(const std::string& path, std::string& out) {
  return read_regular_file(path, kMaxSchemaBytes, "a schema file", out);
}

bool read_text(const std::string& path, std::string& out) { return !read_schema_text(path, out); }

// Imports nest at most this deep (a chain of imports is read recursively).
constexpr int kMaxImportDepth = 64;

// Loads YAML schemas with their imports (depth first), validating each.
class YamlLoader {
 public:
  explicit YamlLoader(Diagnostics& diags) : diags_(diags) {}

  // Returns the loaded schema; its imports' classes are added to `externals`.
  Schema load(const std::string& file, const SourceLoc& imported_at, ExternalClasses& visible,
              std::vector<std::string>& deps, int depth = 0) {
    std::string text;
    const auto unreadable = depth > kMaxImportDepth ? std::optional<std::string>(fmt::format(
                                                          "imports nest deeper than {} schemas", kMaxImportDepth))
                                                    : read_schema_text(file, text);
    if (unreadable) {
      if (imported_at.file.empty())
        diags_.error(SourceLoc{file, 0, 0}, fmt::format("cannot read schema file: {}", *unreadable));
      else
        diags_.error(imported_at, fmt::format("cannot read imported schema '{}': {}", file, *unreadable));
      Schema s;
      s.file = file;
      return s;
    }
    deps.push_back(file);
    Schema s = parse_yaml_schema(file, text, diags_);
    const std::string canon = fs::weakly_canonical(file).string();
    active_.insert(canon);
    ExternalClasses externals;
    for (const Import& imp : s.imports) {
      const std::string path = (fs::path(file).parent_path() / imp.path).lexically_normal().string();
      const std::string ican = fs::weakly_canonical(path).string();
      if (active_.count(ican)) {
        diags_.error(imp.loc, fmt::format("import cycle: '{}' imports itself (directly or indirectly)", imp.path));
        continue;
      }
      if (auto done = loaded_.find(ican); done != loaded_.end()) {
        for (const auto& [n, e] : done->second) externals.emplace(n, e);
        continue;
      }
      ExternalClasses nested;  // classes of the import's imports are not re-exported
      Schema imported = load(path, imp.loc, nested, deps, depth + 1);
      ExternalClasses mine;
      for (const Class& c : imported.classes)
        mine.emplace(c.name,
                     ExternalClass{c.name, c.cpp_name, c.loc, python_module_of(imported), imported.python_form});
      loaded_[ican] = mine;
      for (const auto& [n, e] : mine) externals.emplace(n, e);
    }
    active_.erase(canon);
    validate(s, externals, diags_);
    visible.insert(externals.begin(), externals.end());
    return s;
  }

 private:
  Diagnostics& diags_;
  std::set<std::string> active_;
  std::map<std::string, ExternalClasses> loaded_;
};

}  // namespace

LoadedSchema load_schema(const std::string& file, const HeaderOptions& header_options) {
  Diagnostics diags;
  LoadedSchema out;
  switch (kind_of(file)) {
    case InputKind::Yaml: {
      YamlLoader loader(diags);
      ExternalClasses visible;
      out.schema = loader.load(file, SourceLoc{}, visible, out.dependencies);
      break;
    }
    case InputKind::Header: {
      ExternalClasses externals;
      std::string text;  // clang reads it again; this checks it is a regular, readable file
      if (const auto unreadable = read_schema_text(file, text)) {
        diags.error(SourceLoc{file, 0, 0}, fmt::format("cannot read schema file: {}", *unreadable));
        break;
      }
      out.schema = parse_header_schema(file, header_options, diags, externals, out.dependencies);
      if (!diags.has_errors()) validate(out.schema, externals, diags);
      break;
    }
    case InputKind::Unknown:
      diags.error(SourceLoc{file, 0, 0},
                  "unknown schema file type; expected .yaml/.yml (YAML schema) or .h/.hpp/.hh/.hxx (annotated header)");
      break;
  }
  diags.throw_if_errors();
  return out;
}

std::vector<GeneratedFile> generate(const RunOptions& options, std::vector<std::string>* dependencies,
                                    std::vector<Schema>* schemas) {
  std::vector<GeneratedFile> files;
  std::vector<Diagnostic> all;
  std::set<std::string> outputs;
  for (const std::string& input : options.inputs) {
    try {
      LoadedSchema loaded = load_schema(input, options.header);
      std::vector<GeneratedFile> generated;
      if (options.language == Language::Python) {
        for (auto& module : emit_python(loaded.schema, options.emit))
          generated.push_back({(fs::path(options.out_dir) / module.path).string(), std::move(module.text)});
      } else {
        generated.push_back(
            {(fs::path(options.out_dir) / output_name(input)).string(), emit_header(loaded.schema, options.emit)});
        generated.push_back({(fs::path(options.out_dir) / source_output_name(input)).string(),
                             emit_source(loaded.schema, options.emit)});
      }
      for (auto& gf : generated) {
        if (!outputs.insert(gf.path).second) {
          all.push_back({SourceLoc{input, 0, 0}, Severity::Error,
                         fmt::format("two inputs would both generate '{}'", gf.path)});
          continue;
        }
        files.push_back(std::move(gf));
      }
      if (dependencies)
        for (auto& d : loaded.dependencies)
          if (std::find(dependencies->begin(), dependencies->end(), d) == dependencies->end())
            dependencies->push_back(d);
      if (schemas) schemas->push_back(std::move(loaded.schema));
    } catch (const Error& e) {
      all.insert(all.end(), e.diagnostics().begin(), e.diagnostics().end());
    }
  }
  if (!all.empty()) throw Error(std::move(all));
  return files;
}

static std::string escape_make(const std::string& path) {
  std::string out;
  for (char c : path) {
    if (c == ' ' || c == '#') out += '\\';
    if (c == '$') out += '$';
    out += c;
  }
  return out;
}

std::string make_depfile(const std::vector<std::string>& targets, const std::vector<std::string>& dependencies) {
  std::string out;
  for (std::size_t i = 0; i < targets.size(); ++i) {
    if (i) out += ' ';
    out += escape_make(targets[i]);
  }
  out += ":";
  for (const auto& d : dependencies) out += " \\\n  " + escape_make(d);
  out += "\n";
  return out;
}

bool write_file_atomically(const std::string& path, const std::string& content) {
  std::string existing;
  if (read_text(path, existing) && existing == content) return false;
  const fs::path target(path);
  if (target.has_parent_path()) fs::create_directories(target.parent_path());
  const auto fail = [&](const std::string& why) {
    return Error(SourceLoc{path, 0, 0}, fmt::format("cannot write output file: {}", why));
  };
  // mkstemp: a new file of our own (O_EXCL), mode 0600 until fchmod below.
  std::string tmp = path + ".tmp.XXXXXX";
  const int fd = ::mkstemp(tmp.data());
  if (fd < 0) throw fail(std::strerror(errno));
  struct stat old {};
  mode_t mode = 0;
  if (::stat(path.c_str(), &old) == 0) {
    mode = old.st_mode & 07777;
  } else {
    mode = ::umask(0);
    ::umask(mode);
    mode = 0666 & ~mode;
  }
  const char* data = content.data();
  std::size_t left = content.size();
  bool ok = ::fchmod(fd, mode) == 0;
  while (ok && left > 0) {
    const ssize_t n = ::write(fd, data, left);
    if (n < 0 && errno == EINTR) continue;
    ok = n > 0;
    if (ok) {
      data += n;
      left -= static_cast<std::size_t>(n);
    }
  }
  const std::string why = ok ? std::string() : std::strerror(errno);
  if (::close(fd) != 0 && ok) ok = false;
  if (!ok) {
    ::unlink(tmp.c_str());
    throw fail(why.empty() ? std::string(std::strerror(errno)) : why);
  }
  std::error_code ec;
  fs::rename(tmp, target, ec);
  if (ec) {
    ::unlink(tmp.c_str());
    throw fail(ec.message());
  }
  return true;
}

}  // namespace tcgen
