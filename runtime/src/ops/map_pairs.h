// map_pairs: the one mechanism behind ops between two tensordicts (private).
//
// Leaves are paired by key path; keys present in one operand only follow
// tensordict's `default=` rule (MissingKeys). The result has `a`'s structure
// (plus `b`-only keys when missing entries are filled).
#pragma once

#include <c10/util/FunctionRef.h>

#include "kinds/dense/dense_impl.h"

namespace tensordict::detail {

using PairFn = c10::function_ref<at::Tensor(const at::Tensor& a, const at::Tensor& b)>;

// The op itself on a nested lazy stack of `a` whose stack dim lies inside
// a's batch dims and its partner in `b`: for ops whose pair function depends
// on where the batch dims are (where's batch-shaped condition); the nested
// stack runs it member by member. Without one, such a stack is paired member
// by member with fn.
using PairNestedOp = c10::function_ref<TensorDict(const TensorDict& a, const TensorDict& b)>;

// What a pair op makes of two non-tensor entries at one key. Carry: the
// first operand's (arithmetic). Otherwise fn runs on their elements' value
// ids (shared_value_ids: equal values, equal ids) over the level's batch:
// Compare keeps fn's result, a bool tensor (==, != compare element-wise, as
// in tensordict); Select reads the ids fn picks back as values (where picks
// per element).
enum class NonTensorPairs { Carry, Compare, Select };

std::shared_ptr<DenseImpl> map_pairs(const TensorDictImpl& a, const TensorDictImpl& b, PairFn fn, const MissingKeys& missing,
                                     const char* op, NonTensorPairs non_tensor = NonTensorPairs::Carry,
                                     const PairNestedOp* nested = nullptr);

// In place: a's leaves are updated by fn(a_leaf, b_leaf) (fn writes into
// a_leaf), with map_pairs' pairing rules.
void update_pairs(const TensorDictImpl& a, const TensorDictImpl& b, c10::function_ref<void(at::Tensor&, const at::Tensor&)> fn,
                  const MissingKeys& missing, const char* op);

}  // namespace tensordict::detail
