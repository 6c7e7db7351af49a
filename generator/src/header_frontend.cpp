#include "tcgen/header_frontend.h"

#include <clang-c/Index.h>
#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <cstdlib>
#include <atomic>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <functional>
#include <memory>
#include <set>

#include <dlfcn.h>
#include <unistd.h>

#include "tcgen/annotation_args.h"
#include "tcgen/embedded.h"
#include "tcgen/include_scan.h"
#include "tcgen/names.h"

namespace fs = std::filesystem;

namespace tcgen {
namespace {

// libclang's C API, called through one table (lc()): filled with the linked
// library's functions, or, with TCGEN_LIBCLANG_DLOPEN (the Python wheel's
// build), with those of a libclang loaded the first time a header is parsed,
// so that the YAML front end needs none (see load_libclang()). The code is
// compiled against one clang-c/Index.h and may run with a newer libclang:
// every enum value it compares is the same in both, except
// CXCursor_TranslationUnit (300 before clang 17, 350 since), which is asked
// of the library (clang_isTranslationUnit).
#define TCGEN_LIBCLANG_FUNCTIONS(X) \
  X(clang_Cursor_getRawCommentText) \
  X(clang_Cursor_isInlineNamespace) \
  X(clang_Cursor_isNull) \
  X(clang_Location_isFromMainFile) \
  X(clang_Location_isInSystemHeader) \
  X(clang_Type_getNumTemplateArguments) \
  X(clang_Type_getTemplateArgumentAsType) \
  X(clang_createIndex) \
  X(clang_disposeDiagnostic) \
  X(clang_disposeIndex) \
  X(clang_disposeString) \
  X(clang_disposeTokens) \
  X(clang_disposeTranslationUnit) \
  X(clang_equalCursors) \
  X(clang_getCString) \
  X(clang_getCXXAccessSpecifier) \
  X(clang_getCanonicalCursor) \
  X(clang_getCanonicalType) \
  X(clang_getCursorDefinition) \
  X(clang_getCursorExtent) \
  X(clang_getCursorKind) \
  X(clang_getCursorLocation) \
  X(clang_getCursorSemanticParent) \
  X(clang_getCursorSpelling) \
  X(clang_getCursorType) \
  X(clang_getDiagnostic) \
  X(clang_getDiagnosticLocation) \
  X(clang_getDiagnosticSeverity) \
  X(clang_getDiagnosticSpelling) \
  X(clang_getExpansionLocation) \
  X(clang_getFileName) \
  X(clang_getInclusions) \
  X(clang_getLocationForOffset) \
  X(clang_getNumDiagnostics) \
  X(clang_getSpecializedCursorTemplate) \
  X(clang_getTokenKind) \
  X(clang_getTokenLocation) \
  X(clang_getTokenSpelling) \
  X(clang_getTranslationUnitCursor) \
  X(clang_getTypeDeclaration) \
  X(clang_getTypeSpelling) \
  X(clang_isTranslationUnit) \
  X(clang_isCursorDefinition) \
  X(clang_parseTranslationUnit2) \
  X(clang_tokenize) \
  X(clang_visitChildren)

struct LibClang {
#define TCGEN_LIBCLANG_MEMBER(name) decltype(&::name) name = nullptr;
  TCGEN_LIBCLANG_FUNCTIONS(TCGEN_LIBCLANG_MEMBER)
#undef TCGEN_LIBCLANG_MEMBER
};

LibClang g_libclang;

// The table, once load_libclang() succeeded.
const LibClang& lc() { return g_libclang; }

#if TCGEN_LIBCLANG_DLOPEN
// Where the header front end looks for libclang, first found first:
// $TENSORCLASS_LIBCLANG; PyPI's libclang wheel beside the tensorclass package
// (site-packages/clang/native/libclang.so, for <site-packages>/tensorclass/bin/
// tensorclass-gen); the libclang the generator was built against; the
// system's, by name.
std::vector<std::string> libclang_candidates() {
  if (const char* forced = std::getenv("TENSORCLASS_LIBCLANG"); forced && *forced) return {forced};
  std::vector<std::string> out;
  std::error_code ec;
  const fs::path exe = fs::read_symlink("/proc/self/exe", ec);
  if (!ec) out.push_back((exe.parent_path() / ".." / ".." / "clang" / "native" / "libclang.so").lexically_normal());
  out.push_back(TCGEN_LIBCLANG_PATH);
  for (const char* name : {"libclang.so.1", "libclang.so", "libclang-14.so.1", "libclang-14.so.13"}) out.push_back(name);
  return out;
}
#endif

// Fills the table; an empty string when it is usable, else why not.
std::string load_libclang() {
  static const std::string why_not = []() -> std::string {
#if TCGEN_LIBCLANG_DLOPEN
    std::string tried;
    for (const auto& candidate : libclang_candidates()) {
      void* handle = dlopen(candidate.c_str(), RTLD_NOW | RTLD_LOCAL);
      if (!handle) {
        tried += fmt::format("\n  {}: {}", candidate, dlerror());
        continue;
      }
      std::string missing;
#define TCGEN_LIBCLANG_LOAD(name)                                                     \
  g_libclang.name = reinterpret_cast<decltype(&::name)>(dlsym(handle, #name)); \
  if (!g_libclang.name) missing += " " #name;
      TCGEN_LIBCLANG_FUNCTIONS(TCGEN_LIBCLANG_LOAD)
#undef TCGEN_LIBCLANG_LOAD
      if (missing.empty()) return "";
      tried += fmt::format("\n  {}: lacks{}", candidate, missing);
      dlclose(handle);
    }
    return "the header front end needs libclang, and none could be loaded (pip install libclang, "
           "or name one with TENSORCLASS_LIBCLANG=<path>); tried:" + tried;
#else
#define TCGEN_LIBCLANG_LINKED(name) g_libclang.name = &::name;
    TCGEN_LIBCLANG_FUNCTIONS(TCGEN_LIBCLANG_LINKED)
#undef TCGEN_LIBCLANG_LINKED
    return "";
#endif
  }();
  return why_not;
}

constexpr std::string_view kClassPrefix = "tc:class:";
constexpr std::string_view kFieldPrefix = "tc:field:";

std::string take(CXString s) {
  const char* c = lc().clang_getCString(s);
  std::string out = c ? c : "";
  lc().clang_disposeString(s);
  return out;
}

// The embedded stand-in headers, written to a private temporary directory for
// the lifetime of one parse.
class StubDir {
 public:
  StubDir() {
    static std::atomic<unsigned> counter{0};
    const auto stamp = std::chrono::steady_clock::now().time_since_epoch().count();
    dir_ = fs::temp_directory_path() /
           fmt::format("tcgen-stubs-{}-{}-{}", static_cast<long>(::getpid()), stamp, counter++);
    fs::create_directories(dir_);
    for (const auto& f : embedded::stub_headers()) {
      const fs::path p = dir_ / std::string(f.path);
      fs::create_directories(p.parent_path());
      std::ofstream out(p, std::ios::binary);
      out << f.text;
      if (!out) throw Error(SourceLoc{p.string(), 0, 0}, "cannot write the generator's stand-in header");
    }
  }
  ~StubDir() {
    std::error_code ec;
    fs::remove_all(dir_, ec);
  }
  StubDir(const StubDir&) = delete;
  StubDir& operator=(const StubDir&) = delete;
  const fs::path& path() const { return dir_; }

 private:
  fs::path dir_;
};

struct IndexDeleter {
  void operator()(void* p) const { lc().clang_disposeIndex(p); }
};
struct TuDeleter {
  void operator()(CXTranslationUnitImpl* p) const { lc().clang_disposeTranslationUnit(p); }
};

SourceLoc location_of(CXSourceLocation l) {
  CXFile file = nullptr;
  unsigned line = 0, col = 0, offset = 0;
  lc().clang_getExpansionLocation(l, &file, &line, &col, &offset);
  SourceLoc out;
  if (file) out.file = take(lc().clang_getFileName(file));
  out.line = static_cast<int>(line);
  out.col = static_cast<int>(col);
  return out;
}

SourceLoc location_of(CXCursor c) { return location_of(lc().clang_getCursorLocation(c)); }

// The `tc:...` annotation attached to a declaration, if any.
std::optional<std::string> annotation(CXCursor decl, std::string_view prefix) {
  struct Data {
    std::string_view prefix;
    std::optional<std::string> found;
  } data{prefix, std::nullopt};
  lc().clang_visitChildren(
      decl,
      [](CXCursor c, CXCursor, CXClientData d) {
        auto* data = static_cast<Data*>(d);
        if (lc().clang_getCursorKind(c) == CXCursor_AnnotateAttr) {
          std::string s = take(lc().clang_getCursorSpelling(c));
          if (s.rfind(data->prefix, 0) == 0) {
            data->found = s.substr(data->prefix.size());
            return CXChildVisit_Break;
          }
        }
        return CXChildVisit_Continue;
      },
      &data);
  return data.found;
}

// "a::b::Name", skipping inline namespaces (std::__cxx11).
std::string qualified_name(CXCursor c) {
  std::vector<std::string> parts;
  for (CXCursor p = c; !lc().clang_Cursor_isNull(p) && !lc().clang_isTranslationUnit(lc().clang_getCursorKind(p));
       p = lc().clang_getCursorSemanticParent(p)) {
    if (lc().clang_getCursorKind(p) == CXCursor_Namespace && lc().clang_Cursor_isInlineNamespace(p)) continue;
    parts.push_back(take(lc().clang_getCursorSpelling(p)));
  }
  std::string out;
  for (auto it = parts.rbegin(); it != parts.rend(); ++it) out += (out.empty() ? "" : "::") + *it;
  return out;
}

// The namespace a class lives in ("rl", "a::b", "" for the global one);
// nullopt when it is nested in something that is not a namespace.
std::optional<std::string> enclosing_namespace(CXCursor c) {
  std::vector<std::string> parts;
  for (CXCursor p = lc().clang_getCursorSemanticParent(c);
       !lc().clang_Cursor_isNull(p) && !lc().clang_isTranslationUnit(lc().clang_getCursorKind(p));
       p = lc().clang_getCursorSemanticParent(p)) {
    if (lc().clang_getCursorKind(p) != CXCursor_Namespace) return std::nullopt;
    std::string name = take(lc().clang_getCursorSpelling(p));
    if (name.empty()) return std::nullopt;  // anonymous namespace
    if (!lc().clang_Cursor_isInlineNamespace(p)) parts.push_back(name);
  }
  std::string out;
  for (auto it = parts.rbegin(); it != parts.rend(); ++it) out += (out.empty() ? "" : "::") + *it;
  return out;
}

// The Python module of a tensorclass declared in another header: its own
// TC_TENSORCLASS(python_module = ...) if it says one, else its namespace with
// "::" -> "." (python_module_of). That header's other classes are not read, so
// a python_module must be repeated on every class that others nest.
std::optional<std::string> external_class_arg(CXCursor decl, std::string_view key) {
  if (auto args = annotation(decl, kClassPrefix)) {
    const AnnotationParseResult parsed = parse_annotation_args(*args);
    if (const auto* list = std::get_if<std::vector<AnnotationArg>>(&parsed))
      for (const auto& a : *list)
        if (a.key == key && a.value == AnnotationArg::Value::String) return a.string_value;
  }
  return std::nullopt;
}

std::string external_python_module(CXCursor decl) {
  if (auto module = external_class_arg(decl, "python_module")) return *module;
  Schema ns_only;
  ns_only.ns = enclosing_namespace(decl).value_or("");
  return python_module_of(ns_only);
}

// Likewise its TC_TENSORCLASS(python_form = ...), if it says one.
std::optional<PythonForm> external_python_form(CXCursor decl) {
  if (auto form = external_class_arg(decl, "python_form")) return parse_python_form(*form);
  return std::nullopt;
}

// The tensordict::TensorClass<...> base of a class, found through its bases
// (the runtime accepts any path: is_base_of); `is_public` when every step of
// that path is public, as TensorClass's API must be reachable.
struct CrtpBase {
  std::string spelling;  // "tensordict::TensorClass<rl::Agent>"
  CXCursor self;         // the class its argument names
  bool is_public;
};

// A class template's parameters (by name) bound to the arguments of the
// specialization being looked through.
using Bindings = std::vector<std::pair<std::string, CXType>>;

CXType bound(CXType t, const Bindings& bindings) {
  const std::string name = take(lc().clang_getTypeSpelling(t));
  for (const auto& [param, arg] : bindings)
    if (param == name) return arg;
  return t;
}

// `cls`: a class, or a class template read with `bindings`.
std::optional<CrtpBase> tensorclass_base(CXCursor cls, const Bindings& bindings = {}) {
  if (lc().clang_Cursor_isNull(cls)) return std::nullopt;  // a base with no definition seen
  struct Data {
    const Bindings* bindings;
    std::optional<CrtpBase> found;
  } data{&bindings, std::nullopt};
  lc().clang_visitChildren(
      cls,
      [](CXCursor c, CXCursor, CXClientData d) {
        auto* data = static_cast<Data*>(d);
        if (lc().clang_getCursorKind(c) != CXCursor_CXXBaseSpecifier) return CXChildVisit_Continue;
        const CXType type = lc().clang_getCursorType(c);
        const CXCursor decl = lc().clang_getTypeDeclaration(lc().clang_getCanonicalType(type));
        const bool is_public = lc().clang_getCXXAccessSpecifier(c) == CX_CXXPublic;
        auto arg = [&](int i) { return bound(lc().clang_Type_getTemplateArgumentAsType(type, i), *data->bindings); };
        std::optional<CrtpBase> inner;
        if (qualified_name(decl) == "tensordict::TensorClass") {
          const CXType self = lc().clang_getCanonicalType(arg(0));
          inner = CrtpBase{"tensordict::TensorClass<" + take(lc().clang_getTypeSpelling(self)) + ">",
                           lc().clang_getTypeDeclaration(self), true};
        } else if (CXCursor tmpl = lc().clang_getCursorKind(decl) == CXCursor_ClassTemplate
                                       ? decl
                                       : lc().clang_getSpecializedCursorTemplate(decl);
                   !lc().clang_Cursor_isNull(tmpl)) {
          // libclang shows no bases for an instantiation (Mixin<Obs>): read
          // the template's, its parameters bound to the arguments.
          Bindings inner_bindings;
          lc().clang_visitChildren(
              tmpl,
              [](CXCursor p, CXCursor, CXClientData d) {
                const auto kind = lc().clang_getCursorKind(p);
                if (kind == CXCursor_TemplateTypeParameter || kind == CXCursor_NonTypeTemplateParameter ||
                    kind == CXCursor_TemplateTemplateParameter)
                  static_cast<Bindings*>(d)->emplace_back(take(lc().clang_getCursorSpelling(p)), CXType{});
                return CXChildVisit_Continue;
              },
              &inner_bindings);
          for (std::size_t i = 0; i < inner_bindings.size(); ++i) inner_bindings[i].second = arg(static_cast<int>(i));
          inner = tensorclass_base(tmpl, inner_bindings);
        } else {
          inner = tensorclass_base(lc().clang_getCursorDefinition(decl));
        }
        if (inner) data->found = CrtpBase{inner->spelling, inner->self, is_public && inner->is_public};
        return data->found ? CXChildVisit_Break : CXChildVisit_Continue;
      },
      &data);
  return data.found;
}

std::string trim(std::string_view s) {
  std::size_t b = 0, e = s.size();
  while (b < e && (s[b] == ' ' || s[b] == '\t' || s[b] == '\n' || s[b] == '\r')) ++b;
  while (e > b && (s[e - 1] == ' ' || s[e - 1] == '\t' || s[e - 1] == '\n' || s[e - 1] == '\r')) --e;
  return std::string(s.substr(b, e - b));
}

std::vector<std::string> split_commas(std::string_view s) {
  std::vector<std::string> out;
  if (trim(s).empty()) return out;
  std::size_t start = 0;
  while (true) {
    std::size_t comma = s.find(',', start);
    out.push_back(trim(s.substr(start, comma == std::string_view::npos ? std::string_view::npos : comma - start)));
    if (comma == std::string_view::npos) break;
    start = comma + 1;
  }
  return out;
}

// The text of a doc comment without its comment markers.
std::string doc_comment(CXCursor c) {
  const std::string raw = take(lc().clang_Cursor_getRawCommentText(c));
  if (raw.empty()) return "";
  std::vector<std::string> lines;
  std::size_t start = 0;
  while (start <= raw.size()) {
    std::size_t nl = raw.find('\n', start);
    std::string line = trim(std::string_view(raw).substr(start, nl == std::string::npos ? std::string::npos : nl - start));
    for (std::string_view marker : {"///<", "//!<", "///", "//!", "/**<", "/*!<", "/**", "/*!", "*/", "*"}) {
      if (line.rfind(marker, 0) == 0) {
        line = line.substr(marker.size());
        break;
      }
    }
    if (line.size() >= 2 && line.compare(line.size() - 2, 2, "*/") == 0) line.resize(line.size() - 2);
    lines.push_back(trim(line));
    if (nl == std::string::npos) break;
    start = nl + 1;
  }
  while (!lines.empty() && lines.front().empty()) lines.erase(lines.begin());
  while (!lines.empty() && lines.back().empty()) lines.pop_back();
  std::string out;
  for (std::size_t i = 0; i < lines.size(); ++i) out += (i ? "\n" : "") + lines[i];
  return out;
}

// Unescapes a plain C++ string literal token; nullopt for prefixed or raw ones.
std::optional<std::string> string_literal_value(const std::string& tok) {
  if (tok.size() < 2 || tok.front() != '"' || tok.back() != '"') return std::nullopt;
  std::string out;
  for (std::size_t i = 1; i + 1 < tok.size(); ++i) {
    char c = tok[i];
    if (c != '\\') {
      out += c;
      continue;
    }
    if (i + 2 >= tok.size()) return std::nullopt;
    char e = tok[++i];
    switch (e) {
      case '"': out += '"'; break;
      case '\\': out += '\\'; break;
      case '\'': out += '\''; break;
      case 'n': out += '\n'; break;
      case 't': out += '\t'; break;
      case 'r': out += '\r'; break;
      default: return std::nullopt;
    }
  }
  return out;
}

class HeaderReader {
 public:
  HeaderReader(CXTranslationUnit tu, Diagnostics& diags, ExternalClasses& externals, Schema& schema)
      : tu_(tu), diags_(diags), externals_(externals), schema_(schema) {}

  void run() {
    visit_scope(lc().clang_getTranslationUnitCursor(tu_));
  }

 private:
  void visit_scope(CXCursor scope) {
    lc().clang_visitChildren(
        scope,
        [](CXCursor c, CXCursor, CXClientData d) {
          auto* self = static_cast<HeaderReader*>(d);
          if (!lc().clang_Location_isFromMainFile(lc().clang_getCursorLocation(c))) return CXChildVisit_Continue;
          switch (lc().clang_getCursorKind(c)) {
            case CXCursor_Namespace:
            case CXCursor_LinkageSpec:
              return CXChildVisit_Recurse;
            case CXCursor_StructDecl:
            case CXCursor_ClassDecl:
              if (lc().clang_isCursorDefinition(c)) self->record(c);
              return CXChildVisit_Continue;
            default:
              return CXChildVisit_Continue;
          }
        },
        this);
  }

  void record(CXCursor c) {
    const auto args = annotation(c, kClassPrefix);
    const std::string name = take(lc().clang_getCursorSpelling(c));
    if (!args) {
      check_stray_field_annotations(c, name);
      visit_scope(c);  // nested structs
      return;
    }
    Class cls;
    cls.name = name;
    cls.loc = location_of(c);
    cls.batch_loc = cls.loc;
    const auto ns = enclosing_namespace(c);
    if (!ns) {
      diags_.error(cls.loc, fmt::format("tensorclass '{}' must be declared at namespace scope (not inside a class or "
                                        "an anonymous namespace)",
                                        name));
      return;
    }
    if (!have_ns_) {
      schema_.ns = *ns;
      schema_.ns_loc = cls.loc;
      have_ns_ = true;
    } else if (*ns != schema_.ns) {
      diags_.error(cls.loc, fmt::format("all tensorclasses of a header must be in one namespace: '{}' is in '{}', "
                                        "but earlier ones are in '{}'",
                                        name, *ns, schema_.ns));
    }
    check_crtp_base(c, name, cls.loc);
    cls.doc = doc_comment(c);
    for (const auto& a :
         parse_args(*args, "TC_TENSORCLASS", cls.loc, {"batch", "doc", "python_module", "python_form"})) {
      if (a.key == "batch") {
        if (expect_string(a, "TC_TENSORCLASS", cls.loc)) cls.batch_names = split_commas(a.string_value);
      } else if (a.key == "doc") {
        if (expect_string(a, "TC_TENSORCLASS", cls.loc)) cls.doc = a.string_value;
      } else if (a.key == "python_module") {
        if (!expect_string(a, "TC_TENSORCLASS", cls.loc)) continue;
        if (schema_.python_module && *schema_.python_module != a.string_value)
          diags_.error(cls.loc, fmt::format("conflicting python_module '{}' (an earlier class says '{}')",
                                            a.string_value, *schema_.python_module));
        else
          schema_.python_module = a.string_value;
      } else if (a.key == "python_form") {
        if (!expect_string(a, "TC_TENSORCLASS", cls.loc)) continue;
        const auto form = parse_python_form(a.string_value);
        if (!form)
          diags_.error(cls.loc, unknown_python_form(a.string_value));
        else if (schema_.python_form && *schema_.python_form != *form)
          diags_.error(cls.loc, fmt::format("conflicting python_form '{}' (an earlier class says '{}')",
                                            a.string_value, to_string(*schema_.python_form)));
        else
          schema_.python_form = form;
      }
    }
    struct Data {
      HeaderReader* self;
      Class* cls;
    } data{this, &cls};
    lc().clang_visitChildren(
        c,
        [](CXCursor f, CXCursor, CXClientData d) {
          auto* data = static_cast<Data*>(d);
          if (lc().clang_getCursorKind(f) == CXCursor_FieldDecl) data->self->field(*data->cls, f);
          return CXChildVisit_Continue;
        },
        &data);
    schema_.classes.push_back(std::move(cls));
  }

  // The generated FieldTable<T> is only half of a tensorclass: the behaviour
  // comes from deriving from TensorClass<T>, and without it the output
  // compiles but the class has none of it.
  void check_crtp_base(CXCursor c, const std::string& name, const SourceLoc& loc) {
    const std::string expected = fmt::format("tensordict::TensorClass<{}>", name);
    const auto base = tensorclass_base(c);
    if (!base) {
      diags_.error(loc, fmt::format("tensorclass '{}' must derive from {}: struct TC_TENSORCLASS(...) {} : {} {{ ... }}",
                                    name, expected, name, expected));
      return;
    }
    if (!lc().clang_equalCursors(lc().clang_getCanonicalCursor(base->self), lc().clang_getCanonicalCursor(c))) {
      diags_.error(loc, fmt::format("tensorclass '{}' derives from {}; expected {} (the base names the class itself)",
                                    name, base->spelling, expected));
    } else if (!base->is_public) {
      diags_.error(loc, fmt::format("tensorclass '{}' must derive publicly from {} (a class's bases are private "
                                    "unless marked public)",
                                    name, expected));
    }
  }

  void check_stray_field_annotations(CXCursor c, const std::string& name) {
    struct Data {
      HeaderReader* self;
      const std::string* name;
    } data{this, &name};
    lc().clang_visitChildren(
        c,
        [](CXCursor f, CXCursor, CXClientData d) {
          auto* data = static_cast<Data*>(d);
          if (lc().clang_getCursorKind(f) == CXCursor_FieldDecl && annotation(f, kFieldPrefix))
            data->self->diags_.error(location_of(f),
                                     fmt::format("TC_FIELD used in struct '{}', which is not marked TC_TENSORCLASS",
                                                 *data->name));
          return CXChildVisit_Continue;
        },
        &data);
  }

  std::vector<AnnotationArg> parse_args(const std::string& text, std::string_view macro, const SourceLoc& loc,
                                        const std::vector<std::string_view>& keys) {
    auto result = parse_annotation_args(text);
    if (auto* err = std::get_if<AnnotationParseError>(&result)) {
      diags_.error(loc, fmt::format("invalid {} arguments: {} (at offset {} of '{}')", macro, err->message,
                                    err->offset, text));
      return {};
    }
    std::vector<AnnotationArg> out;
    std::set<std::string> seen;
    for (auto& a : std::get<std::vector<AnnotationArg>>(result)) {
      if (std::find(keys.begin(), keys.end(), a.key) == keys.end()) {
        diags_.error(loc, fmt::format("unknown {} argument '{}'; expected one of {}", macro, a.key,
                                      fmt::join(keys, ", ")));
        continue;
      }
      if (!seen.insert(a.key).second) {
        diags_.error(loc, fmt::format("duplicate {} argument '{}'", macro, a.key));
        continue;
      }
      out.push_back(std::move(a));
    }
    return out;
  }

  bool expect_string(const AnnotationArg& a, std::string_view macro, const SourceLoc& loc) {
    if (a.value == AnnotationArg::Value::String) return true;
    diags_.error(loc, fmt::format("{} argument '{}' expects a string, e.g. {} = \"...\"", macro, a.key, a.key));
    return false;
  }

  bool expect_flag(const AnnotationArg& a, std::string_view macro, const SourceLoc& loc) {
    if (a.value == AnnotationArg::Value::Flag) return true;
    diags_.error(loc, fmt::format("{} argument '{}' is a flag and takes no value", macro, a.key));
    return false;
  }

  // Maps a scalar C++ type to a value type.
  static std::optional<ValueType> scalar_value_type(CXType t) {
    t = lc().clang_getCanonicalType(t);
    switch (t.kind) {
      case CXType_Bool: return ValueType::Bool;
      case CXType_Int:
      case CXType_Long:
      case CXType_LongLong: return ValueType::Int;
      case CXType_Float:
      case CXType_Double: return ValueType::Float;
      case CXType_Record: {
        const std::string q = qualified_name(lc().clang_getTypeDeclaration(t));
        if (q == "std::basic_string" && lc().clang_Type_getNumTemplateArguments(t) >= 1 &&
            lc().clang_Type_getTemplateArgumentAsType(t, 0).kind == CXType_Char_S)
          return ValueType::String;
        return std::nullopt;
      }
      default: return std::nullopt;
    }
  }

  // `f` is a field of the TC_TENSORCLASS class `decl` (declared in this
  // header or in another one, which is then included).
  void nested_class(Field& f, CXCursor decl) {
    f.kind = FieldKind::TensorClass;
    f.type_name = take(lc().clang_getCursorSpelling(decl));
    if (!lc().clang_Location_isFromMainFile(lc().clang_getCursorLocation(decl))) {
      externals_.emplace(f.type_name,
                         ExternalClass{f.type_name, qualified_name(decl), location_of(decl),
                                       external_python_module(decl), external_python_form(decl)});
      const std::string inc = fs::path(location_of(decl).file).stem().string() + ".tc.h";
      if (std::find(schema_.extra_includes.begin(), schema_.extra_includes.end(), inc) == schema_.extra_includes.end())
        schema_.extra_includes.push_back(inc);
    }
  }

  void field(Class& cls, CXCursor c) {
    Field f;
    f.name = take(lc().clang_getCursorSpelling(c));
    f.loc = location_of(c);
    f.dtype_loc = f.shape_loc = f.type_loc = f.default_loc = f.loc;
    f.doc = doc_comment(c);
    const CXType type = lc().clang_getCursorType(c);
    const CXType canon = lc().clang_getCanonicalType(type);
    const std::string spelled = take(lc().clang_getTypeSpelling(type));
    bool supported = true;
    if (auto v = scalar_value_type(canon)) {
      f.kind = FieldKind::NonTensor;
      f.value_type = *v;
    } else if (canon.kind == CXType_Record) {
      CXCursor decl = lc().clang_getTypeDeclaration(canon);
      const std::string q = qualified_name(decl);
      if (q == "at::Tensor") {
        f.kind = FieldKind::Tensor;
      } else if (q == "std::vector" && lc().clang_Type_getNumTemplateArguments(canon) >= 1) {
        auto e = scalar_value_type(lc().clang_Type_getTemplateArgumentAsType(canon, 0));
        if (e) {
          f.kind = FieldKind::NonTensor;
          f.value_type = ValueType::List;
          f.element_type = *e;
        } else {
          supported = false;
        }
      } else if (q == "tensordict::NonTensorStack" && lc().clang_Type_getNumTemplateArguments(canon) == 1) {
        // One value per batch element (tensordict's NonTensorStack).
        auto e = scalar_value_type(lc().clang_Type_getTemplateArgumentAsType(canon, 0));
        if (e) {
          f.kind = FieldKind::NonTensorStack;
          f.value_type = *e;
        } else {
          diags_.error(f.loc, fmt::format("field '{}': NonTensorStack holds std::string, int64_t, double or bool "
                                          "values, not '{}'",
                                          f.name, spelled));
          return;
        }
      } else if (annotation(decl, kClassPrefix)) {
        nested_class(f, decl);
      } else if (q == "std::optional" && lc().clang_Type_getNumTemplateArguments(canon) == 1) {
        // An optional nested class: absent is nullopt (tensordict's None).
        const CXType inner = lc().clang_getCanonicalType(lc().clang_Type_getTemplateArgumentAsType(canon, 0));
        const CXCursor inner_decl = lc().clang_getTypeDeclaration(inner);
        if (inner.kind == CXType_Record && annotation(inner_decl, kClassPrefix)) {
          nested_class(f, inner_decl);
          f.optional = true;
        } else {
          supported = false;
        }
      } else {
        supported = false;
      }
    } else {
      supported = false;
    }
    if (!supported) {
      diags_.error(f.loc, fmt::format("unsupported member type '{}' for field '{}'; expected at::Tensor, a "
                                      "TC_TENSORCLASS struct (or std::optional of one), std::string, int64_t, double, bool, "
                                      "std::vector of those or tensordict::NonTensorStack of a scalar",
                                      spelled, f.name));
      return;
    }

    if (auto args = annotation(c, kFieldPrefix)) {
      for (const auto& a : parse_args(*args, "TC_FIELD", f.loc, {"dtype", "shape", "optional", "unbatched", "doc"})) {
        if ((a.key == "dtype" || a.key == "shape" || a.key == "unbatched") && f.kind != FieldKind::Tensor) {
          diags_.error(f.loc, fmt::format("'{}' applies only to tensor fields, but field '{}' has type '{}'", a.key,
                                          f.name, spelled));
          continue;
        }
        if (a.key == "dtype") {
          if (expect_string(a, "TC_FIELD", f.loc)) f.dtype = a.string_value;
        } else if (a.key == "shape") {
          if (!expect_string(a, "TC_FIELD", f.loc)) continue;
          std::vector<DimToken> dims;
          for (auto& t : split_commas(a.string_value)) dims.push_back({t, f.loc});
          f.shape = std::move(dims);
        } else if (a.key == "optional") {
          if (!expect_flag(a, "TC_FIELD", f.loc)) continue;
          if (f.kind == FieldKind::TensorClass && !f.optional) {
            diags_.error(f.loc, fmt::format("field '{}': an optional nested tensorclass is declared as std::optional<{}>",
                                            f.name, f.type_name));
            continue;
          }
          f.optional = true;
        } else if (a.key == "unbatched") {
          if (!expect_flag(a, "TC_FIELD", f.loc)) continue;
          f.unbatched = true;
        } else if (a.key == "doc") {
          if (expect_string(a, "TC_FIELD", f.loc)) f.doc = a.string_value;
        }
      }
    }
    read_initializer(c, f);
    cls.fields.push_back(std::move(f));
  }

  // The default member initializer (`= "x"`, `= 3`, `{1, 2}`), if any.
  void read_initializer(CXCursor c, Field& f) {
    CXSourceRange extent = lc().clang_getCursorExtent(c);
    CXToken* tokens = nullptr;
    unsigned n = 0;
    lc().clang_tokenize(tu_, extent, &tokens, &n);
    std::unique_ptr<CXToken, std::function<void(CXToken*)>> guard(
        tokens, [this, n](CXToken* t) { lc().clang_disposeTokens(tu_, t, n); });
    unsigned name_offset = 0;
    lc().clang_getExpansionLocation(lc().clang_getCursorLocation(c), nullptr, nullptr, nullptr, &name_offset);
    std::vector<std::string> rest;
    bool after_name = false;
    for (unsigned i = 0; i < n; ++i) {
      unsigned off = 0;
      lc().clang_getExpansionLocation(lc().clang_getTokenLocation(tu_, tokens[i]), nullptr, nullptr, nullptr, &off);
      if (!after_name) {
        after_name = off == name_offset && lc().clang_getTokenKind(tokens[i]) == CXToken_Identifier;
        continue;
      }
      rest.push_back(take(lc().clang_getTokenSpelling(tu_, tokens[i])));
    }
    if (!rest.empty() && rest.back() == ";") rest.pop_back();
    if (rest.empty()) return;
    std::size_t i = 0;
    if (rest[i] == "=") ++i;
    auto literal = [&](std::size_t& k, std::string& out) -> bool {
      if (k >= rest.size()) return false;
      std::string sign;
      if (rest[k] == "-" || rest[k] == "+") sign = rest[k++];
      if (k >= rest.size()) return false;
      const std::string& t = rest[k];
      if (sign.empty()) {
        if (auto s = string_literal_value(t)) {
          out = *s;
          ++k;
          return true;
        }
        if (t == "true" || t == "false") {
          out = t;
          ++k;
          return true;
        }
      }
      if (!t.empty() && ((t[0] >= '0' && t[0] <= '9') || t[0] == '.')) {
        out = (sign == "-" ? "-" : "") + t;
        ++k;
        return true;
      }
      return false;
    };
    bool ok = false;
    if (i < rest.size() && rest[i] == "{") {
      ++i;
      std::vector<std::string> items;
      ok = true;
      while (i < rest.size() && rest[i] != "}") {
        std::string item;
        if (!literal(i, item)) {
          ok = false;
          break;
        }
        items.push_back(item);
        if (i < rest.size() && rest[i] == ",") ++i;
      }
      if (ok && i + 1 == rest.size() && rest[i] == "}") {
        if ((f.kind == FieldKind::NonTensor || f.kind == FieldKind::NonTensorStack) && f.value_type != ValueType::List) {
          if (items.size() == 1) f.default_value = items[0];
          // `{}` on a scalar: value-initialised, no declared default.
        } else {
          std::string text = "[";
          for (std::size_t k = 0; k < items.size(); ++k) text += (k ? ", " : "") + items[k];
          f.default_value = text + "]";
          f.default_items = items;
          f.default_is_list = true;
        }
      } else {
        ok = false;
      }
    } else {
      std::string value;
      ok = literal(i, value) && i == rest.size();
      if (ok) f.default_value = value;
    }
    if (!ok)
      diags_.error(f.loc, fmt::format("unsupported default member initializer for field '{}'; use a literal "
                                      "(\"text\", 42, 1.5, true) or a braced list of literals",
                                      f.name));
  }

  CXTranslationUnit tu_;
  Diagnostics& diags_;
  ExternalClasses& externals_;
  Schema& schema_;
  bool have_ns_ = false;
};

}  // namespace

// clang's resource dir (<stddef.h> and the other compiler headers): the copy
// the Python wheel installs beside the executable (<prefix>/bin/tensorclass-gen,
// <prefix>/share/tensorclass/clang), else the one of the libclang it was built with.
static std::string header_resource_dir() {
  std::error_code ec;
  const fs::path exe = fs::read_symlink("/proc/self/exe", ec);
  if (!ec) {
    const fs::path bundled = exe.parent_path().parent_path() / "share" / "tensorclass" / "clang";
    if (fs::exists(bundled / "include" / "stddef.h", ec)) return bundled.string();
  }
  return TCGEN_CLANG_RESOURCE_DIR;
}

Schema parse_header_schema(const std::string& file, const HeaderOptions& options, Diagnostics& diags,
                           ExternalClasses& externals, std::vector<std::string>& dependencies) {
  Schema schema;
  schema.file = file;
  schema.frontend = Frontend::Header;
  schema.extra_includes.push_back(fs::path(file).filename().string());

  if (const std::string why_not = load_libclang(); !why_not.empty()) {
    diags.error(SourceLoc{file, 0, 0}, why_not);
    return schema;
  }

  StubDir stubs;
  // The stand-ins are read too: what they include is searched in the -I
  // directories as well.
  std::vector<std::string> search_dirs{stubs.path().string()};
  search_dirs.insert(search_dirs.end(), options.include_dirs.begin(), options.include_dirs.end());
  if (!check_includes(file, search_dirs, diags)) return schema;

  std::vector<std::string> args = {"-x", "c++", "-std=c++20", "-DTENSORCLASS_GENERATOR=1", "-resource-dir",
                                   header_resource_dir(), "-I", stubs.path().string(),
                                   "-Wno-pragma-once-outside-header"};
  for (const auto& d : options.include_dirs) args.push_back("-I" + d);
  for (const auto& d : options.defines) args.push_back("-D" + d);
  std::vector<const char*> argv;
  for (const auto& a : args) argv.push_back(a.c_str());

  std::unique_ptr<void, IndexDeleter> index(lc().clang_createIndex(0, 0));
  CXTranslationUnit raw_tu = nullptr;
  const CXErrorCode rc = lc().clang_parseTranslationUnit2(
      index.get(), file.c_str(), argv.data(), static_cast<int>(argv.size()), nullptr, 0,
      CXTranslationUnit_SkipFunctionBodies | CXTranslationUnit_Incomplete, &raw_tu);
  if (rc != CXError_Success || !raw_tu) {
    diags.error(SourceLoc{file, 0, 0}, fmt::format("libclang could not parse the header (error code {})",
                                                   static_cast<int>(rc)));
    return schema;
  }
  std::unique_ptr<CXTranslationUnitImpl, TuDeleter> tu(raw_tu);

  // Any error is fatal: clang's recovery would silently turn unknown types into int.
  unsigned errors = 0;
  for (unsigned i = 0, n = lc().clang_getNumDiagnostics(raw_tu); i < n; ++i) {
    CXDiagnostic d = lc().clang_getDiagnostic(raw_tu, i);
    if (lc().clang_getDiagnosticSeverity(d) >= CXDiagnostic_Error) {
      ++errors;
      diags.error(location_of(lc().clang_getDiagnosticLocation(d)), take(lc().clang_getDiagnosticSpelling(d)));
    }
    lc().clang_disposeDiagnostic(d);
  }
  if (errors) {
    diags.error(SourceLoc{file, 0, 0},
                fmt::format("the header does not compile ({} error{} above); tensorclass-gen needs a header that "
                            "compiles",
                            errors, errors == 1 ? "" : "s"));
    return schema;
  }

  // Dependencies: the header and every non-system, non-stand-in file it includes.
  struct DepData {
    CXTranslationUnit tu;
    std::string stub_prefix;
    std::vector<std::string>* deps;
  } dep_data{raw_tu, stubs.path().string(), &dependencies};
  dependencies.push_back(file);
  lc().clang_getInclusions(
      raw_tu,
      [](CXFile included, CXSourceLocation*, unsigned depth, CXClientData d) {
        auto* data = static_cast<DepData*>(d);
        if (depth == 0) return;
        const std::string name = take(lc().clang_getFileName(included));
        if (name.rfind(data->stub_prefix, 0) == 0) return;
        if (lc().clang_Location_isInSystemHeader(lc().clang_getLocationForOffset(data->tu, included, 0))) return;
        if (std::find(data->deps->begin(), data->deps->end(), name) == data->deps->end())
          data->deps->push_back(name);
      },
      &dep_data);

  HeaderReader(raw_tu, diags, externals, schema).run();
  if (schema.classes.empty() && !diags.has_errors())
    diags.error(SourceLoc{file, 0, 0}, "no TC_TENSORCLASS struct found in the header");
  return schema;
}

}  // namespace tcgen
