// Nested (jagged) tensor leaves in tensordict's memmap layout (memmap_detail.h).
#include <ATen/ATen.h>
#include <nlohmann/json.hpp>

#include <limits>
#include <stdexcept>

#include "core/format.h"
#include "memmap/memmap_detail.h"
#include "tensordict/errors.h"

namespace tensordict::detail::memmap {

fs::path jagged_sizes_file(const fs::path& values_file) {
  fs::path out = values_file;
  out.replace_extension(".shape.memmap");
  return out;
}

JaggedParts jagged_parts(const at::Tensor& nested, std::string_view key) {
  const auto components = nested.unbind(0);
  if (components.empty()) {
    throw ValueError(
        fmt::format("memmap: key {} is a nested (jagged) tensor without components, which "
                    "tensordict's layout cannot hold (it writes no file and drops the key when loading)",
                    key));
  }
  const int64_t dims = components.front().dim();
  std::vector<int64_t> sizes;  // row by row, as the sizes file holds them
  std::vector<at::Tensor> flat;
  sizes.reserve(components.size() * static_cast<std::size_t>(dims));
  flat.reserve(components.size());
  for (const auto& c : components) {
    sizes.insert(sizes.end(), c.sizes().begin(), c.sizes().end());
    flat.push_back(c.reshape(-1));
  }
  const auto n = static_cast<int64_t>(components.size());
  return {at::cat(flat), at::from_blob(sizes.data(), {n, dims}, at::kLong).clone()};
}

at::Tensor load_jagged(const fs::path& values_file, at::ScalarType dtype, at::IntArrayRef sizes_shape, std::string_view key) {
  if (sizes_shape.size() != 2 || sizes_shape[0] < 1) {
    throw RuntimeError(fmt::format("{}: key '{}' is a nested tensor whose shape {} is not [components, dims] "
                                         "with at least one component",
                                         (values_file.parent_path() / "meta.json").string(), key, shape_string(sizes_shape)));
  }
  const fs::path sizes_file = jagged_sizes_file(values_file);
  const at::Tensor sizes = map_existing(sizes_file, at::kLong, sizes_shape, key).clone();
  const auto* s = sizes.data_ptr<int64_t>();
  const int64_t n = sizes_shape[0];
  const int64_t dims = sizes_shape[1];
  // Each component's element count, refusing negative sizes and overflow.
  std::vector<int64_t> counts(static_cast<std::size_t>(n));
  int64_t total = 0;
  for (int64_t i = 0; i < n; ++i) {
    int64_t count = 1;
    for (int64_t d = 0; d < dims; ++d) {
      const int64_t size = s[i * dims + d];
      if (size < 0 || (size != 0 && count > std::numeric_limits<int64_t>::max() / size)) {
        throw RuntimeError(fmt::format("{}: component {} of key '{}' has size {} in dim {}, which is {}", sizes_file.string(),
                                             i, key, size, d, size < 0 ? "negative" : "too large"));
      }
      count *= size;
    }
    if (total > std::numeric_limits<int64_t>::max() - count) {
      throw RuntimeError(fmt::format("{}: the components of key '{}' hold too many elements", sizes_file.string(), key));
    }
    counts[static_cast<std::size_t>(i)] = count;
    total += count;
  }
  const at::Tensor values = map_existing(values_file, dtype, {total}, key);
  std::vector<at::Tensor> components;
  components.reserve(counts.size());
  int64_t offset = 0;
  for (int64_t i = 0; i < n; ++i) {
    const at::IntArrayRef shape(s + i * dims, static_cast<std::size_t>(dims));
    components.push_back(values.narrow(0, offset, counts[static_cast<std::size_t>(i)]).view(shape));
    offset += counts[static_cast<std::size_t>(i)];
  }
  return at::_nested_tensor_from_tensor_list(components);
}

}  // namespace tensordict::detail::memmap
