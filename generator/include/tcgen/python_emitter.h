// IR -> Python modules: a schema's classes as tensordict @tensorclasses
// (templates/tensorclass.py.mustache), as TypedTensorDict subclasses
// (typed_tensordict_emitter.h), or both, each checking the schema's contract.
#pragma once

#include <string>
#include <vector>

#include "tcgen/emitter.h"
#include "tcgen/ir.h"

namespace tcgen {

// One generated Python module: where it goes under the output directory, and
// its text.
struct PythonModule {
  std::string path;  // "tc/rl/__init__.py"
  std::string text;
};

// The form `schema` is emitted in: the run's (options.python_form), else the
// schema's python_form, else a @tensorclass.
PythonForm python_form_of(const Schema& schema, const EmitOptions& options);

// The Python module the TypedTensorDict form of a schema whose module is
// `module` lives in: `module` itself, or `module.typed` beside the
// @tensorclasses (PythonForm::Both).
std::string typed_python_module(const std::string& module, PythonForm form);

// The modules of a validated schema: its Python module as a package
// ("tc.rl" -> "tc/rl/__init__.py", so that the modules of "rl" and
// "rl.common" can both exist) holding the @tensorclasses or the
// TypedTensorDicts, and with PythonForm::Both the TypedTensorDicts in
// "tc/rl/typed/__init__.py" too. Throws Error (with the locations) for what
// Python or TypedTensorDict cannot take: a schema without a valid module
// name, keywords as class names, and the fields typed_tensordict_emitter.h
// lists.
std::vector<PythonModule> emit_python(const Schema& schema, const EmitOptions& options);

}  // namespace tcgen
