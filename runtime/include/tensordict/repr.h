// Printing: tensordict's repr, byte for byte.
#pragma once

#include <ostream>
#include <string>

#include "tensordict/base.h"
#include "tensordict/print_options.h"

namespace tensordict {

// The compact form, the default:
//   TensorDict(batch_size=[3], fields={a: f32[], b: {c: i64[]}, s: str})
// each entry its dtype and its dims past the batch dims; on one line if it
// fits in 80 columns, else one entry per line. Under
// set_printoptions({.compact = false}) (print_options.h), the detailed form:
//   TensorDict(
//       fields={
//           a: Tensor(shape=torch.Size([3]), device=cpu, dtype=torch.float32, is_shared=False)},
//       batch_size=torch.Size([3]),
//       device=None,
//       is_shared=False)
std::string repr(const TensorDict& td);

std::ostream& operator<<(std::ostream& os, const TensorDict& td);

// fmt::format("{}", td): <tensordict/fmt.h>, apart so that this header (and
// every unit that prints) does not parse fmt.

}  // namespace tensordict
