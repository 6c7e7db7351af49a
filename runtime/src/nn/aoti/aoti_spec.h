// Reads an AOTInductor package's tensorclass metadata (written by
// python/tensorclass/export.py) and its call spec into an AOTISpec.
#pragma once

#include <string>
#include <unordered_map>
#include <vector>

#include "tensordict/nn/aoti.h"

namespace tensordict::nn::aoti {

// The metadata layout this library reads; a package with a newer one is
// refused.
inline constexpr int kFormat = 1;
// The metadata entry holding it.
inline constexpr const char* kMetadataKey = "tensorclass";

// The spec of the package at `path` from its metadata, read before the
// loader extracts the package. RuntimeError naming `path` when the metadata
// is missing, malformed or of a newer format.
AOTISpec read_spec(const std::string& path, const std::unordered_map<std::string, std::string>& metadata);

// Puts the spec's inputs in the order of `call_spec` (the loader's
// get_call_spec(): the pytree specs of the inputs and outputs).
// RuntimeError naming `path` when the metadata disagrees with it.
void apply_call_spec(const std::string& path, const std::vector<std::string>& call_spec, AOTISpec& spec);

}  // namespace tensordict::nn::aoti
