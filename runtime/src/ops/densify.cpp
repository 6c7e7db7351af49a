// From lazy stacks to dense tensordicts: densify, maybe_dense_stack and
// dense_stack_tds (tensordict's _lazy.py densify, _torch_func.py _stack with
// maybe_dense_stack, functional.py dense_stack_tds).
#include <ATen/ATen.h>

#include <algorithm>
#include <optional>
#include <stdexcept>

#include "core/format.h"
#include "core/kind_ops.h"
#include "kinds/dense/map_leaves.h"
#include "tensordict/errors.h"
#include "tensordict/detail/impl.h"
#include "tensordict/lazy.h"

namespace tensordict {

namespace {

const detail::Stacked* as_stacked(const TensorDict& td) { return detail::as_stacked(*td.impl()); }

// The members' tensors at `key` (nullopt where a member lacks it) as one
// tensor: stacked when their shapes agree, else a nested tensor in which a
// missing one reads as empty along its last dim (tensordict's new_zeros(
// shape[:-1] + (0,))).
at::Tensor dense_tensor(const detail::Stacked& lazy, const std::string& key,
                        const std::vector<std::optional<at::Tensor>>& parts) {
  const at::Tensor& model = **std::find_if(parts.begin(), parts.end(), [](const auto& p) { return p.has_value(); });
  const bool same = std::all_of(parts.begin(), parts.end(), [&](const auto& p) { return p && p->sizes() == model.sizes(); });
  try {
    std::vector<at::Tensor> list;
    for (const auto& p : parts) {
      if (p) {
        list.push_back(*p);
        continue;
      }
      if (model.dim() == 0) {
        throw ValueError(fmt::format(
            "densify: key '{}' is missing from some members and its tensors have an empty shape: there is no dim to "
            "leave empty for them",
            key));
      }
      std::vector<int64_t> shape = model.sizes().vec();
      shape.back() = 0;
      list.push_back(at::zeros(shape, model.options()));
    }
    if (same) return at::stack(list, lazy.stack_dim());
    if (lazy.stack_dim() != 0) {
      throw ValueError(fmt::format(
          "densify: the members' tensors at key '{}' differ in shape and the stack dim is {}: a nested tensor stacks "
          "along dim 0 only",
          key, lazy.stack_dim()));
    }
    return at::_nested_tensor_from_tensor_list(list);
  } catch (const std::invalid_argument&) {
    throw;
  } catch (...) {
    detail::rethrow_for_key("densify", NestedKey(key));
  }
}

// One lazy stack made dense, level by level.
TensorDict densify_lazy(const TensorDict& td, const detail::Stacked& lazy) {
  TensorDict out = td.empty();
  std::vector<std::string> keys;  // every member's keys, in the order first met
  for (const auto& m : lazy.members()) {
    m.impl()->for_each_key([&](const std::string& key, EntryKind) {
      if (std::find(keys.begin(), keys.end(), key) == keys.end()) keys.push_back(key);
    });
  }
  for (const auto& key : keys) {
    std::vector<std::optional<Value>> values;
    for (const auto& m : lazy.members()) values.push_back(m.impl()->find(key));
    const bool all_tensors = std::all_of(values.begin(), values.end(), [](const auto& v) { return !v || v->is_tensor(); });
    if (all_tensors) {
      std::vector<std::optional<at::Tensor>> parts;
      for (const auto& v : values) parts.push_back(v ? std::optional<at::Tensor>(v->tensor()) : std::nullopt);
      out.impl()->insert(key, Value(dense_tensor(lazy, key, parts)));
      continue;
    }
    const auto stacked = td.impl()->find(key);  // nested levels and non-tensor data that every member has
    if (!stacked) {
      throw ValueError(fmt::format(
          "densify: key '{}' holds tensordicts or non-tensor data that not every member has; only tensors can be "
          "densified when some members lack them",
          key));
    }
    out.impl()->insert(key, stacked->is_tensordict() ? Value(stacked->tensordict().densify()) : *stacked);
  }
  return out;
}

// The same keys, of the same kinds, and tensors of the same shapes.
bool same_level(const std::vector<TensorDict>& tds) {
  const TensorDictImpl& first = *tds.front().impl();
  for (std::size_t i = 1; i < tds.size(); ++i) {
    const TensorDictImpl& other = *tds[i].impl();
    if (tds[i].batch_size() != tds.front().batch_size() || other.num_keys() != first.num_keys()) return false;
    bool same = true;
    first.for_each_key([&](const std::string& key, EntryKind) {
      if (!same) return;
      const auto a = first.find(key);
      const auto b = other.find(key);
      same = b && a->is_tensor() == b->is_tensor() && a->is_tensordict() == b->is_tensordict() &&
             (!a->is_tensor() || a->tensor().sizes() == b->tensor().sizes());
    });
    if (!same) return false;
  }
  return true;
}

}  // namespace

TensorDict TensorDict::densify() const {
  if (const auto* lazy = as_stacked(*this)) return densify_lazy(*this, *lazy);
  TensorDict out = empty();
  impl_->for_each([&](const std::string& key, const Value& value) {
    out.impl()->insert(key, value.is_tensordict() ? Value(value.tensordict().densify()) : value);
  });
  return out;
}

TensorDict maybe_dense_stack(const std::vector<TensorDict>& tds, int64_t dim) {
  if (tds.empty()) throw ValueError("maybe_dense_stack needs at least one tensordict");
  const int64_t d = wrap_batch_dim(dim, tds.front().batch_dims(), "maybe_dense_stack", 1);
  // Lazy stacks of as many members along the same dim: stacked member by
  // member, the result lazy along the shifted stack dim.
  const auto* first_lazy = as_stacked(tds.front());
  const bool member_wise = first_lazy && !first_lazy->members().empty() && std::all_of(tds.begin(), tds.end(), [&](const TensorDict& td) {
    const auto* lazy = as_stacked(td);
    return lazy && lazy->stack_dim() == first_lazy->stack_dim() && lazy->members().size() == first_lazy->members().size() &&
           td.batch_size() == tds.front().batch_size();
  });
  if (member_wise) {
    int64_t stack_dim = first_lazy->stack_dim();
    const int64_t member_dim = d <= stack_dim ? d : d - 1;
    if (d <= stack_dim) ++stack_dim;
    std::vector<TensorDict> members;
    for (std::size_t i = 0; i < first_lazy->members().size(); ++i) {
      std::vector<TensorDict> row;
      for (const auto& td : tds) row.push_back(as_stacked(td)->members()[i]);
      members.push_back(maybe_dense_stack(row, member_dim));
    }
    return lazy_stack(members, stack_dim);
  }
  if (!same_level(tds)) return lazy_stack(tds, d);
  // Dense at this level: the leaves through stack(), each nested level again.
  std::vector<NestedKey> leaves;
  tds.front().impl()->for_each_key([&](const std::string& key, EntryKind kind) {
    if (kind != EntryKind::TensorDict) leaves.emplace_back(key);
  });
  std::vector<TensorDict> leaf_parts;
  for (const auto& td : tds) leaf_parts.push_back(td.select(leaves));
  const TensorDict stacked = stack(leaf_parts, d);
  TensorDict out = stacked.empty();
  tds.front().impl()->for_each_key([&](const std::string& key, EntryKind kind) {
    if (kind != EntryKind::TensorDict) {
      out.impl()->insert(key, *stacked.impl()->find(key));
      return;
    }
    std::vector<TensorDict> nested;
    for (const auto& td : tds) nested.push_back(td.impl()->find(key)->tensordict());
    out.impl()->insert(key, Value(maybe_dense_stack(nested, d)));
  });
  return out;
}

TensorDict dense_stack_tds(const TensorDict& td) {
  const auto* lazy = as_stacked(td);
  if (!lazy || lazy->members().empty()) return td;
  return maybe_dense_stack(lazy->members(), lazy->stack_dim());
}

TensorDict dense_stack_tds(const std::vector<TensorDict>& tds, int64_t dim) { return maybe_dense_stack(tds, dim); }

}  // namespace tensordict
