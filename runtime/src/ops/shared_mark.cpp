#include "ops/shared_mark.h"

#include "core/nesting.h"
#include "tensordict/detail/impl.h"

namespace tensordict::detail {

namespace {
// `td` and every tensordict it is made of (nested levels, a lazy stack's
// members), marked shared.
void mark_shared_tree(const TensorDict& td) {
  NestingGuard guard("share_memory_");
  td.impl()->set_marked_shared(true);
  td.impl()->for_each_child([](const TensorDict& part) { mark_shared_tree(part); });
}
}  // namespace

TensorDict keep_shared_mark(const TensorDict& source, TensorDict result) {
  if (!source.impl()->marked_shared()) return result;
  mark_shared_tree(result);
  // tensordict's invariant: a tensordict in shared memory is locked, so that
  // no entry outside shared memory joins it.
  result.lock_();
  return result;
}

std::vector<TensorDict> keep_shared_mark(const TensorDict& source, std::vector<TensorDict> results) {
  if (!source.impl()->marked_shared()) return results;
  for (auto& result : results) result = keep_shared_mark(source, std::move(result));
  return results;
}

}  // namespace tensordict::detail
