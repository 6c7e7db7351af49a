#include "rl/checkpoint_files.h"

#include <nlohmann/json.hpp>

#include <fmt/format.h>

#include "memmap/memmap_detail.h"
#include "tensordict/errors.h"

namespace tensordict::rl {

namespace fs = std::filesystem;

Json read_checkpoint_json(const fs::path& file) {
  std::string text;
  try {
    text = detail::memmap::read_text(file, file.parent_path());
  } catch (const RuntimeError&) {
    rethrow_reworded([&](std::string_view what) {
      return fmt::format("cannot load a replay buffer checkpoint: {} ({})", file.string(), what);
    });
  }
  Json value = detail::memmap::parse_json(text, file);
  if (!value.is_object()) {
    throw RuntimeError(fmt::format("malformed {}: expected a JSON object, got {}", file.string(), value.type_name()));
  }
  return value;
}

void make_checkpoint_dir(const fs::path& dir) {
  std::error_code ec;
  fs::create_directories(dir, ec);
  if (ec) throw RuntimeError(fmt::format("cannot write a replay buffer checkpoint: cannot create {} ({})", dir.string(), ec.message()));
}

bool checkpoint_has(const fs::path& path) {
  std::error_code ec;
  const bool found = fs::exists(fs::symlink_status(path, ec));
  if (ec && ec != std::errc::no_such_file_or_directory) {
    throw RuntimeError(fmt::format("cannot load a replay buffer checkpoint: cannot stat {} ({})", path.string(), ec.message()));
  }
  return found;
}

void write_checkpoint_json(const fs::path& file, const Json& value) {
  make_checkpoint_dir(file.parent_path());
  detail::memmap::write_file_atomic(file, detail::memmap::dump_meta(value, file, "the checkpoint's metadata"), /*sync=*/true);
}

const Json& checkpoint_field(const Json& object, std::string_view name, const fs::path& file) {
  const auto it = object.find(std::string(name));
  if (it == object.end()) throw RuntimeError(fmt::format("malformed {}: no \"{}\"", file.string(), name));
  return *it;
}

int64_t checkpoint_int(const Json& object, std::string_view name, const fs::path& file, int64_t low, int64_t high) {
  const Json& value = checkpoint_field(object, name, file);
  if (!value.is_number_integer() || (value.is_number_unsigned() && value.get<uint64_t>() > uint64_t(INT64_MAX)) ||
      value.get<int64_t>() < low || value.get<int64_t>() > high) {
    throw RuntimeError(fmt::format("malformed {}: \"{}\" is {}, expected an integer in [{}, {}]", file.string(), name,
                                   value.dump(), low, high));
  }
  return value.get<int64_t>();
}

}  // namespace tensordict::rl
