// A lazy stack made dense: densify, maybe_dense_stack and dense_stack_tds
// of lazy stacks (tensordict's _lazy.py densify, _torch_func.py _stack with
// maybe_dense_stack, functional.py dense_stack_tds); KindOps::densify,
// maybe_dense_stack, dense_stack_tds.
#include <ATen/ATen.h>

#include <algorithm>
#include <optional>
#include <stdexcept>

#include "core/entry_writes.h"
#include "core/format.h"
#include "kinds/lazy/lazy_impl.h"
#include "tensordict/errors.h"
#include "tensordict/lazy.h"

namespace tensordict::detail {

namespace {

// The members' tensors at `key` (nullopt where a member lacks it) as one
// tensor: stacked when their shapes agree, else a nested tensor in which a
// missing one reads as empty along its last dim (tensordict's new_zeros(
// shape[:-1] + (0,))).
at::Tensor dense_tensor(const Stacked& lazy, const std::string& key, const std::vector<std::optional<at::Tensor>>& parts) {
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
    rethrow_for_key("densify", NestedKey(key));
  }
}

}  // namespace

// One lazy stack made dense, level by level.
TensorDict lazy_densify(const TensorDict& td) {
  const Stacked& lazy = lazy_of(td);
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

// Lazy stacks of as many members along the same dim: stacked member by
// member, the result lazy along the shifted stack dim; nullopt for other
// inputs. `dim` is wrapped.
std::optional<TensorDict> lazy_maybe_dense_stack(const std::vector<TensorDict>& tds, int64_t dim) {
  const auto* first = as_lazy(*tds.front().impl());
  const bool member_wise = !first->members().empty() && std::all_of(tds.begin(), tds.end(), [&](const TensorDict& td) {
    const auto* lazy = as_lazy(*td.impl());
    return lazy && lazy->stack_dim() == first->stack_dim() && lazy->members().size() == first->members().size() &&
           td.batch_size() == tds.front().batch_size();
  });
  if (!member_wise) return std::nullopt;
  int64_t stack_dim = first->stack_dim();
  const int64_t member_dim = dim <= stack_dim ? dim : dim - 1;
  if (dim <= stack_dim) ++stack_dim;
  std::vector<TensorDict> members;
  for (std::size_t i = 0; i < first->members().size(); ++i) {
    std::vector<TensorDict> row;
    for (const auto& td : tds) row.push_back(as_lazy(*td.impl())->members()[i]);
    members.push_back(tensordict::maybe_dense_stack(row, member_dim));
  }
  return TensorDict(lazy_stack(members, stack_dim));
}

TensorDict lazy_dense_stack_tds(const TensorDict& td) {
  const Stacked& lazy = lazy_of(td);
  if (lazy.members().empty()) return td;
  return tensordict::maybe_dense_stack(lazy.members(), lazy.stack_dim());
}

}  // namespace tensordict::detail
