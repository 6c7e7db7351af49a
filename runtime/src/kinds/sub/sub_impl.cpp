#include "kinds/sub/sub_impl.h"

#include <nlohmann/json.hpp>

#include <ATen/ATen.h>

#include <stdexcept>

#include "core/format.h"
#include "kinds/dense/map_leaves.h"
#include "tensordict/base.h"
#include "tensordict/errors.h"
#include "tensordict/detail/impl.h"
#include "tensordict/non_tensor.h"
#include "tensordict/sub.h"
#include "core/value_kind.h"

namespace tensordict::detail {

SubTensorDictImpl::SubTensorDictImpl(TensorDict source, std::vector<TensorIndex> index)
    : source_(std::move(source)),
      index_(std::move(index)),
      resolved_(index_, source_.batch_size()),
      names_(source_.has_names() ? resolved_.result_names(source_.names()) : Names(resolved_.result_batch_size().size())) {
  derives_lock_ = true;  // its source's (lock_source)
}

void SubTensorDictImpl::set_meta(std::vector<int64_t>, std::optional<at::Device>, Names) {
  throw RuntimeError("a SubTensorDict's batch size, device and names follow its source and index; change the source");
}

void SubTensorDictImpl::for_each_key(c10::function_ref<void(const std::string&, EntryKind)> fn) const {
  source_.impl()->for_each_key(fn);
}

void SubTensorDictImpl::for_each(c10::function_ref<void(const std::string&, const Value&)> fn) const {
  source_.impl()->for_each_key([&](const std::string& key, EntryKind) { fn(key, *find(key)); });
}

std::optional<Value> SubTensorDictImpl::find(const std::string& key) const {
  auto value = source_.impl()->find(key);
  if (!value) return std::nullopt;
  if (value->is_unbatched()) return value;  // no batch dims to index
  if (value->is_tensor()) return Value(resolved_.apply(value->tensor()));
  if (value->is_tensordict()) return Value(SubTensorDict(value->tensordict(), index_));
  const NonTensorData& data = value->non_tensor();
  if (!data.is_stack()) return value;
  return Value(NonTensorData::from_ids(data.pool(), resolved_.apply(data.ids())));
}

void SubTensorDictImpl::insert(const std::string& key, Value value) {
  auto existing = source_.impl()->find(key);
  // A view writes into its source's entries at the index; replacing one by
  // another kind would replace it outside the index too (tensordict's
  // _SubTensorDict.update raises ValueError). The handle names the key.
  if (existing && (existing->is_tensor() != value.is_tensor() || existing->is_tensordict() != value.is_tensordict())) {
    throw ValueError(fmt::format(
        "Tried to replace {0} with an incompatible object: the source of this sub-tensordict holds {0} there; a "
        "sub-tensordict writes into its source's entries and cannot replace one by another kind: expected {0}, got {1}",
        kind_of(*existing), kind_of(value)));
  }
  // An UnbatchedTensor is the whole batch's: set whole, or written whole.
  if (value.is_unbatched() && !existing) {
    TensorDict(source_).set(key, value);
    return;
  }
  if (existing && existing->is_unbatched()) return source_.impl()->assign(key, value.tensor());
  if (value.is_tensor()) {
    const at::Tensor& t = value.tensor();
    if (!existing) {
      // A new entry in the source, zero outside the index (tensordict's rule).
      std::vector<int64_t> shape = source_.batch_size().vec();
      const auto feature = t.sizes().slice(resolved_.result_batch_size().size());
      shape.insert(shape.end(), feature.begin(), feature.end());
      TensorDict(source_).set(key, at::zeros(shape, t.options()));
      existing = source_.impl()->find(key);
    }
    put_entry(*source_.impl(), key, existing->tensor(), resolved_, t);
    return;
  }
  if (value.is_tensordict()) {
    if (!existing) {
      // A new nested tensordict in the source: the source's batch dims, then
      // the value's dims past this view's (tensordict keeps them).
      std::vector<int64_t> batch = source_.batch_size().vec();
      const auto extra = value.tensordict().batch_size().slice(resolved_.result_batch_size().size());
      batch.insert(batch.end(), extra.begin(), extra.end());
      TensorDict(source_).set(key, TensorDict({}, batch, source_.device()));
      existing = source_.impl()->find(key);
    }
    SubTensorDict nested(existing->tensordict(), index_);
    for (const auto& [k, v] : value.tensordict().items()) nested.set(k, v);
    return;
  }
  // Non-tensor data lands at the index too; a new key holds None outside it.
  if (!existing) {
    TensorDict(source_).set(key, NonTensorData(Json()));
    existing = source_.impl()->find(key);
  }
  put_non_tensor_entry(*source_.impl(), NestedKey(key), existing->non_tensor(), source_.batch_size(), resolved_,
                       value.non_tensor());
}

bool SubTensorDictImpl::erase(const std::string& key) { return source_.impl()->erase(key); }

void SubTensorDictImpl::rename(const std::string& from, const std::string& to) { source_.impl()->rename(from, to); }

void SubTensorDictImpl::assign(const std::string& key, const at::Tensor& value) {
  const Value target = *source_.impl()->find(key);
  if (target.is_unbatched()) return source_.impl()->assign(key, value);
  put_entry(*source_.impl(), key, target.tensor(), resolved_, value);
}

void SubTensorDictImpl::check_share_memory() const {
  throw RuntimeError("share_memory_: Casting a sub-tensordict values to shared memory cannot be done.");
}

}  // namespace tensordict::detail

namespace tensordict {

SubTensorDict::SubTensorDict(const TensorDict& source, at::ArrayRef<TensorIndex> index)
    : TensorDict(std::make_shared<detail::SubTensorDictImpl>(source, index.vec())) {}

SubTensorDict::SubTensorDict(const TensorDict& td) : TensorDict(td.impl()) {
  require_kind(Kind::SubView);
}

const TensorDict& SubTensorDict::source() const {
  return static_cast<const detail::SubTensorDictImpl&>(*impl_).source();
}

SubTensorDict TensorDict::get_sub_tensordict(at::ArrayRef<TensorIndex> index) const { return SubTensorDict(*this, index); }

}  // namespace tensordict
