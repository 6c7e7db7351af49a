// One copy of an ensemble call (EnsembleModule, ensemble_forward): its
// input, and the module run with its parameters.
#pragma once

#include <cstdint>

#include "tensordict/nn/module_base.h"

namespace tensordict::nn::detail {

// ValueError unless `input`'s dim 0 is the copy dim (size `copies`) when
// the input is not expanded; `who` names the caller in the message.
void check_ensemble_input(const TensorDict& input, int64_t copies, bool expand_input, std::string_view who);
// What copy i reads: a shallow copy of `input` (expand_input) or input[i].
TensorDict ensemble_input(const TensorDict& input, int64_t i, bool expand_input);

// Runs `module` on `input` with `params` (laid out as from_module(module))
// swapped in. With gradient mode on and a tensor of `params` or `input`
// requiring gradients, the outputs (the result's tensors that are not the
// input's own) come from a custom autograd function whose backward runs the
// copy again under the forward's random states (CPU, and the CUDA devices of
// `params` and `input`) and its buffers' values, and passes the gradients to
// `params` and `input`; otherwise the call runs as is.
TensorDict run_copy(const ModulePtr& module, const TensorDict& params, const TensorDict& input);

}  // namespace tensordict::nn::detail
