// meta.json: reading with errors that name the file, writing, leaf entries.
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>
#include <stdexcept>

#include "../format.h"
#include "memmap_detail.h"
#include "tensordict/dtype.h"
#include "tensordict/non_tensor.h"

namespace tensordict::detail::memmap {

Json read_meta(const fs::path& dir) {
  const fs::path file = dir / "meta.json";
  std::ifstream in(file, std::ios::binary);
  if (!in) {
    throw std::runtime_error(fmt::format("cannot load a memmap tensordict from {}: {} is missing or unreadable",
                                         dir.string(), file.string()));
  }
  std::stringstream text;
  text << in.rdbuf();
  Json meta;
  try {
    meta = Json::parse(text.str());
  } catch (const Json::parse_error& e) {
    throw std::runtime_error(fmt::format("malformed JSON in {}: {}", file.string(), e.what()));
  }
  if (!meta.is_object()) {
    throw std::runtime_error(
        fmt::format("malformed {}: expected a JSON object, got {}", file.string(), meta.type_name()));
  }
  return meta;
}

std::string dump_meta(const Json& meta) { return meta.dump(); }

std::string device_string(std::optional<at::Device> device) { return device ? device->str() : "None"; }

Json leaf_entry(const at::Tensor& tensor) {
  Json entry = Json::object();
  entry["device"] = tensor.device().str();
  entry["shape"] = tensor.sizes().vec();
  entry["dtype"] = "torch." + std::string(dtype_name(tensor.scalar_type()));
  entry["is_nested"] = false;
  return entry;
}

}  // namespace tensordict::detail::memmap
