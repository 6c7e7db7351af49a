// safetensors files, in tensordict 0.15's encoding (tensordict/_safetensors.py).
//
//   tensordict::to_safetensors(td, "policy.safetensors");
//   TensorDict td = tensordict::from_safetensors("policy.safetensors");
//
// Each tensor is stored under its nested key joined with "." (a state_dict's
// names); the structure (batch size and dim names of each level, the class of
// each tensorclass level, the stack dim of each lazy stack, the non-tensor
// values) is one JSON string under "tensordict" in the file's __metadata__,
// so the file tensordict writes and the one written here are the same bytes,
// and each loads the other's with its structure. Any other safetensors file
// (a model's weights from the Hugging Face Hub) loads as a nested TensorDict
// of batch size [], each name split on ".": the layout of from_module, which
// to_module writes into a model.
//
// The supported dtypes are those of tensordict's memmap format that
// safetensors has: F64, F32, F16, BF16, I64, I32, I16, I8, U8, BOOL and C64.
// A file is untrusted input: its header length, JSON, dtypes, shapes and
// offsets are bounded and checked (RuntimeError naming the file and what was
// expected) before anything is read.
#pragma once

#include <optional>
#include <string>

#include "tensordict/base.h"

namespace tensordict {

// Writes `td` to the safetensors file `path`, atomically (readers see the old
// file or the new one). TypeError for what safetensors cannot hold (a nested
// or sparse tensor, a non-tensor stack, a non-tensor value that is not JSON,
// a lazy stack whose members have different keys); ValueError when two keys
// join to the same name ("a.b" and ("a", "b")). Tensors on another device
// are written through the CPU; tensors sharing memory are written apart.
void to_safetensors(const TensorDict& td, const std::string& path);

// Reads a safetensors file (see above). With `device`, the tensors are loaded
// there and it is the result's device. A tensorclass level loads as a
// TensorDict holding its class name under kLoadedClassKey ("__class__"), as
// load_memmap gives it (a generated class's from_tensordict takes it).
TensorDict from_safetensors(const std::string& path, std::optional<at::Device> device = std::nullopt);

}  // namespace tensordict
