#include "tcgen/ir_json.h"

namespace tcgen {
namespace {

using nlohmann::json;

json loc_json(const SourceLoc& l) { return json{{"file", l.file}, {"line", l.line}, {"col", l.col}}; }

json field_json(const Field& f, bool with_locations) {
  json j;
  j["name"] = f.name;
  if (f.cpp_name != f.name) j["cpp_name"] = f.cpp_name;
  j["kind"] = to_string(f.kind);
  if (f.kind == FieldKind::Tensor) {
    j["dtype"] = f.dtype ? json(*f.dtype) : json(nullptr);
    if (f.shape) {
      json dims = json::array();
      for (const Dim& d : f.dims) {
        json dj{{"kind", to_string(d.kind)}};
        if (d.kind == DimKind::Fixed) dj["size"] = d.size;
        if (d.kind == DimKind::Symbol) dj["symbol"] = d.symbol;
        dims.push_back(dj);
      }
      j["shape"] = dims;
    } else {
      j["shape"] = nullptr;
    }
  }
  if (f.kind == FieldKind::TensorClass) {
    j["type"] = f.type_name;
    j["cpp_type"] = f.type_cpp;
    j["python_module"] = f.type_python;
    j["python_form"] = f.type_python_form ? json(to_string(*f.type_python_form)) : json(nullptr);
  }
  if (f.kind == FieldKind::NonTensor || f.kind == FieldKind::NonTensorStack) {
    j["value_type"] = to_string(f.value_type);
    if (f.value_type == ValueType::List) j["element_type"] = to_string(f.element_type);
  }
  j["optional"] = f.optional;
  if (f.unbatched) j["unbatched"] = true;  // written only when set: the IR of other schemas is unchanged
  j["default"] = f.default_value ? json(*f.default_value) : json(nullptr);
  j["doc"] = f.doc;
  if (with_locations) j["location"] = loc_json(f.loc);
  return j;
}

}  // namespace

nlohmann::json to_json(const Schema& s, bool with_locations) {
  json j;
  if (with_locations) j["file"] = s.file;
  j["namespace"] = s.ns;
  j["python_module"] = python_module_of(s);
  j["python_form"] = s.python_form ? json(to_string(*s.python_form)) : json(nullptr);
  json imports = json::array();
  for (const Import& i : s.imports) imports.push_back(i.path);
  j["imports"] = imports;
  json classes = json::array();
  for (const Class& c : s.classes) {
    json cj;
    cj["name"] = c.name;
    cj["cpp_name"] = c.cpp_name;
    cj["python_type"] = c.python_type;
    cj["doc"] = c.doc;
    cj["batch"] = c.batch_names ? json(*c.batch_names) : json(nullptr);
    json fields = json::array();
    for (const Field& f : c.fields) fields.push_back(field_json(f, with_locations));
    cj["fields"] = fields;
    if (with_locations) cj["location"] = loc_json(c.loc);
    classes.push_back(cj);
  }
  j["classes"] = classes;
  json order = json::array();
  for (std::size_t i : s.emit_order) order.push_back(s.classes[i].name);
  j["emit_order"] = order;
  return j;
}

}  // namespace tcgen
