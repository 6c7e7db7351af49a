// The dense kind's constructors: a TensorDict that owns its entries.
#include "tensordict/base.h"

#include "kinds/dense/dense_impl.h"

namespace tensordict {

TensorDict::TensorDict() : TensorDict(std::make_shared<detail::DenseImpl>(std::vector<int64_t>{}, std::nullopt, Names{})) {}

TensorDict::TensorDict(std::vector<Entry> entries, at::IntArrayRef batch_size, std::optional<at::Device> device,
                       Names names)
    : TensorDict(std::make_shared<detail::DenseImpl>(batch_size.vec(), device, std::move(names))) {
  // At most one entry per key at this level: no regrowth while setting them.
  static_cast<detail::DenseImpl&>(*impl_).reserve(entries.size());
  for (auto& [key, value] : entries) set(key, std::move(value));
}

}  // namespace tensordict
