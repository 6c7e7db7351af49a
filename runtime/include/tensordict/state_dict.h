// The types TensorDict::state_dict() returns: an ordered c10::Dict of
// IValues (tensors, nested dicts, the batch size and device), which libtorch
// serialises as it is (torch::pickle_save / torch::pickle_load).
#pragma once

#include <ATen/core/Dict.h>
#include <ATen/core/ivalue.h>

#include "tensordict/base.h"

namespace tensordict {

using StateDict = c10::Dict<std::string, c10::IValue>;

}  // namespace tensordict
