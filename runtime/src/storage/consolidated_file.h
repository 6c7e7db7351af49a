// Where consolidate() puts its storage besides ordinary memory (private): a
// file in tensordict's consolidated layout, which from_consolidated() reads
// back, or shared memory.
//
// The layout (tensordict's consolidate(filename=...)): the leaves' bytes,
// each leaf padded to a multiple of 8 bytes; then the metadata as JSON text;
// then the JSON's length in bytes as a little-endian int64. The metadata
// describes one level of the tree:
//   {"cls": "TensorDict" | "LazyStackedTensorDict" | "NonTensorStack" | str(tensorclass),
//    "non_tensors": {key: [data, batch_size, device or null]},
//    "leaves": {key: ["torch.<dtype>", shape, start, stop, pad]},
//    "cls_metadata": {"device", "names", "batch_size", "is_locked"}
//                    (a stack: {"stack_dim", "stack_dim_name", "is_locked"}),
//    <key of a nested level or stack member "0", "1", ...>: {the same, below}}
// where start..stop is the leaf's byte range in the data and pad the bytes of
// it past the leaf's own numel * itemsize.
#pragma once

#include <ATen/core/Tensor.h>
#include <nlohmann/json.hpp>

#include <cstdint>
#include <string>

#include "memmap/memmap_detail.h"
#include "tensordict/base.h"

namespace tensordict::detail {

// A consolidated file being written: the storage (the first `data_bytes`
// bytes of a shared mapping of the file) is filled by consolidate(), then
// commit() appends the metadata of the result and puts the file in place.
// Destroyed before commit(), nothing is left behind.
class ConsolidatedFileWriter {
 public:
  ConsolidatedFileWriter(const std::string& filename, int64_t data_bytes);
  const at::Tensor& storage() const { return storage_; }
  // `consolidated`: the tensordict whose leaves are views of storage();
  // `locked`: the lock state the file records (the source's, as tensordict).
  void commit(const TensorDict& consolidated, bool locked);

 private:
  std::string filename_;
  int64_t data_bytes_;
  memmap::AtomicFile file_;
  at::Tensor storage_;
};

// The tree the consolidated metadata `meta` (the layout above, as a file or
// tensordict's consolidate(metadata=True) records it) describes over
// `storage` (uint8, on the CPU), its leaves views of it, the result
// consolidated over it. Every field is checked against the storage first;
// errors name `source` ("consolidated file X"), and `label` in the
// messages of the shared shape and name checks.
TensorDict tensordict_from_consolidated_metadata(const Json& meta, const at::Tensor& storage, const std::string& source,
                                                 const std::filesystem::path& label);
// The metadata of `consolidated` (its leaves views of `storage`), recording
// `locked` as its lock state.
Json consolidated_metadata(const TensorDict& consolidated, const at::Tensor& storage, bool locked);

// The tensordict a consolidated file holds, its leaves views of one
// copy-on-write mapping of the file (writes into them stay in memory).
TensorDict read_consolidated_file(const std::string& filename, const LoadOptions& options = {});

}  // namespace tensordict::detail
