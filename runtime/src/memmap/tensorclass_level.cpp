// The dynamic form of a tensorclass level (FORMATS.md: meta.json with _type and
// the non-tensor fields, tensor fields in _tensordict/): what a registered
// loader returns, and what TensorClass<Derived>::load_memmap validates.
#include <stdexcept>
#include <nlohmann/json.hpp>

#include "core/kind_ops.h"
#include "core/format.h"
#include "memmap/memmap_detail.h"
#include "tensordict/base.h"
#include "tensordict/detail/tensorclass_memmap.h"
#include "tensordict/memmap.h"

namespace tensordict {

namespace fs = std::filesystem;

TensorDict load_tensorclass_level(const std::string& dir, const Json& meta, std::optional<at::Device> device) {
  const fs::path tensors = fs::path(dir) / "_tensordict";
  if (!detail::memmap::tree_dir(tensors)) {
    throw RuntimeError(fmt::format("{}: a tensorclass directory needs its tensor fields in {}",
                                         (fs::path(dir) / "meta.json").string(), tensors.string()));
  }
  TensorDict loaded = detail::memmap::load_level(tensors, device);
  if (!detail::kind_ops(*loaded.impl()).owns_entries) {
    throw RuntimeError(fmt::format("{} holds a {}, not the TensorDict of a tensorclass's fields",
                                         tensors.string(), loaded.type_name()));
  }
  TensorDict td(loaded);
  for (const auto& [key, value] : meta.items()) {
    // Python keeps fields set to None (unset optional tensors) among the
    // non-tensor ones; they are simply absent here.
    if (key == "_type" || value.is_null()) continue;
    if (td.contains(key)) {
      throw RuntimeError(fmt::format("{}: field '{}' is both a non-tensor field and an entry of {}",
                                           (fs::path(dir) / "meta.json").string(), key, tensors.string()));
    }
    td.set_non_tensor(key, value);
  }
  // The class's directory is where it was saved (not its _tensordict/).
  if (td.is_memmap()) detail::memmap::mark_memmapped(td.impl(), dir);
  return td;
}

}  // namespace tensordict
