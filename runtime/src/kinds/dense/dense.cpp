#include "tensordict/dense.h"
#include "tensordict/errors.h"

#include <stdexcept>

#include "kinds/dense/dense_impl.h"
#include "core/exact_cast.h"

namespace tensordict {

TensorDict::TensorDict() : TensorDict(std::make_shared<detail::DenseImpl>(std::vector<int64_t>{}, std::nullopt, Names{})) {}

TensorDict::TensorDict(std::vector<Entry> entries, at::IntArrayRef batch_size, std::optional<at::Device> device,
                       Names names)
    : TensorDict(std::make_shared<detail::DenseImpl>(batch_size.vec(), device, std::move(names))) {
  // At most one entry per key at this level: no regrowth while setting them.
  static_cast<detail::DenseImpl&>(*impl_).reserve(entries.size());
  for (auto& [key, value] : entries) set(key, std::move(value));
}

TensorDict::TensorDict(const TensorDictBase& td) : TensorDictBase(td.impl()) {
  if (!detail::exact_cast<detail::DenseImpl>(impl_.get())) {
    throw TypeError(std::string("a ") + std::string(td.type_name()) +
                    " is not a dense TensorDict; use contiguous() or to_tensordict() to make one");
  }
}

TensorDict::TensorDict(std::shared_ptr<TensorDictImpl> impl) : TensorDictBase(std::move(impl)) {}

}  // namespace tensordict
