// The canonical JSON form of a tensordict that the interop suite compares
// between C++ and Python (run_interop.py computes the same form on its side).
//
//   tensor:           {"kind": "tensor", "dtype": "float32", "shape": [...],
//                      "data": hex of the C-contiguous bytes}
//   non-tensor data:  {"kind": "non_tensor", "value": <JSON>}
//   non-tensor stack: {"kind": "non_tensor_stack", "value": <nested lists>}
//   tensordict:       {"kind": "TensorDict", "batch_size": [...],
//                      "names": [...] or null, "class": "<class '...'>" or null,
//                      "entries": {key: node}}
//   lazy stack:       {"kind": "LazyStackedTensorDict", "batch_size": [...],
//                      "stack_dim": n, "members": [node, ...]}
//
// An h5-backed tensordict counts as a TensorDict. A tensordict loaded from a
// tensorclass directory whose class nobody registered reports the class that
// its kLoadedClassKey entry names.
#pragma once

#include <tensordict/tensordict.h>
#include <nlohmann/json.hpp>

namespace interop {

tensordict::Json canonical(const tensordict::TensorDict& td);
tensordict::Json canonical_tensor(const at::Tensor& t);

}  // namespace interop
