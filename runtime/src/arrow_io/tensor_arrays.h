// Tensors as Arrow arrays (private): tensordict's _to_array for tensors.
#pragma once

#include <ATen/core/Tensor.h>
#include <arrow/type_fwd.h>

#include <memory>
#include <string_view>

#include "tensordict/key.h"

namespace tensordict::detail::arrow_io {

// `tensor` (any device) as an Arrow array of one row per element of its
// first dim: a primitive array for 1-D tensors (viewing the tensor's memory
// when it is contiguous on the CPU; booleans are packed as bits), an
// arrow.fixed_shape_tensor array for more dims, and a large_list array for a
// nested tensor whose components differ in their first dim only (a
// ValueError names `key` for another ragged dim). `op` names the caller in
// errors (to_arrow, to_parquet).
std::shared_ptr<::arrow::Array> tensor_array(const at::Tensor& tensor, const NestedKey& key, std::string_view op);

// A 1-D tensor as a primitive Arrow array (the same rules).
std::shared_ptr<::arrow::Array> primitive_array(const at::Tensor& tensor, const NestedKey& key, std::string_view op);

}  // namespace tensordict::detail::arrow_io
