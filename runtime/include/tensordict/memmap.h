// Memmap extension point: loaders for classes the dynamic reader does not
// know (tensorclasses). The methods themselves are on TensorDictBase
// (memmap_, memmap, memmap_like, save, is_memmap, saved_path,
// memmap_refresh_) and TensorDict (load_memmap, load).
#pragma once

#include <c10/core/Device.h>

#include <functional>
#include <optional>
#include <string>

#include "tensordict/base.h"

namespace tensordict {

// Loads the directory `dir` whose meta.json is `meta` (a tensorclass level:
// non-tensor fields in meta.json, tensor fields in `dir/_tensordict/`, which
// TensorDict::load_memmap reads).
using MemmapLoader = std::function<Value(const std::string& dir, const Json& meta, std::optional<at::Device> device)>;

// Registers `loader` for the `_type` string Python writes (str(cls), e.g.
// "<class 'rl.Observation'>") or for the bare class name ("Observation"),
// which is tried when no full string matches. A later registration replaces
// an earlier one.
void register_memmap_class(const std::string& type, MemmapLoader loader);

}  // namespace tensordict
