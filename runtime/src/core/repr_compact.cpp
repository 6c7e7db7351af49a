// The compact repr of a tensordict (tensordict's _compact_entry,
// _compact_leaf, _compact_parts): built from metadata only, so that it reads
// no data, syncs no device and stacks no leaf of a lazy stack.
#include <ATen/ATen.h>
#include <nlohmann/json.hpp>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <variant>

#include "core/nesting.h"
#include "core/repr_forms.h"
#include "core/kind_ops.h"
#include "tensordict/detail/impl.h"
#include "tensordict/lazy.h"
#include "tensordict/non_tensor.h"
#include "tensordict/detail/tensorclass_support.h"

namespace tensordict::detail {

namespace {

// A tensor entry: its dims past the batch dims, dtype and devices.
struct Leaf {
  std::vector<int64_t> shape;
  at::ScalarType dtype;
  std::vector<std::string> devices;
};

CompactNode token(std::string key, std::string text) {
  CompactNode node;
  node.key = std::move(key);
  node.text = std::move(text);
  return node;
}

bool lazy_level(const TensorDict& td) { return as_stacked(*td.impl()) != nullptr; }

// An UnbatchedTensor shows its whole shape: it has no batch dims.
std::vector<int64_t> feature_shape(const TensorDict& td, const Value& value) {
  auto shape = leaf_shape(value.tensor());
  if (value.is_unbatched()) return shape;
  shape.erase(shape.begin(), shape.begin() + std::min<std::size_t>(shape.size(), td.batch_dims()));
  return shape;
}

// The Python type of a NonTensorData's value.
std::string json_type_name(const Json& value) {
  switch (value.type()) {
    case Json::value_t::string: return "str";
    case Json::value_t::boolean: return "bool";
    case Json::value_t::number_integer:
    case Json::value_t::number_unsigned: return "int";
    case Json::value_t::number_float: return "float";
    case Json::value_t::array: return "list";
    case Json::value_t::object: return "dict";
    default: return "NoneType";
  }
}

std::vector<CompactNode> body(const TensorDict& td, const PrintOptions& o);
CompactNode entry(const TensorDict& td, const std::string& key, const PrintOptions& o);

// A lazy stack's leaf: a dim that differs between members is -1 and the
// dtype is the promoted one, as the stacked tensor has. If a member holds a
// non-tensor value, the entry of that member, as when it comes first.
std::variant<Leaf, CompactNode> leaf(const TensorDict& td, const std::string& key, const PrintOptions& o) {
  const TensorDictImpl& impl = *td.impl();
  if (lazy_level(td)) {
    std::vector<std::vector<int64_t>> shapes;
    std::vector<at::ScalarType> dtypes;
    std::vector<std::string> devices;
    // Members of nested stacks in one loop, from the last as tensordict pops them.
    std::vector<TensorDict> members = LazyStackedTensorDict(td).tensordicts();
    while (!members.empty()) {
      const TensorDict sub = std::move(members.back());
      members.pop_back();
      if (lazy_level(sub)) {
        const auto& more = LazyStackedTensorDict(sub).tensordicts();
        members.insert(members.end(), more.begin(), more.end());
        continue;
      }
      auto part = leaf(sub, key, o);
      if (auto* node = std::get_if<CompactNode>(&part)) return std::move(*node);
      auto& l = std::get<Leaf>(part);
      shapes.push_back(std::move(l.shape));
      dtypes.push_back(l.dtype);
      devices.insert(devices.end(), l.devices.begin(), l.devices.end());
    }
    Leaf out{shapes.empty() ? std::vector<int64_t>{} : shapes.front(), at::kFloat, std::move(devices)};
    for (const auto& other : shapes) {
      if (other.size() != out.shape.size()) {
        out.shape = {-1};
        break;
      }
      for (std::size_t d = 0; d < other.size(); ++d) {
        if (other[d] != out.shape[d]) out.shape[d] = -1;
      }
    }
    if (!dtypes.empty()) out.dtype = dtypes.front();
    for (auto dtype : dtypes) out.dtype = at::promoteTypes(out.dtype, dtype);
    return out;
  }
  if (kind_ops(impl).compact_from_metadata) {
    // the dataset's metadata, not its data
    TensorMeta meta = impl.tensor_meta(key);
    meta.shape.erase(meta.shape.begin(), meta.shape.begin() + std::min<std::size_t>(meta.shape.size(), td.batch_dims()));
    return Leaf{std::move(meta.shape), meta.dtype, {meta.device.str()}};
  }
  const auto value = impl.find(key);
  if (!value) return token(key, "None");  // not reached: a stack's keys are its members'
  if (!value->is_tensor()) return entry(td, key, o);
  const at::Tensor& t = value->tensor();
  return Leaf{feature_shape(td, *value), t.scalar_type(), {t.device().str()}};
}

CompactNode entry(const TensorDict& td, const std::string& key, const PrintOptions& o) {
  const TensorDictImpl& impl = *td.impl();
  if (kind_ops(impl).owns_entries) {  // a dense level: its tensor entry read in place
    const auto value = impl.find(key);
    if (value && value->is_tensor()) {
      const at::Tensor& t = value->tensor();
      return token(key, compact_token(feature_shape(td, *value), t.scalar_type(), {t.device().str()}, td.device().has_value(), o));
    }
  }
  // the entry of the first member decides what the entry of a lazy stack is
  TensorDict first = td;
  while (lazy_level(first) && !LazyStackedTensorDict(first).tensordicts().empty()) {
    first = LazyStackedTensorDict(first).tensordicts().front();
  }
  const TensorDictImpl& first_impl = *first.impl();
  const auto kind = first_impl.entry_kind(key);
  if (kind == EntryKind::NonTensor) {
    const NonTensorData data = first_impl.find(key)->non_tensor();
    if (kind_ops(first_impl).compact_from_metadata) return token(key, data.is_stack() ? "NonTensorStack" : "NonTensorData");
    return token(key, data.is_stack() ? "NonTensorStack" : json_type_name(data.data()));
  }
  if (kind != EntryKind::TensorDict) {
    auto part = leaf(td, key, o);
    if (auto* node = std::get_if<CompactNode>(&part)) {
      node->key = key;
      return std::move(*node);
    }
    auto& l = std::get<Leaf>(part);
    return token(key, compact_token(l.shape, l.dtype, std::move(l.devices), td.device().has_value(), o));
  }
  const TensorDict item = first_impl.find(key)->tensordict();
  const TensorDict sub = first.impl() == td.impl() ? item : impl.find(key)->tensordict();
  CompactNode node;
  node.key = key;
  node.container = true;
  if (kind_ops(*item.impl()).compact_names_class) node.text = std::string(item.type_name());
  const auto extra = sub.batch_size().slice(std::min<std::size_t>(sub.batch_size().size(), td.batch_dims()));
  if (!extra.empty()) node.text += compact_dims(extra);
  node.entries = body(sub, o);
  return node;
}

std::vector<CompactNode> entries(const TensorDict& td, const std::vector<std::string>& keys, const PrintOptions& o) {
  std::vector<CompactNode> out;
  for (const auto& key : keys) out.push_back(entry(td, key, o));
  sort_compact(out, o);
  return out;
}

std::vector<CompactNode> body(const TensorDict& td, const PrintOptions& o) {
  NestingGuard guard("repr");
  std::vector<std::string> keys;
  td.impl()->for_each_key([&](const std::string& key, EntryKind) { keys.push_back(key); });
  return entries(td, keys, o);
}

}  // namespace

std::string compact_repr(const TensorDict& td, const PrintOptions& o) {
  std::vector<std::string> header;
  if (o.show_batch_size) header.push_back(compact_batch_size(td.batch_size()));
  if (o.show_device && td.device()) header.push_back("device=" + td.device()->str());
  std::vector<CompactNode> exclusive;
  if (lazy_level(td)) {
    const LazyStackedTensorDict lazy(td);
    header.push_back(fmt::format("stack_dim={}", lazy.stack_dim()));
    const auto own = lazy.exclusive_keys();
    for (std::size_t i = 0; i < own.size(); ++i) {
      if (own[i].empty()) continue;
      CompactNode member;
      member.key = std::to_string(i);
      member.container = true;
      member.entries = entries(lazy.tensordicts()[i], own[i], o);
      exclusive.push_back(std::move(member));
    }
  }
  return detail::compact_repr(td.type_name(), header, body(td, o), std::move(exclusive));
}

}  // namespace tensordict::detail
