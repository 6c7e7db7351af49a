// Tensordicts built from another's structure: new_zeros/new_ones/new_empty/
// new_full (a new batch size), the *_like functions (the same one) and
// TensorDict::fromkeys.
#include <ATen/ATen.h>

#include <algorithm>

#include "core/format.h"

#include "kinds/dense/map_leaves.h"
#include "tensordict/errors.h"
#include "tensordict/functional.h"

namespace tensordict {

namespace {

// The leaves made by `make(shape, options)`, over batch size `batch`: each
// leaf keeps its feature dims. Names follow the trailing dims (tensordict's
// _new_impl): extra leading dims are unnamed, dropped leading dims drop their
// names.
TensorDict with_new_batch(const TensorDict& td, at::IntArrayRef batch, std::optional<at::ScalarType> dtype,
                          c10::function_ref<at::Tensor(at::IntArrayRef, const at::TensorOptions&)> make, const char* op) {
  for (int64_t s : batch) {
    if (s < 0) throw ValueError(fmt::format("{}: negative size in batch size {}", op, shape_string(batch)));
  }
  const int64_t nb = td.batch_dims();
  Names names;
  if (td.has_names() && !batch.empty()) {
    const int64_t n = static_cast<int64_t>(batch.size());
    names = n >= nb ? Names(n - nb, std::nullopt) : Names{};
    names.insert(names.end(), td.names().begin() + std::max<int64_t>(nb - n, 0), td.names().end());
  }
  detail::PieceMeta meta{batch.vec(), names};
  auto fn = [&](const at::Tensor& t) {
    std::vector<int64_t> shape = batch.vec();
    shape.insert(shape.end(), t.sizes().begin() + nb, t.sizes().end());
    return make(shape, dtype ? t.options().dtype(*dtype) : t.options());
  };
  return TensorDict(TensorDict(detail::map_leaves(*td.impl(), meta, td.device(), detail::OpKind::Fold, fn, op)));
}

// fn(leaf) for every leaf, same batch size and names.
TensorDict like(const TensorDict& td, c10::function_ref<at::Tensor(const at::Tensor&)> fn, const char* op) {
  return TensorDict(TensorDict(detail::map_leaves(*td.impl(), {td.batch_size().vec(), td.names()}, td.device(),
                                                      detail::OpKind::Value, fn, op)));
}

}  // namespace

TensorDict TensorDict::new_zeros(at::IntArrayRef batch_size, std::optional<at::ScalarType> dtype) const {
  return with_new_batch(*this, batch_size, dtype, [](at::IntArrayRef s, const at::TensorOptions& o) { return at::zeros(s, o); },
                        "new_zeros");
}

TensorDict TensorDict::new_ones(at::IntArrayRef batch_size, std::optional<at::ScalarType> dtype) const {
  return with_new_batch(*this, batch_size, dtype, [](at::IntArrayRef s, const at::TensorOptions& o) { return at::ones(s, o); },
                        "new_ones");
}

TensorDict TensorDict::new_empty(at::IntArrayRef batch_size, std::optional<at::ScalarType> dtype) const {
  return with_new_batch(*this, batch_size, dtype, [](at::IntArrayRef s, const at::TensorOptions& o) { return at::empty(s, o); },
                        "new_empty");
}

TensorDict TensorDict::new_full(at::IntArrayRef batch_size, const at::Scalar& fill_value,
                                    std::optional<at::ScalarType> dtype) const {
  return with_new_batch(*this, batch_size, dtype,
                        [&](at::IntArrayRef s, const at::TensorOptions& o) { return at::full(s, fill_value, o); }, "new_full");
}

TensorDict zeros_like(const TensorDict& td) {
  return like(td, [](const at::Tensor& t) { return at::zeros_like(t); }, "zeros_like");
}
TensorDict ones_like(const TensorDict& td) {
  return like(td, [](const at::Tensor& t) { return at::ones_like(t); }, "ones_like");
}
TensorDict empty_like(const TensorDict& td) {
  return like(td, [](const at::Tensor& t) { return at::empty_like(t); }, "empty_like");
}
TensorDict full_like(const TensorDict& td, const at::Scalar& fill_value) {
  return like(td, [&](const at::Tensor& t) { return at::full_like(t, fill_value); }, "full_like");
}
TensorDict rand_like(const TensorDict& td) {
  return like(td, [](const at::Tensor& t) { return at::rand_like(t); }, "rand_like");
}
TensorDict randn_like(const TensorDict& td) {
  return like(td, [](const at::Tensor& t) { return at::randn_like(t); }, "randn_like");
}

TensorDict TensorDict::fromkeys(const std::vector<NestedKey>& keys, const at::Scalar& value) {
  TensorDict out;
  // torch.as_tensor's dtype: a bool gives bool, an int int64, a float the
  // default float dtype.
  const at::ScalarType dtype = value.isBoolean()                 ? at::kBool
                               : value.isIntegral(false)         ? at::kLong
                               : value.isComplex()               ? at::kComplexFloat
                                                                 : at::typeMetaToScalarType(at::get_default_dtype());
  for (const auto& key : keys) out.set(key, at::scalar_tensor(value, at::TensorOptions().dtype(dtype)));
  return out;
}

}  // namespace tensordict
