// Free functions of tensordict's top-level namespace: building tensordicts
// with inferred batch sizes, merging, padding.
#pragma once

#include <vector>

#include "tensordict/dense.h"

namespace tensordict {

// tensordict's from_dict / make_tensordict: the entries, with the longest
// batch size they all share (at most `batch_dims` dims) unless `batch_size`
// is given.
TensorDict make_tensordict(std::vector<TensorDict::Entry> entries, std::optional<std::vector<int64_t>> batch_size = std::nullopt,
                           std::optional<at::Device> device = std::nullopt, std::optional<int64_t> batch_dims = std::nullopt);

// One tensordict with every entry of `tds` (later ones win), with the first's
// batch size.
TensorDict merge_tensordicts(const std::vector<TensorDictBase>& tds);

// Pads the batch dims with `value`: pad_size is (dim0_before, dim0_after,
// dim1_before, ...) from the first batch dim on; negative sizes crop.
TensorDict pad(const TensorDictBase& td, const std::vector<int64_t>& pad_size, const at::Scalar& value = 0);

// Pads every key along dim `pad_dim` of its tensors to that key's longest
// length across `tds`, then stacks them along a new first dim. With
// return_mask, a "masks" entry holds, per key, true where values are real.
TensorDict pad_sequence(const std::vector<TensorDictBase>& tds, int64_t pad_dim = 0, const at::Scalar& padding_value = 0,
                        bool return_mask = false);

// torch's *_like constructors applied to every tensor leaf (non-tensor data
// carried): same keys, batch size, names, dtypes and devices.
TensorDict zeros_like(const TensorDictBase& td);
TensorDict ones_like(const TensorDictBase& td);
TensorDict empty_like(const TensorDictBase& td);
TensorDict full_like(const TensorDictBase& td, const at::Scalar& fill_value);
TensorDict rand_like(const TensorDictBase& td);
TensorDict randn_like(const TensorDictBase& td);

}  // namespace tensordict
