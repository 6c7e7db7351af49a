// SubTensorDict (tensordict's _SubTensorDict): a view of a tensordict at a
// batch index whose writes reach the source.
//
// get() reads the source's entry at the index; set() of an existing key
// writes into the source at the index, set() of a new key creates the entry
// in the source (zero outside the index; None for non-tensor data). A view
// cannot replace a source entry by another kind (a tensor where the source
// holds a tensordict): ValueError naming the key. Nested
// tensordicts are sub-views too; the source may be any kind (a lazy stack:
// writes reach its members). clone() and to_tensordict() give dense copies.
#pragma once

#include <vector>

#include "tensordict/base.h"

namespace tensordict {

class SubTensorDict : public TensorDict {
 public:
  SubTensorDict(const TensorDict& source, at::ArrayRef<TensorIndex> index);
  // Views `td` as a sub-view (as td.as<SubTensorDict>()); TypeError naming
  // both kinds if it is another kind.
  explicit SubTensorDict(const TensorDict& td);

  const TensorDict& source() const;
};

}  // namespace tensordict
