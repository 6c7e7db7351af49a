#include "arrow_io/arrow_dtypes.h"

#include <arrow/extension/fixed_shape_tensor.h>
#include <arrow/type.h>
#include <fmt/format.h>

#include "arrow_io/arrow_common.h"
#include "tensordict/errors.h"

namespace tensordict::detail::arrow_io {

namespace {

// libtorch's uint16, uint32 and uint64 (2.3 and later); nullopt before.
template <class S = at::ScalarType>
std::optional<S> wide_unsigned(::arrow::Type::type id) {
  if constexpr (requires { S::UInt16; S::UInt32; S::UInt64; }) {
    switch (id) {
      case ::arrow::Type::UINT16:
        return S::UInt16;
      case ::arrow::Type::UINT32:
        return S::UInt32;
      case ::arrow::Type::UINT64:
        return S::UInt64;
      default:
        break;
    }
  }
  return std::nullopt;
}

}  // namespace

std::optional<at::ScalarType> tensor_dtype(const ::arrow::DataType& type, const NestedKey& key) {
  switch (type.id()) {
    case ::arrow::Type::BOOL:
      return at::kBool;
    case ::arrow::Type::UINT8:
      return at::kByte;
    case ::arrow::Type::INT8:
      return at::kChar;
    case ::arrow::Type::INT16:
      return at::kShort;
    case ::arrow::Type::INT32:
      return at::kInt;
    case ::arrow::Type::INT64:
      return at::kLong;
    case ::arrow::Type::HALF_FLOAT:
      return at::kHalf;
    case ::arrow::Type::FLOAT:
      return at::kFloat;
    case ::arrow::Type::DOUBLE:
      return at::kDouble;
    case ::arrow::Type::UINT16:
    case ::arrow::Type::UINT32:
    case ::arrow::Type::UINT64:
      if (auto dtype = wide_unsigned(type.id())) return dtype;
      throw TypeError(fmt::format("The Arrow column {} has the type {}, which this libtorch has no dtype for "
                                  "(uint16, uint32 and uint64 came with libtorch 2.3). Cast it first, for example "
                                  "to int64.",
                                  tuple_repr(key), type.ToString()));
    default:
      return std::nullopt;
  }
}

std::shared_ptr<::arrow::DataType> arrow_type(at::ScalarType dtype, const NestedKey& key, std::string_view op) {
  switch (dtype) {
    case at::kBool:
      return ::arrow::boolean();
    case at::kByte:
      return ::arrow::uint8();
    case at::kChar:
      return ::arrow::int8();
    case at::kShort:
      return ::arrow::int16();
    case at::kInt:
      return ::arrow::int32();
    case at::kLong:
      return ::arrow::int64();
    case at::kHalf:
      return ::arrow::float16();
    case at::kFloat:
      return ::arrow::float32();
    case at::kDouble:
      return ::arrow::float64();
    default:
      break;
  }
  if (dtype == wide_unsigned(::arrow::Type::UINT16)) return ::arrow::uint16();
  if (dtype == wide_unsigned(::arrow::Type::UINT32)) return ::arrow::uint32();
  if (dtype == wide_unsigned(::arrow::Type::UINT64)) return ::arrow::uint64();
  throw TypeError(fmt::format("{} cannot convert the tensor at {}: its dtype {} has no Arrow type. Cast it first, "
                              "for example to float32.",
                              op, key.repr(), c10::toString(dtype)));
}

bool is_tensor_type(const ::arrow::DataType& type) {
  if (const auto* tensor = fixed_shape_tensor(type)) return is_tensor_type(*tensor->storage_type());
  if (type.id() == ::arrow::Type::FIXED_SIZE_LIST) {
    return is_tensor_type(*static_cast<const ::arrow::FixedSizeListType&>(type).value_type());
  }
  return ::arrow::is_integer(type.id()) || ::arrow::is_floating(type.id()) || type.id() == ::arrow::Type::BOOL;
}

const ::arrow::extension::FixedShapeTensorType* fixed_shape_tensor(const ::arrow::DataType& type) {
  if (type.id() != ::arrow::Type::EXTENSION) return nullptr;
  return dynamic_cast<const ::arrow::extension::FixedShapeTensorType*>(&type);
}

}  // namespace tensordict::detail::arrow_io
