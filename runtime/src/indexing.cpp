// Batch indexing and indexed assignment.
#include <stdexcept>

#include "format.h"
#include "map_leaves.h"
#include "tensordict/dense.h"

namespace tensordict {


TensorDict TensorDictBase::index(at::ArrayRef<TensorIndex> index) const {
  const BatchIndex resolved(index, batch_size());
  auto apply = [&](const at::Tensor& leaf) { return resolved.apply(leaf); };
  detail::PieceMeta meta{resolved.result_batch_size().vec(), has_names() ? resolved.result_names(names()) : Names{}};
  return TensorDict(TensorDictBase(detail::map_leaves(*impl_, meta, device(), detail::OpKind::Batch, apply, "index")));
}

TensorDictBase& TensorDictBase::index_put_(at::ArrayRef<TensorIndex> index, const TensorDictBase& value) {
  const BatchIndex resolved(index, batch_size());
  const auto target = resolved.result_batch_size();
  TensorDictBase source = value;
  if (source.batch_size() != target) {
    try {
      source = value.expand(target);
    } catch (const std::exception&) {
      throw std::runtime_error(fmt::format("index_put_: the value's batch size {} cannot be expanded to the indexed batch size {}",
                                           shape_string(value.batch_size()), shape_string(target)));
    }
  }
  for (const auto& [key, item] : source.items(true, true)) {
    if (!item.is_tensor()) continue;  // non-tensor data is not written through an index
    const at::Tensor& leaf = item.tensor();
    if (!contains(key)) {
      // tensordict creates the missing entry, zero outside the index.
      std::vector<int64_t> shape = batch_size().vec();
      const auto feature = leaf.sizes().slice(target.size());
      shape.insert(shape.end(), feature.begin(), feature.end());
      set(key, at::zeros(shape, leaf.options().device(device().value_or(leaf.device()))));
    }
    put_at(key, resolved, leaf, "index_put_");
  }
  return *this;
}

TensorDictBase& TensorDictBase::index_put_(at::ArrayRef<TensorIndex> index, const at::Tensor& value) {
  const BatchIndex resolved(index, batch_size());
  for (const auto& [key, item] : items(true, true)) {
    if (item.is_tensor()) put_at(key, resolved, value, "index_put_");
  }
  return *this;
}

TensorDictBase& TensorDictBase::index_put_(at::ArrayRef<TensorIndex> index, const at::Scalar& value) {
  return index_put_(index, Operand(value).tensor());
}

at::Tensor TensorDictBase::get_at(const NestedKey& key, at::ArrayRef<TensorIndex> index) const {
  const BatchIndex resolved(index, batch_size());
  return resolved.apply(get(key));
}

TensorDictBase& TensorDictBase::set_at_(const NestedKey& key, const at::Tensor& value, at::ArrayRef<TensorIndex> index) {
  put_at(key, BatchIndex(index, batch_size()), value, "set_at_");
  return *this;
}

void TensorDictBase::put_at(const NestedKey& key, const BatchIndex& resolved, const at::Tensor& value, const char* op) {
  TensorDictBase parent = parent_of(key, false);
  at::Tensor target = parent.get(key.back());
  try {
    resolved.put(target, value);
    // A lazy stack's entry is a stacked copy: write the result back.
    if (!parent.impl_->entries_alias_storage()) parent.impl_->assign(key.back(), target);
  } catch (...) {
    detail::rethrow_for_key(op, key);
  }
}

}  // namespace tensordict
