// Free functions of tensordict's top-level namespace: building tensordicts
// with inferred batch sizes, merging, padding.
#pragma once

#include <functional>
#include <map>
#include <vector>

#include "tensordict/base.h"

namespace tensordict {

// tensordict's from_dict / make_tensordict: the entries, with the longest
// batch size they all share (at most `batch_dims` dims) unless `batch_size`
// is given.
TensorDict make_tensordict(std::vector<TensorDict::Entry> entries, std::optional<std::vector<int64_t>> batch_size = std::nullopt,
                           std::optional<at::Device> device = std::nullopt, std::optional<int64_t> batch_dims = std::nullopt);

// Combines the tensors found at one key in every tensordict (given in order).
using MergeCallback = std::function<at::Tensor(const std::vector<at::Tensor>&)>;

// tensordict's merge_tensordicts: one tensordict with every leaf of `tds`,
// the first's batch size, names and device (and its nested structure). A key
// takes the value of the first tensordict that has it, unless it is a tensor
// in every tensordict and a callback applies (`callback_exist`, for every
// key, or the one given for that key), which then combines the values.
// RuntimeError for fewer than two tensordicts.
TensorDict merge_tensordicts(const std::vector<TensorDict>& tds, const MergeCallback& callback_exist = nullptr);
TensorDict merge_tensordicts(const std::vector<TensorDict>& tds, const std::map<NestedKey, MergeCallback>& callback_exist);

// tensordict's torch.stack / torch.cat with out=: the result is written into
// `out`'s existing tensors (their storage kept; out may be locked), which
// must hold every key of the result (a KeyError names one that is missing)
// and have its batch size. Returns `out`.
TensorDict& stack_out(TensorDict& out, const std::vector<TensorDict>& tds, int64_t dim = 0);
TensorDict& cat_out(TensorDict& out, const std::vector<TensorDict>& tds, int64_t dim = 0);

// Pads the batch dims with `value`: pad_size is (dim0_before, dim0_after,
// dim1_before, ...) from the first batch dim on; negative sizes crop.
TensorDict pad(const TensorDict& td, const std::vector<int64_t>& pad_size, const at::Scalar& value = 0);

// Pads every key along dim `pad_dim` of its tensors to that key's longest
// length across `tds`, then stacks them along a new first dim. With
// return_mask, a "masks" entry holds, per key, true where values are real.
struct PadSequenceOptions {
  int64_t pad_dim = 0;
  at::Scalar padding_value = 0;
  bool return_mask = false;
};
TensorDict pad_sequence(const std::vector<TensorDict>& tds, const PadSequenceOptions& options = {});

// torch's *_like constructors applied to every tensor leaf (non-tensor data
// carried): same keys, batch size, names, dtypes and devices.
TensorDict zeros_like(const TensorDict& td);
TensorDict ones_like(const TensorDict& td);
TensorDict empty_like(const TensorDict& td);
TensorDict full_like(const TensorDict& td, const at::Scalar& fill_value);
TensorDict rand_like(const TensorDict& td);
TensorDict randn_like(const TensorDict& td);

}  // namespace tensordict
