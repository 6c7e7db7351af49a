#include "tcgen/typed_tensordict_emitter.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <filesystem>
#include <set>
#include <sstream>
#include <utility>

#include "tcgen/diagnostics.h"
#include "tcgen/embedded.h"
#include "tcgen/names.h"
#include "tcgen/python_emitter.h"
#include "tcgen/python_fields.h"
#include "tcgen/text.h"

namespace tcgen {
namespace {

// Where the TypedTensorDict of a nested class from another schema is
// defined, or nullopt when that schema makes @tensorclasses only.
std::optional<std::string> typed_module_of_nested(const Field& f, const EmitOptions& options) {
  const PythonForm form = options.python_form.value_or(f.type_python_form.value_or(PythonForm::Tensorclass));
  if (form == PythonForm::Tensorclass) return std::nullopt;
  return typed_python_module(f.type_python, form);
}

// Why a TypedTensorDict cannot have a field named `name`, or nullopt.
std::optional<std::string> name_problem(const std::string& name) {
  const auto& attributes = typed_tensordict_attributes();
  if (name.starts_with("_")) return "TypedTensorDict takes no class annotation whose name starts with '_' as a field";
  if (is_python_keyword(name))
    return fmt::format("'{}' is a Python keyword, which a class annotation cannot name", name);
  if (std::binary_search(attributes.begin(), attributes.end(), name))
    return fmt::format("it would hide TypedTensorDict's attribute '{}', which tensordict's own code uses", name);
  return std::nullopt;
}

// Every field of every class that a TypedTensorDict cannot declare, at once.
void check_fields(const Schema& s, const std::string& module, const EmitOptions& options) {
  std::vector<Diagnostic> errors;
  for (const Class& c : s.classes) {
    for (const Field& f : c.fields) {
      if (const auto why = name_problem(f.name)) {
        errors.push_back({f.loc, Severity::Error,
                          fmt::format("field '{}' in class '{}' cannot be a TypedTensorDict field: {} (a @tensorclass "
                                      "can have it: python_form tensorclass)",
                                      f.name, c.name, *why)});
      } else if (f.kind == FieldKind::TensorClass && f.type_python != module && !typed_module_of_nested(f, options)) {
        errors.push_back(
            {f.type_loc.file.empty() ? f.loc : f.type_loc, Severity::Error,
             fmt::format("field '{}' in class '{}' nests '{}' of module {}, whose schema makes @tensorclasses only: "
                         "a TypedTensorDict nests TypedTensorDicts (give that schema python_form typed_tensordict "
                         "or both, or pass --python-form)",
                         f.name, c.name, f.type_name, f.type_python)});
      }
    }
  }
  if (!errors.empty()) throw Error(std::move(errors));
}

// Each field is declared with its default, in the schema's order: a
// TypedTensorDict takes its fields by keyword only, and type checkers read a
// default only where the field is declared. (The @tensorclass form declares
// the defaults after all the annotations, since a field may be named like an
// alias the annotations use, `_torch`; here no field starts with '_'.)
// TypedTensorDict takes a field with a class-level default as optional.
mstch::map class_context(const Schema& s, const Class& c) {
  mstch::array fields, specs;
  for (const Field& f : c.fields) {
    const std::string def = python_default(f);
    fields.push_back(mstch::map{{"name", f.name},
                                {"annotation", python_annotation(f)},
                                {"has_default", !def.empty()},
                                {"default", def}});
  }
  for (const Field& f : c.fields) specs.push_back(mstch::map{{"spec", python_contract_row(f)}});
  return mstch::map{
      {"name", c.name},
      {"docstring", python_docstring(s, c)},
      {"has_fields", !c.fields.empty()},
      {"fields", fields},
      {"contract", "_CONTRACT_" + c.name},
      {"batch_names", python_batch_names(c)},
      {"specs", specs},
  };
}

}  // namespace

const std::vector<std::string>& typed_tensordict_attributes() {
  static const std::vector<std::string> names = [] {
    std::vector<std::string> out;
    for (const auto& file : embedded::data()) {
      if (file.path != "typed_tensordict_attributes.txt") continue;
      std::istringstream in{std::string(file.text)};
      for (std::string line; std::getline(in, line);)
        if (!line.empty() && line.front() != '#') out.push_back(line);
    }
    std::sort(out.begin(), out.end());
    return out;
  }();
  return names;
}

std::string emit_typed_tensordict_module(const Schema& s, const std::string& module, const EmitOptions& options) {
  const std::string own_module = checked_python_module(s);
  check_fields(s, own_module, options);

  // Nested classes defined in other modules: their TypedTensorDicts.
  std::set<std::pair<std::string, std::string>> imported;
  for (const Class& c : s.classes)
    for (const Field& f : c.fields)
      if (f.kind == FieldKind::TensorClass && f.type_python != own_module)
        imported.emplace(*typed_module_of_nested(f, options), f.type_name);
  mstch::array imports;
  for (const auto& [from, name] : imported) imports.push_back(mstch::map{{"module", from}, {"name", name}});

  mstch::array classes;
  std::vector<std::string> names;
  for (std::size_t ci : s.emit_order) {
    classes.push_back(class_context(s, s.classes[ci]));
    names.push_back(python_string_literal(s.classes[ci].name));
  }
  mstch::map root{
      {"source_name", printable(std::filesystem::path(s.file).filename().string())},
      {"cpp_scope", s.ns.empty() ? std::string("the global namespace") : "namespace " + s.ns},
      {"module", module},
      {"beside_tensorclasses", module != own_module},
      {"tensorclass_module", own_module},
      {"has_imports", !imports.empty()},
      {"imports", imports},
      {"all", fmt::format("{}", fmt::join(names, ", "))},
      {"classes", classes},
  };
  return render_template(load_template("typed_tensordict.py.mustache", options), root,
                         {"python_contract.py.mustache"}, options);
}

}  // namespace tcgen
