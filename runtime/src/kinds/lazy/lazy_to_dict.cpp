// to_dict() of a lazy stack: KindOps::check_to_dict.
#include "kinds/lazy/lazy_impl.h"
#include "tensordict/errors.h"
#include "tensordict/lazy.h"

namespace tensordict::detail {

// tensordict's message: a dict cannot hold what only some members have.
void lazy_check_to_dict(const TensorDict& td) {
  for (const auto& own : LazyStackedTensorDict(td).exclusive_keys()) {
    if (!own.empty()) throw RuntimeError("the method to_dict cannot complete when there are exclusive keys.");
  }
}

}  // namespace tensordict::detail
