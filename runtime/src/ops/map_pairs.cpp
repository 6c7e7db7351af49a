#include "ops/map_pairs.h"

#include <ATen/ATen.h>

#include <stdexcept>

#include "core/format.h"
#include "core/kind_ops.h"
#include "kinds/dense/map_leaves.h"
#include "core/nesting.h"
#include "core/value_kind.h"
#include "tensordict/detail/impl.h"
#include "tensordict/non_tensor.h"

namespace tensordict::detail {

namespace {

[[noreturn]] void missing_key(const char* op, const NestedKey& key, const char* in, const char* not_in) {
  throw KeyError(fmt::format("{}: key {} is in the {} tensordict but not in the {}; pass MissingKeys::intersection() or "
                             "MissingKeys::fill(value) to combine tensordicts with different keys",
                             op, key.repr(), in, not_in));
}

struct Pairer {
  PairFn fn;
  const MissingKeys& missing;
  const char* op;
  NonTensorPairs non_tensor;
  std::vector<std::string> path;
  const PairNestedOp* nested_op = nullptr;
  std::size_t source_dims = 0;

  NestedKey here(const std::string& key) {
    path.push_back(key);
    NestedKey k(path);
    path.pop_back();
    return k;
  }

  at::Tensor call(const at::Tensor& x, const at::Tensor& y, const std::string& key) {
    try {
      return fn(x, y);
    } catch (...) {
      rethrow_for_key(op, here(key));
    }
  }

  // Two non-tensor entries of a level of batch size `batch`.
  Value non_tensor_pair(const NonTensorData& x, const NonTensorData& y, at::IntArrayRef batch, const std::string& key) {
    if (non_tensor == NonTensorPairs::Carry) return Value(x);
    const SharedValueIds shared = shared_value_ids({x, y}, batch);
    at::Tensor result = call(shared.ids[0], shared.ids[1], key);
    if (non_tensor == NonTensorPairs::Compare) return Value(std::move(result));
    return Value(NonTensorData::from_ids(shared.pool, std::move(result)));
  }

  // One side is absent: fill it, or recurse against an empty level.
  Value fill_one(const Value& present, bool present_is_a, const std::string& key) {
    if (present.is_tensor()) {
      const at::Tensor& t = present.tensor();
      const at::Tensor filled = at::full_like(t, missing.fill_value());
      return present.with_tensor(present_is_a ? call(t, filled, key) : call(filled, t, key));
    }
    if (present.is_non_tensor()) return present;
    const TensorDictImpl& level = *present.impl();
    DenseImpl empty(level.batch_size().vec(), level.device(), {});
    path.push_back(key);
    auto out = present_is_a ? run(level, empty) : run(empty, level);
    path.pop_back();
    return Value(TensorDict(out));
  }

  // A nested lazy stack in `a` is paired member by member with `b`'s parts
  // along its stack dim and stays lazy (tensordict's rule; its members may
  // not be stackable).
  Value nested(const TensorDict& a, const TensorDict& b) {
    auto lazy = as_stacked(*a.impl());
    if (!lazy) return Value(TensorDict(run(*a.impl(), *b.impl())));
    if (nested_op && static_cast<std::size_t>(lazy->stack_dim()) < source_dims) {
      try {
        return Value((*nested_op)(a, b));
      } catch (...) {
        rethrow_for_key(op, NestedKey(path));
      }
    }
    const auto parts = parts_for_members(*lazy, b, op);
    std::vector<TensorDict> members;
    for (std::size_t i = 0; i < parts.size(); ++i) members.emplace_back(run(*lazy->members()[i].impl(), *parts[i].impl()));
    return Value(TensorDict(lazy->named_like(std::move(members), lazy->stack_dim())));
  }

  std::shared_ptr<DenseImpl> run(const TensorDictImpl& a, const TensorDictImpl& b) {
    NestingGuard guard(op);
    auto out = std::make_shared<DenseImpl>(a.batch_size().vec(), a.device(), a.names());
    a.for_each([&](const std::string& key, const Value& va) {
      auto vb = b.find(key);
      if (!vb) {
        if (missing.policy() == MissingKeys::Policy::Error) missing_key(op, here(key), "first", "second");
        if (missing.policy() == MissingKeys::Policy::Fill) out->insert(key, fill_one(va, true, key));
        return;
      }
      if (va.is_tensor() != vb->is_tensor() || va.is_tensordict() != vb->is_tensordict()) {
        throw RuntimeError(fmt::format("{}: key {} is {} in the first tensordict but {} in the second", op,
                                             here(key).repr(), kind_of(va), kind_of(*vb)));
      }
      if (va.is_tensor()) {
        // An UnbatchedTensor on either side makes an unbatched result
        // (tensordict's UnbatchedTensor wraps what its ops return).
        at::Tensor result = call(va.tensor(), vb->tensor(), key);
        out->insert(key, va.is_unbatched() ? va.with_tensor(std::move(result)) : vb->with_tensor(std::move(result)));
      } else if (va.is_tensordict()) {
        path.push_back(key);
        out->insert(key, nested(va.tensordict(), vb->tensordict()));
        path.pop_back();
      } else {
        out->insert(key, non_tensor_pair(va.non_tensor(), vb->non_tensor(), a.batch_size(), key));
      }
    });
    b.for_each([&](const std::string& key, const Value& vb) {
      if (a.find(key)) return;
      if (missing.policy() == MissingKeys::Policy::Error) missing_key(op, here(key), "second", "first");
      if (missing.policy() == MissingKeys::Policy::Fill) out->insert(key, fill_one(vb, false, key));
    });
    return out;
  }
};

}  // namespace

std::shared_ptr<DenseImpl> map_pairs(const TensorDictImpl& a, const TensorDictImpl& b, PairFn fn, const MissingKeys& missing,
                                     const char* op, NonTensorPairs non_tensor, const PairNestedOp* nested) {
  Pairer pairer{fn, missing, op, non_tensor, {}, nested, a.batch_size().size()};
  return pairer.run(a, b);
}

void update_pairs(const TensorDictImpl& a, const TensorDictImpl& b, c10::function_ref<void(at::Tensor&, const at::Tensor&)> fn,
                  const MissingKeys& missing, const char* op) {
  // The pairing, its checks and its messages are map_pairs'; the "result"
  // of each pair is a's leaf itself, written in place.
  auto in_place = [&](const at::Tensor& x, const at::Tensor& y) {
    at::Tensor target = x;
    fn(target, y);
    return x;
  };
  // With MissingKeys::fill, a's leaves without a partner are combined with
  // the fill value; b-only keys are combined into scratch tensors and dropped
  // (a key cannot be created in place).
  map_pairs(a, b, in_place, missing, op);
}

}  // namespace tensordict::detail
