// What is generic about a tensordict stacked from parts (core/kind_ops.h).
#include <fmt/format.h>

#include "core/kind_ops.h"
#include "tensordict/errors.h"

namespace tensordict::detail {

std::shared_ptr<TensorDictImpl> Stacked::map_stacked(
    c10::function_ref<TensorDict(const TensorDict&, std::size_t)> fn) const {
  const auto& parts = members();
  std::vector<TensorDict> out;
  out.reserve(parts.size());
  for (std::size_t i = 0; i < parts.size(); ++i) out.push_back(fn(parts[i], i));
  return restacked(std::move(out), stack_dim());
}

std::vector<TensorDict> parts_for_members(const Stacked& parts, const TensorDict& other, const char* op) {
  std::vector<TensorDict> out;
  const auto theirs = as_stacked(*other.impl());
  if (theirs && theirs->stack_dim() == parts.stack_dim()) {
    out = theirs->members();
  } else {
    for (auto& part : other.unbind(parts.stack_dim())) out.emplace_back(std::move(part));
  }
  if (out.size() != parts.members().size()) {
    throw ValueError(fmt::format("{}: a stack of {} tensordicts cannot take {} along its stack dim", op,
                                 parts.members().size(), out.size()));
  }
  return out;
}

}  // namespace tensordict::detail
