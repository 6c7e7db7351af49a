// The two forms of a tensordict's repr (private): repr() picks one by the
// print options.
#pragma once

#include <string>

#include "tensordict/base.h"
#include "tensordict/print_options.h"

namespace tensordict::detail {

// set_printoptions(compact=true), the default: "TensorDict(batch_size=[3], fields={a: f32[]})".
std::string compact_repr(const TensorDict& td, const PrintOptions& options);
// compact=false: one "key: Tensor(shape=..., ...)" line per entry.
std::string detailed_repr(const TensorDict& td, const PrintOptions& options);

}  // namespace tensordict::detail
