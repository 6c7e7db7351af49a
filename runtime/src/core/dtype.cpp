#include "tensordict/dtype.h"
#include "tensordict/errors.h"

#include <array>
#include <stdexcept>
#include <string>
#include <utility>

namespace tensordict {

namespace {
constexpr std::array<std::pair<at::ScalarType, std::string_view>, 13> kDtypeNames{{
    {at::kFloat, "float32"},
    {at::kDouble, "float64"},
    {at::kHalf, "float16"},
    {at::kBFloat16, "bfloat16"},
    {at::kChar, "int8"},
    {at::kShort, "int16"},
    {at::kInt, "int32"},
    {at::kLong, "int64"},
    {at::kByte, "uint8"},
    {at::kBool, "bool"},
    {at::kComplexHalf, "complex32"},
    {at::kComplexFloat, "complex64"},
    {at::kComplexDouble, "complex128"},
}};
}  // namespace

std::string_view dtype_name(at::ScalarType dtype) {
  for (const auto& [type, name] : kDtypeNames) {
    if (type == dtype) return name;
  }
  throw ValueError(std::string("dtype ") + c10::toString(dtype) + " has no tensordict name");
}

std::optional<at::ScalarType> dtype_from_name(std::string_view name) {
  if (name.starts_with("torch.")) name.remove_prefix(6);
  for (const auto& [type, known] : kDtypeNames) {
    if (known == name) return type;
  }
  return std::nullopt;
}

}  // namespace tensordict
