// The options of tensordict's ops, in one style: a struct per op family
// whose fields are tensordict's keyword arguments, with tensordict's
// defaults, given with designated initialisers:
//   td.keys({.include_nested = true, .leaves_only = true})
//   td.sum({0}, {.keepdim = true})
//   td.select({"a", "b"}, {.strict = false})
// (As UpdateOptions, ConsolidateOptions, MemmapOptions and H5Options.)
#pragma once

#include <c10/core/Device.h>
#include <c10/core/ScalarType.h>

#include <cstdint>
#include <optional>
#include <string_view>
#include <vector>

namespace tensordict {

// What leaves_only keeps (tensordict's is_leaf): tensors only, as
// tensordict's default _default_is_leaf, for which non-tensor data is no
// leaf; or tensors and non-tensor data (is_leaf=_is_leaf_nontensor).
enum class IsLeaf : uint8_t { Default, NonTensor };

// keys(), values(), items().
struct KeysOptions {
  // Nested tensordicts' keys too, each before its tensordict's own key.
  bool include_nested = false;
  // Only the leaves: no nested tensordict, and no non-tensor data unless
  // is_leaf says so.
  bool leaves_only = false;
  IsLeaf is_leaf = IsLeaf::Default;
};

// select(), select_(), split_keys(), split_keys_().
struct SelectOptions {
  // A missing key is a KeyError; else it is skipped.
  bool strict = true;
};

// separates().
struct SeparatesOptions {
  // A missing key is a KeyError (else it is skipped).
  bool strict = true;
  // Keep the nested levels the removal leaves empty (tensordict's
  // filter_empty=False).
  bool keep_empty = false;
};

// cat_tensors(), stack_tensors().
struct CombineTensorsOptions {
  // Keep the entries taken (else they are deleted).
  bool keep_entries = false;
};

// non_tensor_items().
struct NonTensorItemsOptions {
  // The non-tensor entries of every nested level too (else of this level).
  bool include_nested = false;
};

// rename_key_().
struct RenameKeyOptions {
  // A KeyError when the new key exists (else it is replaced).
  bool safe = false;
};

// bytes().
struct BytesOptions {
  // Count a tensor reached twice twice.
  bool count_duplicates = true;
};

// data_ptr().
struct DataPtrOptions {
  // The storage's data pointer rather than the tensor's.
  bool storage = false;
};

// clone(), empty().
struct CloneOptions {
  // clone: copy the tensors (else only the structure is new).
  bool recurse = true;
};
struct EmptyOptions {
  // Keep the nested structure, empty.
  bool recurse = false;
};

// allclose().
struct AllcloseOptions {
  double rtol = 1e-5;
  double atol = 1e-8;
  bool equal_nan = false;
};

// Reductions over batch dims (sum, mean, std, max(dim), ..., reduce).
struct ReduceOptions {
  // Keep the reduced dims, of size 1 (without dims: every dim of every leaf,
  // and the batch size becomes all ones).
  bool keepdim = false;
  // std and var: Bessel's correction.
  int64_t correction = 1;
  // sum, mean, nansum, nanmean, prod: each leaf is cast to it before the
  // reduction (tensordict's dtype=), which prevents overflows.
  std::optional<at::ScalarType> dtype = std::nullopt;
};

// tensordict's dim="feature": reductions then reduce each leaf's feature dims
// (those past the batch dims of the tensordict holding it), and the result
// keeps the batch size: td.sum(tensordict::feature). A tag, like
// std::nullopt, so that `{}` still means "no dims".
struct FeatureDims {
  struct Tag {};
  constexpr explicit FeatureDims(Tag) {}
};
inline constexpr FeatureDims feature{FeatureDims::Tag{}};

// quantile().
struct QuantileOptions {
  bool keepdim = false;
  // torch.quantile's: linear, lower, higher, midpoint or nearest.
  std::string_view interpolation = "linear";
};

// state_dict().
struct StateDictOptions {
  // Keep the tensors as they are (else detached).
  bool keep_vars = false;
  // Join nested keys with "." into one level.
  bool flatten = false;
};

// load_state_dict().
struct LoadStateDictOptions {
  // The keys must match exactly.
  bool strict = true;
  // Replace the tensors (else copy into the existing ones).
  bool assign = false;
  // The state dict was written with flatten.
  bool from_flatten = false;
};

// to(device), cuda().
struct ToOptions {
  // The copies may still run when the call returns (base.h, to()).
  bool non_blocking = false;
};

// set(key, value, options).
struct SetOptions {
  // Write a tensor into the existing tensor entry in place (set_), else set.
  bool inplace = false;
};

// TensorDict::from_dict().
struct FromDictOptions {
  std::optional<std::vector<int64_t>> batch_size = std::nullopt;
  std::optional<at::Device> device = std::nullopt;
  // Without a batch size: the longest leading shape every entry shares.
  bool auto_batch_size = false;
  // ... of at most this many dims.
  std::optional<int64_t> batch_dims = std::nullopt;
};

// A generated tensorclass's from_tensordict().
struct FromTensorDictOptions {
  // A key that is no field of the class is a KeyError (else it is left out).
  bool strict = true;
};

}  // namespace tensordict
