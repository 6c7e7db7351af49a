// What is generic about a tensordict stacked from parts (core/kind_ops.h).
#include <fmt/format.h>

#include "core/kind_ops.h"
#include "tensordict/errors.h"

namespace tensordict::detail {

std::vector<TensorDict> parts_for_members(const StackedParts& parts, const TensorDict& other, const char* op) {
  std::vector<TensorDict> out;
  const auto theirs = stacked_parts(*other.impl());
  if (theirs && theirs->dim == parts.dim) {
    out = theirs->members;
  } else {
    for (auto& part : other.unbind(parts.dim)) out.emplace_back(std::move(part));
  }
  if (out.size() != parts.members.size()) {
    throw ValueError(fmt::format("{}: a stack of {} tensordicts cannot take {} along its stack dim", op,
                                 parts.members.size(), out.size()));
  }
  return out;
}

}  // namespace tensordict::detail
