// The schema IR shared by both frontends, validation and the emitter.
//
// Frontends fill the "as written" parts (names, dtype text, shape tokens, type
// names, defaults, locations); validate() checks them and fills the resolved
// parts (parsed dims, nested class C++ names, emission order).
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "tcgen/diagnostics.h"
#include "tensordict/schema_kinds.h"

namespace tcgen {

// The schema's vocabulary, shared with the runtime's tables.
using tensordict::schema::DimKind;
using tensordict::schema::FieldKind;
using tensordict::schema::ValueType;

// The Python class kind a schema's classes become (`--lang python`): a
// tensordict `@tensorclass`, a `TypedTensorDict` subclass, or both (the
// TypedTensorDicts then in the submodule `<python_module>.typed`).
enum class PythonForm { Tensorclass, TypedTensorDict, Both };

// One shape entry as written ("...", "3", "H") and where.
struct DimToken {
  std::string text;
  SourceLoc loc;
};

// A parsed shape entry (filled by validate()).
struct Dim {
  DimKind kind = DimKind::Batch;
  std::int64_t size = 0;  // Fixed
  std::string symbol;     // Symbol
};

struct Field {
  std::string name;  // the schema's: the key on disk, the Python name
  SourceLoc loc;
  // Resolved: the C++ member's name (name, or name + "_": cpp_member_takes_suffix).
  std::string cpp_name;
  FieldKind kind = FieldKind::Tensor;

  // Tensor fields.
  std::optional<std::string> dtype;
  SourceLoc dtype_loc;
  std::optional<std::vector<DimToken>> shape;  // nullopt: any shape
  SourceLoc shape_loc;
  std::vector<Dim> dims;  // resolved from `shape`
  // An UnbatchedTensor (tensordict's): no batch dims, `shape` is all of it.
  bool unbatched = false;

  // TensorClass fields: the type as written, and its resolved C++ name.
  std::string type_name;
  SourceLoc type_loc;
  std::string type_cpp;     // "rl::Agent"
  std::string type_python;  // the Python module that defines it: "rl" (see python_module_of)
  // The python_form its schema declares (an import's, for a class from elsewhere).
  std::optional<PythonForm> type_python_form;

  // NonTensor fields.
  ValueType value_type = ValueType::None;
  ValueType element_type = ValueType::None;  // for List

  bool optional = false;
  // The default as written (scalar text; for lists "[a, b]").
  std::optional<std::string> default_value;
  std::vector<std::string> default_items;  // list defaults, item by item
  bool default_is_list = false;            // the default was written as a list
  SourceLoc default_loc;
  std::string doc;
};

struct Class {
  std::string name;
  SourceLoc loc;
  std::string doc;
  std::optional<std::vector<std::string>> batch_names;
  SourceLoc batch_loc;
  std::vector<Field> fields;

  // Resolved.
  std::string cpp_name;     // "rl::Observation"
  std::string python_type;  // "<class 'rl.types.Observation'>"
};

struct Import {
  std::string path;  // as written, relative to the importing file
  SourceLoc loc;
};

enum class Frontend { Yaml, Header };

struct Schema {
  std::string file;  // the schema path as given
  Frontend frontend = Frontend::Yaml;
  std::string ns;    // "rl" or "a::b"
  SourceLoc ns_loc;
  std::optional<std::string> python_module;
  std::optional<PythonForm> python_form;  // as written; nullopt: a @tensorclass unless the run says (python_emitter.h)
  std::vector<Import> imports;
  std::vector<Class> classes;  // declaration order

  // Header frontend: headers (as #include spellings) that declare nested
  // tensorclasses used here but defined elsewhere.
  std::vector<std::string> extra_includes;

  // Resolved by validate(): indices into `classes`, nested classes first.
  std::vector<std::size_t> emit_order;
};

// A tensorclass visible to a schema from elsewhere (an import, or another
// header) by its simple name.
struct ExternalClass {
  std::string name;
  std::string cpp_name;
  SourceLoc loc;
  std::string python_module;  // the Python module the class is emitted into
  std::optional<PythonForm> python_form;  // what its schema declares
};
using ExternalClasses = std::map<std::string, ExternalClass>;

const char* to_string(FieldKind k);
const char* to_string(DimKind k);
const char* to_string(ValueType v);
// The schema spelling: "tensorclass", "typed_tensordict", "both".
const char* to_string(PythonForm f);
// The form a spelling names, or nullopt.
std::optional<PythonForm> parse_python_form(std::string_view text);
// The error for a spelling parse_python_form refuses.
std::string unknown_python_form(std::string_view text);

// The Python module named in memmap "_type" strings.
std::string python_module_of(const Schema& s);

}  // namespace tcgen
