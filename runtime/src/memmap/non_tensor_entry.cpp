// Indexed writes into the non-tensor entries of a memory-mapped tensordict:
// the files follow the tensordict (memmap_detail.h, write_non_tensor_entry).
#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "memmap/memmap_detail.h"
#include "tensordict/detail/impl.h"
#include "tensordict/non_tensor.h"

namespace tensordict::detail::memmap {

void write_non_tensor_entry(const TensorDictImpl& level, const NestedKey& key, const NonTensorData& before,
                            const NonTensorData& after) {
  if (!before.is_stack()) {
    if (after == before) return;
    throw RuntimeError(fmt::format(
        "cannot write at an index of key {}: a memory-mapped tensordict shares its one value {} there, and the write "
        "would make it {} (tensordict: \"You're attempting to update a leaf in-place with a shared tensordict, but the "
        "new value does not match the previous\"); store a NonTensorStack there before memmap to write per element",
        key.repr(), tensordict::python_repr(before.data()), tensordict::python_repr(after.data())));
  }
  const std::string& dir = *level.memmap_dir();
  if (dir.empty()) return;  // anonymous shared memory: no file
  const fs::path file = entry_dir(dir, key.back()) / "meta.json";
  write_file_atomic(file, dump_meta(non_tensor_meta(after), file, "the value of key " + key.repr()), /*sync=*/true);
}

}  // namespace tensordict::detail::memmap
