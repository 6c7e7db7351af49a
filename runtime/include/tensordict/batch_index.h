// BatchIndex: an index over the batch dims of a tensordict, resolved once and
// applied to every leaf.
//
// tensordict indexes batch dims only: `td[..., 0]` selects along the *last
// batch* dim whatever the leaves' feature dims are. Resolving the index once
// against the batch shape turns it into plain per-dim steps (select, slice,
// unsqueeze) plus at most one advanced-indexing call, so each leaf costs one
// cheap view op per step and the result batch size is known without touching
// any leaf. A bool mask's nonzero() is computed here, once, not per leaf.
#pragma once

#include <ATen/TensorIndexing.h>

#include <optional>
#include <string>
#include <vector>

namespace tensordict {

using at::indexing::Ellipsis;
using at::indexing::None;
using at::indexing::Slice;
using at::indexing::TensorIndex;

class BatchIndex {
 public:
  // Resolves `index` against `batch_size`; throws, naming the batch size,
  // IndexError for an int out of range or too many indices, RuntimeError for
  // two ellipses, ValueError for a bad slice step or a mask of the wrong shape.
  BatchIndex(at::ArrayRef<TensorIndex> index, at::IntArrayRef batch_size);

  // The batch size of the indexed result: what `at::zeros(batch).index(index)`
  // would have as sizes.
  at::IntArrayRef result_batch_size() const { return result_batch_size_; }

  // The dim names of the result: a kept dim keeps its name; dims that None
  // or an advanced index create are unnamed.
  std::vector<std::optional<std::string>> result_names(const std::vector<std::optional<std::string>>& source) const;

  // How many batch dims of the source the index consumes from the front.
  int64_t consumed_dims() const { return consumed_dims_; }

  // True when the result of apply() is a view of the leaf (no advanced index).
  bool is_view() const { return !advanced_; }

  // leaf[index]: the leaf's leading batch dims indexed, feature dims untouched.
  at::Tensor apply(const at::Tensor& leaf) const;

  // leaf[index] = value, in place; `value` broadcasts to apply(leaf)'s shape.
  void put(const at::Tensor& leaf, const at::Tensor& value) const;

 private:
  enum class Op : uint8_t { Select, Slice, Unsqueeze };
  struct Step {
    Op op;
    int64_t dim;  // in the tensor as it is when the step runs
    int64_t start = 0;
    int64_t stop = 0;
    int64_t step = 1;
  };
  // The advanced (tensor) part, applied after the basic steps in one call.
  struct Advanced {
    // Per dim of the stepped tensor: the index tensor, or none (a full slice).
    c10::List<c10::optional<at::Tensor>> indices;
    int64_t dim = 0;  // the first indexed dim
    // Fast path when the only advanced index is a mask over `flatten_dims`
    // dims: its linear indices, for one index_select over the flattened dims.
    at::Tensor linear;
    int64_t flatten_dims = 1;
  };

  at::Tensor step_view(const at::Tensor& leaf) const;

  std::vector<Step> steps_;
  std::optional<Advanced> advanced_;
  std::vector<int64_t> result_batch_size_;
  // For each result dim, the source batch dim it comes from, or -1.
  std::vector<int64_t> result_origin_;
  int64_t consumed_dims_ = 0;
};

// The normalised dim for an op over `batch_dims` batch dims: negative dims count
// from the end of the batch. `extra` widens the range (1 for unsqueeze, which
// accepts batch_dims as a position). Throws naming `op` and the valid range.
int64_t wrap_batch_dim(int64_t dim, int64_t batch_dims, const char* op, int64_t extra = 0);

namespace detail {
// tensordict's _index_preserve_data_ptr: whether td[index] of a tensordict
// in shared memory is still marked shared (and locked). Every item must be
// an int, None, Ellipsis, or a slice starting at 0; a bool, a tensor, or a
// slice starting elsewhere gives an unmarked result, as in tensordict.
bool index_keeps_shared(at::ArrayRef<TensorIndex> index);

// leaf.reshape(batch followed by the leaf's dims past `batch_dims`). A
// contiguous leaf that needs no grad gets its view built directly, as
// BatchIndex does; anything else goes through at::reshape.
at::Tensor reshape_leaf(const at::Tensor& leaf, at::IntArrayRef batch, int64_t batch_dims);
// `index` with its Ellipsis spelled out as full slices over `batch_dims`
// dims (tensordict's convert_ellipsis_to_idx): the same index for a nested
// level that has more batch dims.
std::vector<TensorIndex> without_ellipsis(at::ArrayRef<TensorIndex> index, int64_t batch_dims);
// A lazy stack of tensordicts of different batch sizes reads -1 at the dims
// where they differ (tensordict's rule); an op that computes with the sizes
// refuses such a batch size: RuntimeError naming `op`.
void require_known_sizes(at::IntArrayRef batch_size, const char* op);
}  // namespace detail

}  // namespace tensordict
