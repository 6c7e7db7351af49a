// The small JSON files of TorchRL's replay-buffer checkpoint
// (storage_metadata.json, writer/metadata.json, buffer_metadata.json): read
// bounded and checked, written atomically.
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <filesystem>
#include <string_view>

#include "tensordict/non_tensor.h"

namespace tensordict::rl {

// The JSON object in `file`; RuntimeError naming the file when it is
// missing, too large, not JSON or not an object.
Json read_checkpoint_json(const std::filesystem::path& file);
// Creates `dir` and its parents; RuntimeError naming it when it cannot.
void make_checkpoint_dir(const std::filesystem::path& dir);
// Whether `path` exists (RuntimeError naming it when that cannot be told).
bool checkpoint_has(const std::filesystem::path& path);
// Writes `value` to `file` atomically, creating its directory.
void write_checkpoint_json(const std::filesystem::path& file, const Json& value);
// The field `name` of `object`; RuntimeError naming the file when absent.
const Json& checkpoint_field(const Json& object, std::string_view name, const std::filesystem::path& file);
// The integer field `name`, in [low, high]; RuntimeError naming the file,
// the field and the range otherwise.
int64_t checkpoint_int(const Json& object, std::string_view name, const std::filesystem::path& file, int64_t low,
                       int64_t high);

}  // namespace tensordict::rl
