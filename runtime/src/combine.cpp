// stack and cat: one tensordict from several, leaf by leaf.
#include <ATen/ATen.h>

#include <set>
#include <stdexcept>
#include <string_view>

#include "dense_impl.h"
#include "format.h"
#include "map_leaves.h"
#include "tensordict/dense.h"
#include "tensordict/functional.h"
#include "tensordict/non_tensor.h"

namespace tensordict {


namespace {

std::set<std::string> key_set(const TensorDictImpl& td) {
  std::set<std::string> keys;
  td.for_each_key([&](const std::string& key, EntryKind) { keys.insert(key); });
  return keys;
}

// The members' dense storage when every member is dense with the first
// member's keys in the same order (then entry i of each member has the same
// key, and the result can share the first member's key table); else empty.
std::vector<const detail::DenseImpl*> aligned_dense(const std::vector<TensorDictBase>& tds) {
  std::vector<const detail::DenseImpl*> out;
  out.reserve(tds.size());
  for (const auto& td : tds) {
    const auto* dense = dynamic_cast<const detail::DenseImpl*>(td.impl().get());
    if (!dense) return {};
    const auto& first = out.empty() ? dense->key_table() : out.front()->key_table();
    if (dense->key_table() != first && dense->key_table()->keys() != first->keys()) return {};
    out.push_back(dense);
  }
  return out;
}

// Every member must have the first member's keys at this level.
void check_same_keys(const std::vector<TensorDictBase>& tds, const char* op, const std::vector<std::string>& prefix) {
  if (!aligned_dense(tds).empty()) return;  // same keys in the same order
  const auto* first = dynamic_cast<const detail::DenseImpl*>(tds.front().impl().get());
  std::optional<std::set<std::string>> reference;
  for (std::size_t i = 1; i < tds.size(); ++i) {
    const auto* dense = dynamic_cast<const detail::DenseImpl*>(tds[i].impl().get());
    if (first && dense && first->key_table() == dense->key_table()) continue;  // shared table: same keys
    if (!reference) reference = key_set(*tds.front().impl());
    const auto keys = key_set(*tds[i].impl());
    if (keys == *reference) continue;
    std::vector<std::string> missing, extra;
    std::set_difference(reference->begin(), reference->end(), keys.begin(), keys.end(), std::back_inserter(missing));
    std::set_difference(keys.begin(), keys.end(), reference->begin(), reference->end(), std::back_inserter(extra));
    const std::string where = prefix.empty() ? "" : " at " + NestedKey(prefix).repr();
    throw std::runtime_error(fmt::format("{}: tensordict {} has different keys than tensordict 0{}: missing [{}], extra [{}]",
                                         op, i, where, fmt::join(missing, ", "), fmt::join(extra, ", ")));
  }
}

const char* kind_of(const Value& v) {
  return v.is_tensor() ? "a tensor" : v.is_tensordict() ? "a tensordict" : "non-tensor data";
}

std::optional<at::Device> common_device(const std::vector<TensorDictBase>& tds) {
  auto device = tds.front().device();
  for (const auto& td : tds) {
    if (td.device() != device) return std::nullopt;
  }
  return device;
}

// Combines the members level by level: `leaves` merges the tensors of one key,
// `batch` gives a level's combined batch size from its members' batch sizes.
struct Combiner {
  const char* op;
  c10::function_ref<at::Tensor(const std::vector<at::Tensor>&)> leaves;
  c10::function_ref<std::vector<int64_t>(const std::vector<TensorDictBase>&)> batch;
  // A level's names from its members' (tensordict's _torch_func.py rules).
  c10::function_ref<Names(const std::vector<TensorDictBase>&)> names;

  Value combine_non_tensor(const std::vector<TensorDictBase>& tds, const std::vector<Value>& members, const NestedKey& path) {
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

  TensorDict run(const std::vector<TensorDictBase>& tds, std::vector<std::string>& prefix) {
    check_same_keys(tds, op, prefix);
    const auto dense = aligned_dense(tds);
    if (!dense.empty()) return run_aligned(tds, dense, prefix);
    auto out = std::make_shared<detail::DenseImpl>(batch(tds), common_device(tds), names(tds));
    std::vector<Value> members;
    members.reserve(tds.size());
    tds.front().impl()->for_each([&](const std::string& key, const Value&) {
      members.clear();
      for (const auto& td : tds) members.push_back(*td.impl()->find(key));
      prefix.push_back(key);
      out->insert(key, combine_entry(tds, members, prefix));
      prefix.pop_back();
    });
    return TensorDict(TensorDictBase(out));
  }

  // The common case: dense members with the same keys in the same order.
  // Entries are taken by position (no lookup) and the result shares the
  // first member's key table (no key is copied).
  TensorDict run_aligned(const std::vector<TensorDictBase>& tds, const std::vector<const detail::DenseImpl*>& dense,
                         std::vector<std::string>& prefix) {
    // This level's checks come before its nested levels' (as in run()).
    std::vector<int64_t> level_batch = batch(tds);
    Names level_names = detail::checked_names(names(tds), level_batch.size());
    const auto& table = dense.front()->key_table();
    std::vector<Value> values;
    values.reserve(table->size());
    std::vector<Value> members;
    members.reserve(tds.size());
    for (std::size_t k = 0; k < table->size(); ++k) {
      members.clear();
      for (const auto* d : dense) members.push_back(d->values()[k]);
      prefix.push_back(table->keys()[k]);
      values.push_back(combine_entry(tds, members, prefix));
      prefix.pop_back();
    }
    return TensorDict(TensorDictBase(std::make_shared<detail::DenseImpl>(table, std::move(values), std::move(level_batch),
                                                                         common_device(tds), std::move(level_names))));
  }

  // The combined value of one key (`prefix` ends with it) from the members' values.
  Value combine_entry(const std::vector<TensorDictBase>& tds, const std::vector<Value>& members,
                      std::vector<std::string>& prefix) {
    const Value& first = members.front();
    for (std::size_t i = 1; i < members.size(); ++i) {
      if (kind_of(members[i]) != kind_of(first)) {
        throw std::runtime_error(fmt::format("{}: key {} is {} in tensordict 0 but {} in tensordict {}", op,
                                             NestedKey(prefix).repr(), kind_of(first), kind_of(members[i]), i));
      }
    }
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
    std::vector<TensorDictBase> nested;
    nested.reserve(members.size());
    for (const auto& m : members) nested.push_back(m.tensordict());
    return Value(run(nested, prefix));
  }

  std::vector<at::Tensor> tensors_;  // scratch for one key's tensors
};

void check_nonempty(const std::vector<TensorDictBase>& tds, const char* op) {
  if (tds.empty()) throw std::invalid_argument(fmt::format("{} needs at least one tensordict", op));
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

TensorDict stack(const std::vector<TensorDictBase>& tds, int64_t dim) {
  check_nonempty(tds, "stack");
  const auto reference = tds.front().batch_size();
  for (std::size_t i = 1; i < tds.size(); ++i) {
    if (tds[i].batch_size() != reference) {
      throw std::runtime_error(fmt::format("stack: tensordict {} has batch size {} but tensordict 0 has {}; stacked tensordicts need equal batch sizes (lazy_stack accepts different ones)",
                                           i, shape_string(tds[i].batch_size()), shape_string(reference)));
    }
  }
  const int64_t d = wrap_batch_dim(dim, static_cast<int64_t>(reference.size()), "stack", 1);
  const auto n = static_cast<int64_t>(tds.size());
  auto leaves = [&](const std::vector<at::Tensor>& ts) { return at::stack(ts, d); };
  auto batch = [&](const std::vector<TensorDictBase>& level) {
    auto b = level.front().batch_size().vec();
    b.insert(b.begin() + d, n);
    return b;
  };
  // Members with the same names keep them; otherwise the result is unnamed.
  auto names = [&](const std::vector<TensorDictBase>& level) {
    Names out = level.front().names();
    for (const auto& td : level) {
      if (td.names() != out) return Names(level.front().batch_dims() + 1, std::nullopt);
    }
    out.insert(out.begin() + d, std::nullopt);
    return out;
  };
  std::vector<std::string> prefix;
  Combiner combiner{"stack", leaves, batch, names, {}};
  return combiner.run(tds, prefix);
}

TensorDict cat(const std::vector<TensorDictBase>& tds, int64_t dim) {
  check_nonempty(tds, "cat");
  const auto reference = tds.front().batch_size();
  const int64_t d = wrap_batch_dim(dim, static_cast<int64_t>(reference.size()), "cat");
  for (std::size_t i = 1; i < tds.size(); ++i) {
    auto b = tds[i].batch_size();
    bool ok = b.size() == reference.size();
    for (std::size_t j = 0; ok && j < b.size(); ++j) ok = static_cast<int64_t>(j) == d || b[j] == reference[j];
    if (!ok) {
      throw std::runtime_error(fmt::format("cat: tensordict {} has batch size {} but tensordict 0 has {}; batch sizes must match except in dim {}",
                                           i, shape_string(b), shape_string(reference), d));
    }
  }
  auto leaves = [&](const std::vector<at::Tensor>& ts) { return at::cat(ts, d); };
  auto batch = [&](const std::vector<TensorDictBase>& level) {
    auto b = level.front().batch_size().vec();
    b[d] = 0;
    for (const auto& td : level) b[d] += td.batch_size()[d];
    return b;
  };
  auto names = [](const std::vector<TensorDictBase>& level) { return level.front().names(); };  // the first member's
  std::vector<std::string> prefix;
  Combiner combiner{"cat", leaves, batch, names, {}};
  return combiner.run(tds, prefix);
}

namespace {
// tensordict's out= of torch.stack / torch.cat: the result is written into
// out's tensors (whatever out's kind), whose batch size must be the result's.
TensorDictBase& write_out(TensorDictBase& out, const TensorDict& result, const char* op) {
  if (out.batch_size() != result.batch_size()) {
    throw std::runtime_error(fmt::format("{}: out.batch_size and {} batch size must match, got out.batch_size={} and batch_size={}",
                                         op, std::string_view(op) == "stack" ? "stacked" : "cat", shape_string(out.batch_size()),
                                         shape_string(result.batch_size())));
  }
  return out.update_(result);
}
}  // namespace

TensorDictBase& stack_out(TensorDictBase& out, const std::vector<TensorDictBase>& tds, int64_t dim) {
  return write_out(out, stack(tds, dim), "stack");
}

TensorDictBase& cat_out(TensorDictBase& out, const std::vector<TensorDictBase>& tds, int64_t dim) {
  return write_out(out, cat(tds, dim), "cat");
}

}  // namespace tensordict
