// What the safetensors reader and writer share: the dtype table, the limits,
// and Python's json.dumps (the metadata tensordict writes is its output).
#pragma once

#include <ATen/core/ScalarType.h>
#include <nlohmann/json.hpp>

#include <cstdint>
#include <string>
#include <string_view>

#include "tensordict/non_tensor.h"

namespace tensordict::detail::safetensors {

struct Dtype {
  at::ScalarType type;
  std::string_view name;
  // safetensors' order of dtypes: the file holds tensors by descending rank
  // (the widest first, so each stays aligned), then by name.
  int rank;
};
// The entry of a libtorch dtype, or nullptr when safetensors (or this build)
// has none.
const Dtype* find_dtype(at::ScalarType type);
// The entry of a safetensors dtype name ("F32"), or nullptr.
const Dtype* find_dtype(std::string_view name);
// The names supported, for messages.
std::string known_dtypes();

// safetensors' bound on the JSON header (MAX_HEADER_SIZE).
inline constexpr uint64_t kMaxHeaderBytes = 100'000'000;
// The most members a lazy stack level may have (a bound for hostile files).
inline constexpr int64_t kMaxStackMembers = int64_t{1} << 20;
// The __metadata__ key of tensordict's structure, and its format version.
inline constexpr std::string_view kMetadataKey = "tensordict";
inline constexpr int64_t kFormatVersion = 1;

// `value` as Python's json.dumps writes it by default: ", " and ": "
// separators, non-ASCII escaped (\uXXXX), NaN and Infinity for non-finite
// floats.
std::string python_json_dumps(const Json& value);

}  // namespace tensordict::detail::safetensors
