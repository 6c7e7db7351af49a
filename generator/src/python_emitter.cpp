#include "tcgen/python_emitter.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <array>
#include <filesystem>
#include <set>
#include <utility>

#include "tcgen/diagnostics.h"
#include "tcgen/names.h"
#include "tcgen/python_fields.h"
#include "tcgen/text.h"
#include "tcgen/typed_tensordict_emitter.h"

namespace tcgen {
namespace {

bool has_keyword_field(const Class& c) {
  return std::any_of(c.fields.begin(), c.fields.end(), [](const Field& f) { return is_python_keyword(f.name); });
}

// The class body declares every field's annotation first, then the defaults:
// a default binds its field's name in the class body, where a later
// annotation could name it (a field `int`, a field named like a class).
// A field named like a Python keyword cannot be declared in a class body: the
// decorator declares it (_tensorclass_with_keyword_fields in the template).
mstch::map class_context(const Schema& s, const Class& c) {
  mstch::array fields, defaults, specs;
  std::vector<std::string> keyword_fields;
  // Python wants fields with defaults after those without; the order of
  // fields means nothing on disk or to the contract.
  for (const bool with_default : {false, true}) {
    for (const Field& f : c.fields) {
      const std::string def = python_default(f);
      if (def.empty() == with_default || is_python_keyword(f.name)) continue;
      fields.push_back(mstch::map{{"name", f.name}, {"annotation", python_annotation(f)}});
      if (with_default) defaults.push_back(mstch::map{{"name", f.name}, {"value", def}});
    }
  }
  for (const Field& f : c.fields) {
    if (!is_python_keyword(f.name)) continue;
    const std::string def = python_default(f);
    keyword_fields.push_back(fmt::format("({}, {}, {})", python_string_literal(f.name), python_annotation(f),
                                         def.empty() ? std::string("None") : def));
  }
  const std::string decorator =
      keyword_fields.empty() ? std::string("@_tensorclass(**_TC_OPTIONS)")
                             : "@_tensorclass_with_keyword_fields(" + python_tuple(keyword_fields) + ")";
  for (const Field& f : c.fields) specs.push_back(mstch::map{{"spec", python_contract_row(f)}});
  return mstch::map{
      {"name", c.name},
      {"name_literal", python_string_literal(c.name)},
      {"docstring", python_docstring(s, c)},
      {"has_fields", !c.fields.empty()},
      {"fields", fields},
      {"defaults", defaults},
      {"decorator", decorator},
      {"contract", "_CONTRACT_" + c.name},
      {"batch_names", python_batch_names(c)},
      {"specs", specs},
  };
}

std::string package_path(const std::string& module) {
  std::filesystem::path out;
  for (const auto& part : split_module(module)) out /= part;
  return (out / "__init__.py").string();
}

std::string emit_tensorclass_module(const Schema& s, const std::string& module, const EmitOptions& options) {
  // Nested classes defined in other modules.
  std::set<std::pair<std::string, std::string>> imported;
  for (const Class& c : s.classes)
    for (const Field& f : c.fields)
      if (f.kind == FieldKind::TensorClass && f.type_python != module) imported.emplace(f.type_python, f.type_name);
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
      {"has_imports", !imports.empty()},
      {"has_keyword_fields", std::any_of(s.classes.begin(), s.classes.end(), has_keyword_field)},
      {"imports", imports},
      {"all", fmt::format("{}", fmt::join(names, ", "))},
      {"classes", classes},
  };
  return render_template(load_template("tensorclass.py.mustache", options), root, {"python_contract.py.mustache"},
                         options);
}

}  // namespace

PythonForm python_form_of(const Schema& schema, const EmitOptions& options) {
  return options.python_form.value_or(schema.python_form.value_or(PythonForm::Tensorclass));
}

std::string typed_python_module(const std::string& module, PythonForm form) {
  return form == PythonForm::Both ? module + ".typed" : module;
}

std::vector<PythonModule> emit_python(const Schema& s, const EmitOptions& options) {
  const std::string module = checked_python_module(s);
  check_python_class_names(s);
  const PythonForm form = python_form_of(s, options);
  std::vector<PythonModule> modules;
  if (form != PythonForm::TypedTensorDict)
    modules.push_back({package_path(module), emit_tensorclass_module(s, module, options)});
  if (form != PythonForm::Tensorclass) {
    const std::string typed = typed_python_module(module, form);
    modules.push_back({package_path(typed), emit_typed_tensordict_module(s, typed, options)});
  }
  return modules;
}

}  // namespace tcgen
