// IR -> the TypedTensorDict form of a schema's Python module
// (templates/typed_tensordict.py.mustache): one tensordict TypedTensorDict
// subclass per class, checking the schema's contract where data comes in, and
// loading the trees the C++ structs write.
#pragma once

#include <string>
#include <vector>

#include "tcgen/emitter.h"
#include "tcgen/ir.h"

namespace tcgen {

// Renders the module `module` (the schema's Python module, or its `.typed`
// submodule beside the @tensorclasses). Throws Error, one diagnostic per
// problem, for what a TypedTensorDict cannot declare:
// - a field whose name starts with '_' (TypedTensorDict takes no such
//   annotation for a field);
// - a field named like a Python keyword (a class annotation cannot be);
// - a field named like an attribute of TypedTensorDict
//   (typed_tensordict_attributes()): it would hide the attribute, which
//   tensordict's own code calls;
// - a nested class from a schema emitted as @tensorclasses only.
std::string emit_typed_tensordict_module(const Schema& schema, const std::string& module, const EmitOptions& options);

// The public attributes of tensordict 0.15.3's TypedTensorDict
// (generator/data/typed_tensordict_attributes.txt), sorted.
const std::vector<std::string>& typed_tensordict_attributes();

}  // namespace tcgen
