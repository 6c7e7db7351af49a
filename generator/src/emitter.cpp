#include "tcgen/emitter.h"

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <mstch/mstch.hpp>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>

#include "tcgen/diagnostics.h"
#include "tcgen/embedded.h"
#include "tcgen/text.h"

namespace tcgen {
namespace {

// An #include spelling goes between quotes as it is: nothing in it may end
// the quotes or the directive.
std::string include_spelling(const std::string& path, const SourceLoc& loc) {
  for (unsigned char c : path) {
    if (c < 0x20 || c == 0x7f || c == '"' || c == '\\')
      throw Error(loc, fmt::format("cannot #include {}: a quote, backslash or control character in a file name",
                                   cpp_string_literal(path)));
  }
  return path;
}

// Lines for `///` comments.
mstch::array doc_comment_lines(const std::string& doc) {
  mstch::array lines;
  for (std::string line : doc_lines(doc)) {
    // A trailing backslash would splice the next line into the comment.
    if (!line.empty() && line.back() == '\\') line += '.';
    lines.push_back(mstch::map{{"line", line.empty() ? std::string() : " " + line}});
  }
  return lines;
}

std::string lit_or_empty(const std::string& s) { return s.empty() ? "{}" : cpp_string_value(s); }
std::string boolean(bool b) { return b ? "true" : "false"; }

std::string scalar_cpp_type(ValueType v) {
  switch (v) {
    case ValueType::String: return "std::string";
    case ValueType::Int: return "std::int64_t";
    case ValueType::Float: return "double";
    case ValueType::Bool: return "bool";
    default: return "void";
  }
}

std::string scalar_cpp_value(ValueType v, const std::string& text) {
  if (v == ValueType::String) return cpp_string_value(text);
  // -9223372036854775808 is not a literal: it negates an out-of-range one.
  if (v == ValueType::Int && text == "-9223372036854775808") return "(-9223372036854775807 - 1)";
  if (v == ValueType::Float) return float_literal(text);
  return text;
}

// `c`'s members: the type of field `f`. A class of the schema's namespace is
// named unqualified unless a member of `c` takes its name (in the struct, the
// name would then be the member's).
std::string member_type(const Schema& s, const Class& c, const Field& f) {
  switch (f.kind) {
    case FieldKind::Tensor: return "::at::Tensor";
    case FieldKind::TensorClass: {
      // An optional class is absent as nullopt (tensordict stores None).
      const std::string prefix = s.ns + "::";
      const bool same_ns = !s.ns.empty() && f.type_cpp.rfind(prefix, 0) == 0 &&
                           f.type_cpp.find("::", prefix.size()) == std::string::npos;
      const std::string short_name = same_ns ? f.type_cpp.substr(prefix.size()) : std::string();
      const bool taken = std::any_of(c.fields.begin(), c.fields.end(),
                                     [&](const Field& other) { return other.cpp_name == short_name; });
      const std::string type = same_ns && !taken ? short_name : "::" + f.type_cpp;
      return f.optional ? "std::optional<" + type + ">" : type;
    }
    case FieldKind::NonTensor:
      if (f.value_type == ValueType::List) return "std::vector<" + scalar_cpp_type(f.element_type) + ">";
      return scalar_cpp_type(f.value_type);
    case FieldKind::NonTensorStack: return "::tensordict::NonTensorStack<" + scalar_cpp_type(f.value_type) + ">";
  }
  return "void";
}

std::string member_init(const Field& f) {
  if ((f.kind != FieldKind::NonTensor && f.kind != FieldKind::NonTensorStack) || !f.default_value) return "";
  if (f.value_type == ValueType::List) {
    std::vector<std::string> items;
    for (const auto& i : f.default_items) items.push_back(scalar_cpp_value(f.element_type, i));
    return fmt::format(" = {{{}}}", fmt::join(items, ", "));
  }
  return " = " + scalar_cpp_value(f.value_type, *f.default_value);
}

mstch::map struct_context(const Schema& s, const Class& c) {
  mstch::array members;
  for (const Field& f : c.fields) {
    members.push_back(mstch::map{{"name", f.cpp_name},
                                 {"doc_lines", doc_comment_lines(f.doc)},
                                 {"cpp_type", member_type(s, c, f)},
                                 {"init", member_init(f)}});
  }
  return mstch::map{{"name", c.name}, {"doc_lines", doc_comment_lines(c.doc)}, {"members", members}};
}

mstch::map table_context(const Class& c) {
  mstch::array shapes, fields, member_ptrs;
  std::vector<std::string> ptrs;
  for (const Field& f : c.fields) {
    std::string shape_ref = "{}";
    if (f.shape && !f.dims.empty()) {
      mstch::array dims;
      for (const Dim& d : f.dims) {
        dims.push_back(mstch::map{{"kind", std::string(to_string(d.kind))},
                                  {"size", std::to_string(d.size)},
                                  {"symbol", lit_or_empty(d.symbol)}});
      }
      shape_ref = "shape_" + f.cpp_name;
      shapes.push_back(mstch::map{{"array", shape_ref}, {"dims", dims}});
    }
    const bool has_default = f.default_value.has_value();
    fields.push_back(mstch::map{
        {"name", cpp_string_literal(f.name)},
        {"kind", std::string(to_string(f.kind))},
        {"dtype", lit_or_empty(f.dtype.value_or(""))},
        {"has_shape", boolean(f.shape.has_value())},
        {"shape", shape_ref},
        {"type_name", lit_or_empty(f.type_cpp)},
        {"value_type", std::string(to_string(f.value_type))},
        {"element_type", std::string(to_string(f.element_type))},
        {"optional", boolean(f.optional)},
        {"unbatched", f.unbatched},
        {"default_value", has_default ? lit_or_empty(*f.default_value) : std::string("{}")},
        {"has_default", boolean(has_default)},
        {"doc", lit_or_empty(f.doc)},
    });
    ptrs.push_back(fmt::format("&::{}::{}", c.cpp_name, f.cpp_name));
  }
  for (std::size_t i = 0; i < ptrs.size(); ++i)
    member_ptrs.push_back(mstch::map{{"ptr", ptrs[i]}, {"sep", std::string(i + 1 == ptrs.size() ? ");" : ",")}});
  std::vector<std::string> batch;
  if (c.batch_names)
    for (const auto& b : *c.batch_names) batch.push_back(cpp_string_literal(b));
  return mstch::map{
      {"cpp_type", "::" + c.cpp_name},
      {"shapes", shapes},
      {"has_fields", !c.fields.empty()},
      {"fields", fields},
      {"has_batch_names", !batch.empty()},
      {"batch_names", fmt::format("{{{}}}", fmt::join(batch, ", "))},
      {"batch_names_ref", std::string(batch.empty() ? "{}" : "batch_names")},
      {"fixed_batch_dims", boolean(c.batch_names.has_value())},
      {"fields_ref", std::string(c.fields.empty() ? "{}" : "fields")},
      {"name", cpp_string_literal(c.name)},
      {"cpp_name", cpp_string_literal(c.cpp_name)},
      {"python_type", cpp_string_literal(c.python_type)},
      {"doc", lit_or_empty(c.doc)},
      {"member_ptrs", member_ptrs},
  };
}

}  // namespace

std::string load_template(std::string_view name, const EmitOptions& options) {
  if (options.templates_dir) {
    const std::string path = (std::filesystem::path(*options.templates_dir) / name).string();
    std::ifstream in(path, std::ios::binary);
    if (!in) throw Error(SourceLoc{path, 0, 0}, "cannot read template");
    std::ostringstream ss;
    ss << in.rdbuf();
    return ss.str();
  }
  for (const auto& f : embedded::templates())
    if (f.path == name) return std::string(f.text);
  throw Error(SourceLoc{}, fmt::format("internal error: template '{}' is not embedded", name));
}

std::string render_template(const std::string& text, const mstch::map& context,
                            const std::vector<std::string>& partials, const EmitOptions& options) {
  mstch::config::escape = [](const std::string& str) { return str; };
  std::map<std::string, std::string> partial_texts;
  for (const auto& file : partials) partial_texts[file.substr(0, file.find('.'))] = load_template(file, options);
  return mstch::render(text, context, partial_texts);
}

std::string output_name(const std::string& schema_file) {
  return std::filesystem::path(schema_file).stem().string() + ".tc.h";
}

std::string source_output_name(const std::string& schema_file) {
  return std::filesystem::path(schema_file).stem().string() + ".tc.cpp";
}

namespace {

// What both files of a schema name: its source, its classes' tables and the
// two outputs.
mstch::map file_context(const Schema& s) {
  mstch::array tables;
  for (std::size_t ci : s.emit_order) tables.push_back(table_context(s.classes[ci]));
  return mstch::map{
      {"source_name", printable(std::filesystem::path(s.file).filename().string())},
      {"header_file", output_name(s.file)},
      {"source_file", source_output_name(s.file)},
      {"has_tables", !tables.empty()},
      {"tables", tables},
  };
}

}  // namespace

std::string emit_header(const Schema& s, const EmitOptions& options) {
  const std::string tmpl = load_template("tensorclass.h.mustache", options);

  mstch::array includes;
  for (const auto& inc : s.extra_includes)
    includes.push_back(mstch::map{{"path", include_spelling(inc, SourceLoc{s.file, 0, 0})}});
  for (const auto& imp : s.imports)
    includes.push_back(mstch::map{{"path", include_spelling(output_name(imp.path), imp.loc)}});

  mstch::array structs;
  for (std::size_t ci : s.emit_order) structs.push_back(struct_context(s, s.classes[ci]));
  mstch::map root = file_context(s);
  root.emplace("includes", includes);
  root.emplace("emit_structs", s.frontend == Frontend::Yaml);
  root.emplace("has_namespace", !s.ns.empty());
  root.emplace("namespace", s.ns);
  root.emplace("structs", structs);
  return render_template(tmpl, root);
}

std::string emit_source(const Schema& s, const EmitOptions& options) {
  return render_template(load_template("tensorclass.cpp.mustache", options), file_context(s));
}

}  // namespace tcgen
