#include "arrow_io/tensor_arrays.h"

#include <ATen/ATen.h>
#include <arrow/api.h>
#include <arrow/extension/fixed_shape_tensor.h>
#include <fmt/format.h>

#include <numeric>
#include <vector>

#include "arrow_io/arrow_common.h"
#include "arrow_io/arrow_dtypes.h"
#include "tensordict/errors.h"

namespace tensordict::detail::arrow_io {

namespace {

// An Arrow buffer over a contiguous CPU tensor's memory, which it keeps alive.
class TensorBuffer final : public ::arrow::Buffer {
 public:
  explicit TensorBuffer(at::Tensor tensor)
      : ::arrow::Buffer(static_cast<const uint8_t*>(tensor.data_ptr()), tensor.numel() * tensor.element_size()),
        tensor_(std::move(tensor)) {}

 private:
  at::Tensor tensor_;
};

// A large_list array of the components of `nested`, which may differ in
// their first dim only (tensordict's jagged layout with its ragged dim at 1).
std::shared_ptr<::arrow::Array> jagged_array(const at::Tensor& nested, const NestedKey& key, std::string_view op) {
  const std::vector<at::Tensor> components = nested.unbind(0);
  std::vector<int64_t> offsets{0};
  std::vector<at::Tensor> rows;
  for (const at::Tensor& component : components) {
    if (component.dim() == 0 || component.dim() != components.front().dim()) {
      throw ValueError(fmt::format("{} cannot convert the nested tensor at {}: its components must have one dim or "
                                   "more, the same number in each",
                                   op, key.repr()));
    }
    for (int64_t d = 1; d < component.dim(); ++d) {
      if (component.size(d) != components.front().size(d)) {
        throw ValueError(fmt::format("{} needs the ragged dim of the jagged tensor {} at position 1, got {}. Move "
                                     "it there first, for example with .transpose(1, {}).",
                                     op, key.repr(), d + 1, d + 1));
      }
    }
    offsets.push_back(offsets.back() + component.size(0));
    rows.push_back(component.contiguous());
  }
  const at::Tensor values = rows.empty() ? at::empty({0}, nested.options().layout(at::kStrided)) : at::cat(rows);
  const at::Tensor offset_tensor = at::tensor(offsets, at::kLong);
  const auto offset_array = primitive_array(offset_tensor, key, op);
  return value_or_throw(::arrow::LargeListArray::FromArrays(*offset_array, *tensor_array(values, key, op)),
                        fmt::format("{}: key {}", op, key.repr()));
}

}  // namespace

std::shared_ptr<::arrow::Array> primitive_array(const at::Tensor& tensor, const NestedKey& key, std::string_view op) {
  const at::Tensor data = tensor.cpu().contiguous();
  const auto type = arrow_type(data.scalar_type(), key, op);
  if (data.scalar_type() == at::kBool) {
    ::arrow::BooleanBuilder builder;
    check(builder.AppendValues(reinterpret_cast<const uint8_t*>(data.data_ptr<bool>()), data.numel()), op);
    return value_or_throw(builder.Finish(), op);
  }
  std::shared_ptr<::arrow::Buffer> buffer = std::make_shared<TensorBuffer>(data);
  return ::arrow::MakeArray(::arrow::ArrayData::Make(type, data.numel(), {nullptr, std::move(buffer)}, 0));
}

std::shared_ptr<::arrow::Array> tensor_array(const at::Tensor& tensor, const NestedKey& key, std::string_view op) {
  if (tensor.is_nested()) return jagged_array(tensor.cpu(), key, op);
  if (tensor.dim() <= 1) return primitive_array(tensor.reshape(-1), key, op);
  const auto value_type = arrow_type(tensor.scalar_type(), key, op);
  const std::vector<int64_t> shape(tensor.sizes().begin() + 1, tensor.sizes().end());
  const int64_t size = std::accumulate(shape.begin(), shape.end(), int64_t{1}, std::multiplies<>());
  const auto values = primitive_array(tensor.reshape(-1), key, op);
  const auto storage = value_or_throw(::arrow::FixedSizeListArray::FromArrays(values, static_cast<int32_t>(size)),
                                      fmt::format("{}: key {}", op, key.repr()));
  // pyarrow's from_numpy_ndarray records the (identity) permutation of a C
  // array; its empty-array path records none.
  std::vector<int64_t> permutation;
  if (tensor.size(0) > 0) {
    permutation.resize(shape.size());
    std::iota(permutation.begin(), permutation.end(), 0);
  }
  const auto type = ::arrow::extension::fixed_shape_tensor(value_type, shape, permutation);
  return ::arrow::ExtensionType::WrapArray(type, storage);
}

}  // namespace tensordict::detail::arrow_io
