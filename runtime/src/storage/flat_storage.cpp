#include "storage/flat_storage.h"

#include <ATen/ops/empty.h>

#include <algorithm>

#include "ops/direct_view.h"
#include "core/libtorch_compat.h"
#include "kinds/dense/map_leaves.h"

namespace tensordict::detail {

bool flat_movable(const at::Tensor& t) {
  return t.defined() && t.layout() == at::kStrided && !t.is_nested() && !t.is_quantized() && !t.requires_grad() &&
         !t.is_conj() && !t.is_neg() && !tensor_has_names(t) && t.has_storage();
}

at::Tensor view_storage(const at::Tensor& holder, caffe2::TypeMeta dtype, at::IntArrayRef sizes, at::IntArrayRef strides,
                        int64_t offset) {
  if (direct_view_ok(holder)) return direct_view(holder, dtype, sizes, strides, offset);
  // Inference mode and other special tensors: libtorch's own set_.
  return at::empty({0}, holder.options().dtype(dtype)).set_(holder.storage(), offset, sizes, strides);
}

at::Tensor view_contiguous(const at::Tensor& buffer, caffe2::TypeMeta dtype, at::IntArrayRef sizes, int64_t byte_offset) {
  const int64_t offset = (buffer.storage_offset() * static_cast<int64_t>(buffer.element_size()) + byte_offset) /
                         static_cast<int64_t>(dtype.itemsize());
  c10::SmallVector<int64_t, 6> strides(sizes.size());
  int64_t stride = 1;
  for (auto d = static_cast<int64_t>(sizes.size()) - 1; d >= 0; --d) {
    strides[static_cast<std::size_t>(d)] = stride;
    stride *= std::max<int64_t>(sizes[static_cast<std::size_t>(d)], 1);
  }
  return view_storage(buffer, dtype, sizes, strides, offset);
}

at::Tensor view_at(const at::Tensor& buffer, const at::Tensor& like, int64_t byte_offset, bool keep_strides) {
  if (keep_strides && like.is_non_overlapping_and_dense()) {
    const int64_t offset = (buffer.storage_offset() * static_cast<int64_t>(buffer.element_size()) + byte_offset) /
                           static_cast<int64_t>(like.element_size());
    return view_storage(buffer, like.dtype(), like.sizes(), like.strides(), offset);
  }
  return view_contiguous(buffer, like.dtype(), like.sizes(), byte_offset);
}

at::Tensor bytes_at(const at::Tensor& buffer, int64_t byte_offset, int64_t n) {
  const int64_t size[] = {n};
  const int64_t stride[] = {1};
  return view_storage(buffer, buffer.dtype(), size, stride, buffer.storage_offset() + byte_offset);
}

std::vector<at::Tensor> tensor_leaves(const TensorDictImpl& td, const char* op) {
  std::vector<at::Tensor> leaves;
  for_each_tensor(td, [&](const at::Tensor& t) { leaves.push_back(t); }, op);
  return leaves;
}

TensorDict with_leaves(const TensorDict& td, const std::vector<at::Tensor>& leaves, std::optional<at::Device> device,
                       const char* op) {
  std::size_t next = 0;
  auto impl = map_leaves(*td.impl(), {td.batch_size().vec(), td.names()}, device, OpKind::Value,
                         [&](const at::Tensor&) { return leaves.at(next++); }, op, ShapeCheck::Planned);
  return TensorDict(TensorDict(std::move(impl)));
}

}  // namespace tensordict::detail
