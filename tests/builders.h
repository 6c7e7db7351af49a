// Tensors and tensordicts whose values are all different, so misplaced
// elements show: shared by the test suites.
#pragma once

#include <ATen/ATen.h>
#include <tensordict/tensordict.h>

#include <vector>

namespace td_test {

// A tensor whose values are all different, so misplaced elements show.
inline at::Tensor iota(at::IntArrayRef shape, at::ScalarType dtype = at::kFloat) {
  int64_t n = 1;
  for (auto s : shape) n *= s;
  return at::arange(n, at::TensorOptions().dtype(at::kLong)).reshape(shape).to(dtype);
}

// Both undefined, or equal in shape, dtype and values (on any device).
inline bool same(const at::Tensor& a, const at::Tensor& b) {
  return a.defined() == b.defined() &&
         (!a.defined() || (a.sizes() == b.sizes() && a.dtype() == b.dtype() && a.cpu().equal(b.cpu())));
}

// A bool mask from 0/1 values (libtorch 1.13 cannot build bool tensors from a list).
inline at::Tensor mask(std::vector<int64_t> bits) { return at::tensor(bits, at::kLong).to(at::kBool); }

inline std::vector<int64_t> cat_shape(at::IntArrayRef a, at::IntArrayRef b) {
  std::vector<int64_t> out(a.begin(), a.end());
  out.insert(out.end(), b.begin(), b.end());
  return out;
}

// {"a": [B..., 4], "b": [B...] int64, "nested": {"c": [B..., 2, 3]}} over batch B.
inline tensordict::TensorDict sample(at::IntArrayRef batch) {
  using tensordict::TensorDict;
  return TensorDict({{"a", iota(cat_shape(batch, {4}))},
                     {"b", iota(batch, at::kLong) * 10},
                     {"nested", TensorDict({{"c", iota(cat_shape(batch, {2, 3})) + 0.5}}, batch)}},
                    batch);
}

}  // namespace td_test
