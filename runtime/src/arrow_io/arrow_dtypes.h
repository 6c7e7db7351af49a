// Tensor dtypes and Arrow's types, both ways (private).
#pragma once

#include <arrow/type_fwd.h>
#include <c10/core/ScalarType.h>

#include <memory>
#include <optional>
#include <string_view>

#include "tensordict/key.h"

namespace arrow::extension {
class FixedShapeTensorType;
}

namespace tensordict::detail::arrow_io {

// The tensor dtype of an Arrow integer, floating-point or boolean type;
// nullopt for any other type. uint16/32/64 where libtorch has no such dtype
// (before 2.3): TypeError naming the column `key`.
std::optional<at::ScalarType> tensor_dtype(const ::arrow::DataType& type, const NestedKey& key);
// The Arrow type of tensors of `dtype`; TypeError naming `key` and `op` for a
// dtype Arrow has no type for (bfloat16, complex).
std::shared_ptr<::arrow::DataType> arrow_type(at::ScalarType dtype, const NestedKey& key, std::string_view op);

// Whether columns of `type` convert to dense tensors (tensordict's
// _is_tensor_type): numbers and booleans, and fixed-size lists and
// arrow.fixed_shape_tensor columns of those.
bool is_tensor_type(const ::arrow::DataType& type);
// `type` as an arrow.fixed_shape_tensor extension type; nullptr for another.
const ::arrow::extension::FixedShapeTensorType* fixed_shape_tensor(const ::arrow::DataType& type);

}  // namespace tensordict::detail::arrow_io
