// Batch-shape ops planned once, for both layers.
//
// A plan is built from the source's batch size and dim names: it checks the
// arguments (tensordict's errors), and computes the result's batch size and
// names. Calling it on a leaf applies the op extended over the leaf's feature
// dims. The dynamic core runs a plan over every leaf of a tree (map_leaves),
// the typed layer over every tensor field (TensorClass's field visitor), so a
// tensordict and a tensorclass holding the same tensors agree by construction.
//
// Names: an unnamed source (no names, or none set) gives an unnamed result,
// whose `names` is empty.
#pragma once

#include <ATen/core/Tensor.h>
#include <c10/util/SmallVector.h>

#include <optional>
#include <string>
#include <vector>

#include "tensordict/key.h"

namespace tensordict {

using Names = std::vector<std::optional<std::string>>;

namespace shape {

// A batch size held inline up to 6 dims (plans allocate nothing for it).
using BatchDims = c10::SmallVector<int64_t, 6>;

// What every single-result plan gives.
struct Planned {
  BatchDims batch;
  Names names;  // empty: unnamed
  const char* op;
};

// reshape and view: a new batch shape (one dim may be -1); a view refuses a
// leaf that cannot be viewed so, as Tensor::view does.
class Reshape : public Planned {
 public:
  enum class Mode { Reshape, View };
  Reshape(at::IntArrayRef batch, at::IntArrayRef shape, Mode mode = Mode::Reshape);
  at::Tensor operator()(const at::Tensor& leaf) const;

 private:
  int64_t source_dims_;
  Mode mode_;
};

class Permute : public Planned {
 public:
  Permute(at::IntArrayRef batch, const Names& names, at::IntArrayRef dims);
  at::Tensor operator()(const at::Tensor& leaf) const;
  const std::vector<int64_t>& order() const { return order_; }  // wrapped

 private:
  std::vector<int64_t> order_;
};

class Transpose : public Planned {
 public:
  Transpose(at::IntArrayRef batch, const Names& names, int64_t dim0, int64_t dim1);
  at::Tensor operator()(const at::Tensor& leaf) const { return leaf.transpose(d0_, d1_); }
  int64_t dim0() const { return d0_; }  // wrapped
  int64_t dim1() const { return d1_; }

 private:
  int64_t d0_, d1_;
};

// Without a dim, every batch dim of size 1.
class Squeeze : public Planned {
 public:
  Squeeze(at::IntArrayRef batch, const Names& names, std::optional<int64_t> dim);
  at::Tensor operator()(const at::Tensor& leaf) const;
  // The dims removed, highest first.
  const std::vector<int64_t>& dropped() const { return drop_; }

 private:
  std::vector<int64_t> drop_;  // highest first
};

class Unsqueeze : public Planned {
 public:
  Unsqueeze(at::IntArrayRef batch, const Names& names, int64_t dim);
  at::Tensor operator()(const at::Tensor& leaf) const { return leaf.unsqueeze(d_); }
  int64_t dim() const { return d_; }  // wrapped

 private:
  int64_t d_;
};

// expand (keep_names) and broadcast_to: the new batch size's trailing dims
// broadcast against the current ones; expand reads -1 as "keep the dim".
class Expand : public Planned {
 public:
  enum Op { ExpandOp, BroadcastTo };
  Expand(at::IntArrayRef batch, const Names& names, at::IntArrayRef shape, Op op = ExpandOp);
  at::Tensor operator()(const at::Tensor& leaf) const;

 private:
  int64_t source_dims_;
};

// A source with no batch dims flattens to batch [1], as torch.flatten of a
// 0-dim tensor (tensordict's flatten).
class Flatten : public Planned {
 public:
  Flatten(at::IntArrayRef batch, const Names& names, int64_t start_dim, int64_t end_dim);
  at::Tensor operator()(const at::Tensor& leaf) const;

 private:
  int64_t start_, end_;
  bool from_scalar_batch_ = false;
};

class Unflatten : public Planned {
 public:
  Unflatten(at::IntArrayRef batch, const Names& names, int64_t dim, at::IntArrayRef sizes);
  at::Tensor operator()(const at::Tensor& leaf) const;

 private:
  int64_t source_dims_;
};

class Narrow : public Planned {
 public:
  Narrow(at::IntArrayRef batch, const Names& names, int64_t dim, int64_t start, int64_t length);
  at::Tensor operator()(const at::Tensor& leaf) const { return leaf.narrow(d_, start_, length_); }

 private:
  int64_t d_, start_, length_;
};

// Plans with several results (unbind, split): fn(leaf, out) writes one
// tensor per result.
struct PlannedPieces {
  std::vector<BatchDims> batches;
  Names names;  // every piece's; empty: unnamed
  const char* op;
};

class Unbind : public PlannedPieces {
 public:
  Unbind(at::IntArrayRef batch, const Names& names, int64_t dim);
  void operator()(const at::Tensor& leaf, at::Tensor* out) const;

 private:
  int64_t d_;
};

// Pieces of the given sizes along `dim` (split, chunk, tensor_split).
class Split : public PlannedPieces {
 public:
  Split(at::IntArrayRef batch, const Names& names, std::vector<int64_t> sizes, int64_t dim, const char* op = "split");
  void operator()(const at::Tensor& leaf, at::Tensor* out) const;
  const std::vector<int64_t>& sizes() const { return sizes_; }
  int64_t dim() const { return d_; }  // wrapped

 private:
  std::vector<int64_t> sizes_;
  int64_t d_;
};

// The piece sizes of split(split_size), chunk(chunks), tensor_split(sections)
// and tensor_split(indices) of a dim of size n, with torch's rules.
std::vector<int64_t> split_sizes(int64_t n, int64_t split_size);
std::vector<int64_t> chunk_sizes(int64_t n, int64_t chunks);
std::vector<int64_t> tensor_split_sizes(int64_t n, int64_t sections);
std::vector<int64_t> tensor_split_sizes(int64_t n, at::IntArrayRef indices);

// stack / cat of sources with these batch sizes: the result's batch size,
// names and the wrapped dim; tensordict's errors for batch sizes that do not
// match. A stack keeps the names when every source has the same (else it is
// unnamed); a cat takes the first source's.
struct Combined {
  BatchDims batch;
  Names names;
  int64_t dim;
};
Combined stacked(const std::vector<at::IntArrayRef>& batches, const std::vector<const Names*>& names, int64_t dim);
Combined concatenated(const std::vector<at::IntArrayRef>& batches, const Names& first_names, int64_t dim);

// tensordict's refine_names: `current` (one entry per batch dim) with the
// unnamed dims taking `wanted`'s names; a named dim must already have its
// name; one "..." entry stands for the dims not listed.
Names refined_names(const Names& current, const Names& wanted);

// Names as tensordict prints them in messages (a Python list: ['x', None]).
std::string names_repr(const Names& names);
// tensordict's rule for dim names: a name given to two dims is a ValueError
// ("Some dimension names are non-unique: ['x', 'x']."); unnamed dims may repeat.
void check_unique_names(const Names& names);

}  // namespace shape
}  // namespace tensordict
