// Leaves as views of one flat byte buffer (private): the mechanism shared by
// consolidate() and the device moves (to, pin_memory).
#pragma once

#include <ATen/core/Tensor.h>

#include <cstdint>
#include <optional>
#include <vector>

#include "tensordict/base.h"
#include "tensordict/detail/impl.h"

namespace tensordict::detail {

inline int64_t byte_size(const at::Tensor& t) { return t.numel() * static_cast<int64_t>(t.element_size()); }

inline int64_t align_up(int64_t offset, int64_t alignment) { return (offset + alignment - 1) / alignment * alignment; }

// Whether the bytes of `t` may be copied as they are into (or out of) a flat
// buffer and viewed there: a plain strided tensor with a storage and no
// autograd history to keep, no conj/neg bit, not nested, sparse or quantized.
bool flat_movable(const at::Tensor& t);

// A tensor of `dtype` with the given geometry (`offset` in elements of
// `dtype`) over the storage of `holder`, built below the dispatcher when it
// can be.
at::Tensor view_storage(const at::Tensor& holder, caffe2::TypeMeta dtype, at::IntArrayRef sizes, at::IntArrayRef strides,
                        int64_t offset);

// A C-contiguous tensor of `dtype` and `sizes` over `buffer` (a uint8
// tensor) from `byte_offset` on, a multiple of the dtype's size.
at::Tensor view_contiguous(const at::Tensor& buffer, caffe2::TypeMeta dtype, at::IntArrayRef sizes, int64_t byte_offset);

// `like`'s dtype and shape over `buffer` (a fresh uint8 tensor) from
// `byte_offset` on: with `like`'s strides when `keep_strides` and `like` is
// dense (its bytes then copy as one block), else contiguous. `byte_offset`
// must be a multiple of like's element size.
at::Tensor view_at(const at::Tensor& buffer, const at::Tensor& like, int64_t byte_offset, bool keep_strides);

// `n` bytes of `buffer` (a fresh uint8 tensor) from `byte_offset` on.
at::Tensor bytes_at(const at::Tensor& buffer, int64_t byte_offset, int64_t n);

// The tensor leaves of `td` at every depth, in the order every walk visits
// them (the order with_leaves takes them back in).
std::vector<at::Tensor> tensor_leaves(const TensorDictImpl& td, const char* op);

// `td`'s structure (nested levels, non-tensor data, batch sizes, names) over
// new tensor leaves, given in tensor_leaves' order; `device` is the device of
// the result's levels.
TensorDict with_leaves(const TensorDict& td, const std::vector<at::Tensor>& leaves, std::optional<at::Device> device,
                       const char* op);

}  // namespace tensordict::detail
