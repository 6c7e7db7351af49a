// stack and cat: one tensordict from several, leaf by leaf.
#include <ATen/ATen.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <map>
#include <set>
#include <stdexcept>
#include <string_view>

#include "kinds/dense/dense_impl.h"
#include "kinds/kind_cast.h"
#include "core/format.h"
#include "core/kind_ops.h"
#include "kinds/dense/map_leaves.h"
#include "tensordict/base.h"
#include "tensordict/errors.h"
#include "tensordict/functional.h"
#include "tensordict/detail/impl.h"
#include "tensordict/non_tensor.h"
#include "tensordict/detail/shape_plan.h"
#include "core/unbatched.h"
#include "core/value_kind.h"

namespace tensordict {


namespace {

std::set<std::string> key_set(const TensorDictImpl& td) {
  std::set<std::string> keys;
  td.for_each_key([&](const std::string& key, EntryKind) { keys.insert(key); });
  return keys;
}

// The members' dense storage when every member is dense with the first
// member's keys in the same order and no hole in its key table (then entry i of each member has the same
// key, and the result can share the first member's key table); else empty.
std::vector<const detail::DenseImpl*> aligned_dense(const std::vector<TensorDict>& tds) {
  std::vector<const detail::DenseImpl*> out;
  out.reserve(tds.size());
  for (const auto& td : tds) {
    const auto* dense = detail::kind_cast<detail::DenseImpl>(td.impl().get());
    if (!dense || dense->key_table()->has_holes()) return {};
    const auto& first = out.empty() ? dense->key_table() : out.front()->key_table();
    if (dense->key_table() != first && !dense->key_table()->same_layout(*first)) return {};
    out.push_back(dense);
  }
  return out;
}

// The cat of the first of `tds` whose kind concatenates itself (a lazy
// stack: tensordict's _lazy_cat), or null.
auto own_cat(const std::vector<TensorDict>& tds) -> decltype(detail::KindOps::cat) {
  for (const auto& td : tds) {
    if (const auto own = detail::kind_ops(*td.impl()).cat) return own;
  }
  return nullptr;
}

// Every member must have the first member's keys at this level.
void check_same_keys(const std::vector<TensorDict>& tds, const char* op, const std::vector<std::string>& prefix) {
  if (!aligned_dense(tds).empty()) return;  // same keys in the same order
  const auto* first = detail::kind_cast<detail::DenseImpl>(tds.front().impl().get());
  std::optional<std::set<std::string>> reference;
  for (std::size_t i = 1; i < tds.size(); ++i) {
    const auto* dense = detail::kind_cast<detail::DenseImpl>(tds[i].impl().get());
    if (first && dense && first->key_table() == dense->key_table()) continue;  // shared table: same keys
    if (!reference) reference = key_set(*tds.front().impl());
    const auto keys = key_set(*tds[i].impl());
    if (keys == *reference) continue;
    std::vector<std::string> missing, extra;
    std::set_difference(reference->begin(), reference->end(), keys.begin(), keys.end(), std::back_inserter(missing));
    std::set_difference(keys.begin(), keys.end(), reference->begin(), reference->end(), std::back_inserter(extra));
    const std::string where = prefix.empty() ? "" : " at " + NestedKey(prefix).repr();
    throw RuntimeError(fmt::format("{}: tensordict {} has different keys than tensordict 0{}: missing [{}], extra [{}]",
                                         op, i, where, fmt::join(missing, ", "), fmt::join(extra, ", ")));
  }
}

std::optional<at::Device> common_device(const std::vector<TensorDict>& tds) {
  auto device = tds.front().device();
  for (const auto& td : tds) {
    if (td.device() != device) return std::nullopt;
  }
  return device;
}

// Combines the members level by level: `leaves` merges the tensors of one key,
// `plan` gives a level's combined batch size and names from its members'
// (shape::stacked or shape::concatenated).
struct Combiner {
  const char* op;
  c10::function_ref<at::Tensor(const std::vector<at::Tensor>&)> leaves;
  c10::function_ref<shape::Combined(const std::vector<TensorDict>&)> plan;
  // The op on nested levels among which is a lazy stack (its members may
  // differ in shape), or nullopt to combine them level by level.
  c10::function_ref<std::optional<TensorDict>(const std::vector<TensorDict>&)> lazy_levels;

  // This level's plan; a nested level's errors name its key.
  shape::Combined level_plan(const std::vector<TensorDict>& tds, const std::vector<std::string>& prefix) {
    if (prefix.empty()) return plan(tds);
    try {
      return plan(tds);
    } catch (...) {
      detail::rethrow_for_key(op, NestedKey(prefix));
    }
  }

  Value combine_non_tensor(const std::vector<TensorDict>& tds, const std::vector<Value>& members, const NestedKey& path) {
    std::vector<NonTensorData> items;
    std::vector<std::vector<int64_t>> batches;
    for (std::size_t i = 0; i < members.size(); ++i) {
      items.push_back(members[i].non_tensor());
      batches.push_back(tds[i].batch_size().vec());
    }
    try {
      return detail::combine_non_tensor(items, batches, leaves);
    } catch (...) {
      detail::rethrow_for_key(op, path);
    }
  }

  TensorDict run(const std::vector<TensorDict>& tds, std::vector<std::string>& prefix) {
    // This level's batch sizes are checked first, then its keys, then its
    // nested levels.
    shape::Combined level = level_plan(tds, prefix);
    check_same_keys(tds, op, prefix);
    const auto dense = aligned_dense(tds);
    if (!dense.empty()) return run_aligned(tds, dense, std::move(level), prefix);
    auto out = std::make_shared<detail::DenseImpl>(std::vector<int64_t>(level.batch.begin(), level.batch.end()),
                                                   common_device(tds), std::move(level.names));
    std::vector<Value> members;
    members.reserve(tds.size());
    tds.front().impl()->for_each([&](const std::string& key, const Value&) {
      members.clear();
      for (const auto& td : tds) members.push_back(*td.impl()->find(key));
      prefix.push_back(key);
      out->insert(key, combine_entry(tds, members, prefix));
      prefix.pop_back();
    });
    return TensorDict(TensorDict(out));
  }

  // The common case: dense members with the same keys in the same order.
  // Entries are taken by position (no lookup) and the result shares the
  // first member's key table (no key is copied).
  TensorDict run_aligned(const std::vector<TensorDict>& tds, const std::vector<const detail::DenseImpl*>& dense,
                         shape::Combined level, std::vector<std::string>& prefix) {
    std::vector<int64_t> level_batch(level.batch.begin(), level.batch.end());
    Names level_names = detail::checked_names(std::move(level.names), level_batch.size());
    const auto& table = dense.front()->key_table();
    std::vector<Value> values;
    values.reserve(table->size());
    std::vector<Value> members;
    members.reserve(tds.size());
    for (std::size_t k = 0; k < table->size(); ++k) {  // no holes (aligned_dense)
      members.clear();
      for (const auto* d : dense) members.push_back(d->values()[k]);
      prefix.push_back(table->key(k));
      values.push_back(combine_entry(tds, members, prefix));
      prefix.pop_back();
    }
    return TensorDict(TensorDict(std::make_shared<detail::DenseImpl>(table, std::move(values), std::move(level_batch),
                                                                         common_device(tds), std::move(level_names))));
  }

  // The combined value of one key (`prefix` ends with it) from the members' values.
  Value combine_entry(const std::vector<TensorDict>& tds, const std::vector<Value>& members,
                      std::vector<std::string>& prefix) {
    const Value& first = members.front();
    for (std::size_t i = 1; i < members.size(); ++i) {
      if (detail::kind_of(members[i]) != detail::kind_of(first)) {
        throw RuntimeError(fmt::format("{}: key {} is {} in tensordict 0 but {} in tensordict {}", op,
                                             NestedKey(prefix).repr(), detail::kind_of(first),
                                             detail::kind_of(members[i]), i));
      }
    }
    if (first.is_unbatched()) return detail::first_unbatched(members);
    if (first.is_tensor()) {
      tensors_.resize(members.size());
      for (std::size_t i = 0; i < members.size(); ++i) tensors_[i] = members[i].tensor();
      try {
        return leaves(tensors_);
      } catch (...) {
        detail::rethrow_for_key(op, NestedKey(prefix));
      }
    }
    if (first.is_non_tensor()) return combine_non_tensor(tds, members, NestedKey(prefix));
    std::vector<TensorDict> nested;
    nested.reserve(members.size());
    for (const auto& m : members) nested.push_back(m.tensordict());
    // Levels one of which combines itself (a lazy stack: KindOps::cat, stack).
    if (std::any_of(nested.begin(), nested.end(), [](const TensorDict& n) { return detail::kind_ops(*n.impl()).cat != nullptr; })) {
      std::optional<TensorDict> combined;
      try {
        combined = lazy_levels(nested);
      } catch (...) {
        detail::rethrow_for_key(op, NestedKey(prefix));
      }
      if (combined) return Value(*combined);
    }
    return Value(run(nested, prefix));
  }

  std::vector<at::Tensor> tensors_;  // scratch for one key's tensors
};

void check_nonempty(const std::vector<TensorDict>& tds, const char* op) {
  if (tds.empty()) throw RuntimeError(fmt::format("{} needs at least one tensordict", op));
}

}  // namespace

namespace detail {

NonTensorData combine_non_tensor(const std::vector<NonTensorData>& items, const std::vector<std::vector<int64_t>>& batch_sizes,
                                 c10::function_ref<at::Tensor(const std::vector<at::Tensor>&)> join) {
  const NonTensorData& first = items.front();
  bool equal = !first.is_stack();
  for (const auto& item : items) equal = equal && item == first;
  if (equal) return first;
  auto pool = std::make_shared<std::vector<Json>>();
  std::vector<at::Tensor> ids;
  for (std::size_t i = 0; i < items.size(); ++i) {
    const auto offset = static_cast<int64_t>(pool->size());
    pool->insert(pool->end(), items[i].pool()->begin(), items[i].pool()->end());
    ids.push_back(items[i].is_stack() ? items[i].ids() + offset : at::full(batch_sizes[i], offset, at::kLong));
  }
  return NonTensorData::from_ids(std::move(pool), join(ids));
}

SharedValueIds shared_value_ids(const std::vector<NonTensorData>& items, at::IntArrayRef batch) {
  auto pool = std::make_shared<std::vector<Json>>();
  std::map<Json, int64_t> seen;  // Json's ordering: 1 and 1.0 are one value, as in Python
  SharedValueIds out;
  for (const auto& item : items) {
    // The item's pool ids mapped to shared ones.
    std::vector<int64_t> remap;
    remap.reserve(item.pool()->size());
    for (const Json& value : *item.pool()) {
      const auto [at, fresh] = seen.emplace(value, static_cast<int64_t>(pool->size()));
      if (fresh) pool->push_back(value);
      remap.push_back(at->second);
    }
    out.ids.push_back(item.is_stack() ? at::tensor(remap, at::kLong).index({item.ids()})
                                      : at::full(batch, remap.front(), at::kLong));
  }
  out.pool = std::move(pool);
  return out;
}

NonTensorData put_non_tensor(const NonTensorData& dest, at::IntArrayRef batch, const BatchIndex& index,
                             const NonTensorData& value) {
  // A single value's id is 0-dim: put() broadcasts it over the index. The
  // joined ids are fresh tensors (ids + offset, at::full), written in place.
  return combine_non_tensor({dest, value}, {batch.vec(), {}}, [&](const std::vector<at::Tensor>& ids) {
    index.put(ids[0], ids[1]);
    return ids[0];
  });
}

}  // namespace detail

namespace {

// A level's batch sizes, for the plans.
std::vector<at::IntArrayRef> batch_sizes(const std::vector<TensorDict>& level) {
  std::vector<at::IntArrayRef> out;
  out.reserve(level.size());
  for (const auto& td : level) out.push_back(td.batch_size());
  return out;
}

}  // namespace

TensorDict stack(const std::vector<TensorDict>& tds, int64_t dim) {
  check_nonempty(tds, "stack");
  // The combiner plans the top level before any leaf: that call wraps `d`,
  // and nested levels use the wrapped dim (a negative one counts from the
  // top level's batch).
  int64_t d = dim;
  auto plan = [&](const std::vector<TensorDict>& level) {
    std::vector<const Names*> names;
    for (const auto& td : level) names.push_back(&td.names());
    shape::Combined out = shape::stacked(batch_sizes(level), names, d);
    d = out.dim;
    return out;
  };
  auto leaves = [&](const std::vector<at::Tensor>& ts) { return at::stack(ts, d); };
  auto lazy_levels = [&](const std::vector<TensorDict>& level) -> std::optional<TensorDict> {
    const auto own = detail::kind_ops(*level.front().impl()).stack;
    return own ? own(level, d) : std::nullopt;
  };
  std::vector<std::string> prefix;
  Combiner combiner{"stack", leaves, plan, lazy_levels, {}};
  return combiner.run(tds, prefix);
}

TensorDict cat(const std::vector<TensorDict>& tds, int64_t dim) {
  check_nonempty(tds, "cat");
  if (const auto own = own_cat(tds)) return own(tds, dim);
  int64_t d = dim;  // wrapped by the top level's plan, as in stack()
  auto plan = [&](const std::vector<TensorDict>& level) {
    shape::Combined out = shape::concatenated(batch_sizes(level), level.front().names(), d);
    d = out.dim;
    return out;
  };
  auto leaves = [&](const std::vector<at::Tensor>& ts) { return at::cat(ts, d); };
  auto lazy_levels = [&](const std::vector<TensorDict>& level) { return std::optional<TensorDict>(own_cat(level)(level, d)); };
  std::vector<std::string> prefix;
  Combiner combiner{"cat", leaves, plan, lazy_levels, {}};
  return combiner.run(tds, prefix);
}

namespace {
// tensordict's out= of torch.stack / torch.cat: the result is written into
// out's tensors (whatever out's kind), whose batch size must be the result's.
TensorDict& write_out(TensorDict& out, const TensorDict& result, const char* op) {
  if (out.batch_size() != result.batch_size()) {
    throw RuntimeError(fmt::format("{}: out.batch_size and {} batch size must match, got out.batch_size={} and batch_size={}",
                                         op, std::string_view(op) == "stack" ? "stacked" : "cat", shape_string(out.batch_size()),
                                         shape_string(result.batch_size())));
  }
  return out.update_(result);
}
}  // namespace

TensorDict& stack_out(TensorDict& out, const std::vector<TensorDict>& tds, int64_t dim) {
  return write_out(out, stack(tds, dim), "stack");
}

TensorDict& cat_out(TensorDict& out, const std::vector<TensorDict>& tds, int64_t dim) {
  return write_out(out, cat(tds, dim), "cat");
}

}  // namespace tensordict
