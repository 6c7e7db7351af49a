// What the typed engine (detail/tensorclass_engine.h) and the runtime's
// memmap writer share about tensorclass levels: their tags, and the reads
// and writes that take them. Not part of the user API: a generated
// tensorclass's memmap(), load_memmap() and append_memmap() call these.
#pragma once

#include <c10/core/Device.h>
#include <c10/util/FunctionRef.h>
#include <nlohmann/json.hpp>

#include <optional>
#include <string>
#include <vector>

#include "tensordict/base.h"
#include "tensordict/memmap.h"

namespace tensordict {

// How a level is written in tensorclass layout: `type` is its meta.json
// `_type` (str(cls) in Python), `fields` the non-tensor fields that follow it
// there, in order.
struct MemmapClassTag {
  std::string type;
  Json fields = Json::object();
};

// memmap() of `td` where the levels in `tags` are written as tensorclasses:
// `<dir>/meta.json` holds the tag, the level's entries go to `<dir>/_tensordict/`.
// Returns the memory-mapped copy (tensorclass levels as plain TensorDicts).
TensorDict memmap_tensorclass(const TensorDict& td, const std::string& prefix, const MemmapClassTags& tags,
                              const MemmapOptions& options = {}, MemmapContent content = MemmapContent::Copy);

// append_memmap where the levels `tags` names are tensorclasses (a generated
// tensorclass's rows: tensordict_form + tags, as memmap_tensorclass takes
// them); their class must be the saved one.
void append_memmap_tensorclass(const std::string& prefix, const TensorDict& rows, const MemmapClassTags& tags,
                               const MemmapOptions& options = {});

// Reads and parses `dir`/meta.json; errors name the file.
Json read_memmap_meta(const std::string& dir);

// Runs `read`, which reads the tree at `prefix` (read_memmap_meta,
// load_tensorclass_level...), on one version of it: the reads inside go
// through one descriptor of the tree, and when a writer replaces the tree
// meanwhile, `read` runs again on the new one. load_memmap does this itself.
void read_memmap_tree(const std::string& prefix, c10::function_ref<void()> read);

// The dynamic form of the tensorclass level at `dir` (meta.json `meta`): the
// tensor fields of `dir/_tensordict/` (memory-mapped, nested tensorclasses
// through their registered loaders) plus one NonTensorData entry per non-null
// non-tensor field of meta.json (null ones, unset optional tensor fields as
// Python writes them, are left out).
TensorDict load_tensorclass_level(const std::string& dir, const Json& meta, std::optional<at::Device> device);

}  // namespace tensordict
