// Copies and leaf-wise conversions whose result is dense (ops/copies.cpp; private).
#pragma once

#include "kinds/dense/map_leaves.h"

namespace tensordict::detail {

// The dense tensordict of fn(leaf) over `td`'s batch size and names, whatever
// its kind (a lazy root is stacked): for ops whose result is dense. `check`:
// Planned for the functions that keep each leaf's shape.
TensorDict leafwise(const TensorDict& td, c10::function_ref<at::Tensor(const at::Tensor&)> fn, const char* op,
                    ShapeCheck check, OpKind kind = OpKind::Leafwise);
// A dense shallow copy (the structure; tensors shared where the kind stores
// them).
TensorDict dense_shallow_copy(const TensorDict& td, const char* op);

}  // namespace tensordict::detail
