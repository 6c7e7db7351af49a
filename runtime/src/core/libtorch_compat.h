// What differs between libtorch 1.13 and 2.x, in one place (private).
//
// - `TensorIndex::integer()` and `Slice::start()/stop()/step()` return
//   int64_t in libtorch 1.x and c10::SymInt in 2.x; every reader of an index
//   goes through the helpers below so that both compile.
// - Named tensors (`Tensor::has_names`) are gone from recent libtorch.
#pragma once

#include <ATen/TensorIndexing.h>

#include <cstdint>
#include <type_traits>

namespace tensordict::detail {

template <class T>
int64_t plain_int(const T& value) {
  if constexpr (std::is_integral_v<T>) {
    return value;
  } else {
    return value.expect_int();
  }
}

inline int64_t index_integer(const at::indexing::TensorIndex& item) { return plain_int(item.integer()); }

struct SliceBounds {
  int64_t start, stop, step;
};

inline SliceBounds slice_bounds(const at::indexing::Slice& s) {
  return {plain_int(s.start()), plain_int(s.stop()), plain_int(s.step())};
}

// Whether a tensor carries libtorch's own dim names (never, where libtorch
// no longer has named tensors).
template <class T>
bool tensor_has_names(const T& t) {
  if constexpr (requires { t.has_names(); }) {
    return t.has_names();
  } else {
    return false;
  }
}

}  // namespace tensordict::detail
