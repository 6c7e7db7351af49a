#include "arrow_io/array_values.h"

#include <nlohmann/json.hpp>

#include <arrow/array.h>
#include <arrow/util/float16.h>
#include <fmt/format.h>

#include "arrow_io/arrow_common.h"
#include "tensordict/errors.h"

namespace tensordict::detail::arrow_io {

namespace {

// Whether the values of `type` have a JSON form, at every depth.
bool has_json_form(const ::arrow::DataType& type) {
  switch (type.id()) {
    case ::arrow::Type::NA:
    case ::arrow::Type::BOOL:
    case ::arrow::Type::STRING:
    case ::arrow::Type::LARGE_STRING:
    case ::arrow::Type::STRING_VIEW:
      return true;
    case ::arrow::Type::DICTIONARY:
      return has_json_form(*static_cast<const ::arrow::DictionaryType&>(type).value_type());
    case ::arrow::Type::EXTENSION:
      return has_json_form(*static_cast<const ::arrow::ExtensionType&>(type).storage_type());
    case ::arrow::Type::LIST:
    case ::arrow::Type::LARGE_LIST:
    case ::arrow::Type::FIXED_SIZE_LIST:
    case ::arrow::Type::LIST_VIEW:
    case ::arrow::Type::LARGE_LIST_VIEW:
    case ::arrow::Type::MAP:
    case ::arrow::Type::STRUCT:
      for (const auto& field : type.fields()) {
        if (!has_json_form(*field->type())) return false;
      }
      return true;
    default:
      return ::arrow::is_integer(type.id()) || ::arrow::is_floating(type.id());
  }
}

template <class ArrayType>
Json list_value(const ArrayType& array, int64_t row);

Json value_at(const ::arrow::Array& array, int64_t row) {
  if (array.IsNull(row)) return nullptr;
  switch (array.type_id()) {
    case ::arrow::Type::NA:
      return nullptr;
    case ::arrow::Type::BOOL:
      return static_cast<const ::arrow::BooleanArray&>(array).Value(row);
    case ::arrow::Type::INT8:
      return int64_t{static_cast<const ::arrow::Int8Array&>(array).Value(row)};
    case ::arrow::Type::INT16:
      return int64_t{static_cast<const ::arrow::Int16Array&>(array).Value(row)};
    case ::arrow::Type::INT32:
      return int64_t{static_cast<const ::arrow::Int32Array&>(array).Value(row)};
    case ::arrow::Type::INT64:
      return int64_t{static_cast<const ::arrow::Int64Array&>(array).Value(row)};
    case ::arrow::Type::UINT8:
      return uint64_t{static_cast<const ::arrow::UInt8Array&>(array).Value(row)};
    case ::arrow::Type::UINT16:
      return uint64_t{static_cast<const ::arrow::UInt16Array&>(array).Value(row)};
    case ::arrow::Type::UINT32:
      return uint64_t{static_cast<const ::arrow::UInt32Array&>(array).Value(row)};
    case ::arrow::Type::UINT64:
      return uint64_t{static_cast<const ::arrow::UInt64Array&>(array).Value(row)};
    case ::arrow::Type::HALF_FLOAT:
      return ::arrow::util::Float16::FromBits(static_cast<const ::arrow::HalfFloatArray&>(array).Value(row)).ToDouble();
    case ::arrow::Type::FLOAT:
      return double{static_cast<const ::arrow::FloatArray&>(array).Value(row)};
    case ::arrow::Type::DOUBLE:
      return static_cast<const ::arrow::DoubleArray&>(array).Value(row);
    case ::arrow::Type::STRING:
      return std::string(static_cast<const ::arrow::StringArray&>(array).GetView(row));
    case ::arrow::Type::LARGE_STRING:
      return std::string(static_cast<const ::arrow::LargeStringArray&>(array).GetView(row));
    case ::arrow::Type::STRING_VIEW:
      return std::string(static_cast<const ::arrow::StringViewArray&>(array).GetView(row));
    case ::arrow::Type::LIST:
      return list_value(static_cast<const ::arrow::ListArray&>(array), row);
    case ::arrow::Type::LARGE_LIST:
      return list_value(static_cast<const ::arrow::LargeListArray&>(array), row);
    case ::arrow::Type::FIXED_SIZE_LIST:
      return list_value(static_cast<const ::arrow::FixedSizeListArray&>(array), row);
    case ::arrow::Type::LIST_VIEW:
      return list_value(static_cast<const ::arrow::ListViewArray&>(array), row);
    case ::arrow::Type::LARGE_LIST_VIEW:
      return list_value(static_cast<const ::arrow::LargeListViewArray&>(array), row);
    case ::arrow::Type::MAP: {
      // to_pylist gives a map row as a list of (key, value) tuples.
      const auto& map = static_cast<const ::arrow::MapArray&>(array);
      const auto keys = map.keys()->Slice(map.value_offset(row), map.value_length(row));
      const auto items = map.items()->Slice(map.value_offset(row), map.value_length(row));
      Json out = Json::array();
      for (int64_t i = 0; i < keys->length(); ++i) out.push_back(Json::array({value_at(*keys, i), value_at(*items, i)}));
      return out;
    }
    case ::arrow::Type::STRUCT: {
      const auto& structs = static_cast<const ::arrow::StructArray&>(array);
      Json out = Json::object();
      for (int f = 0; f < structs.num_fields(); ++f) {
        out[structs.struct_type()->field(f)->name()] = value_at(*structs.field(f), row);
      }
      return out;
    }
    case ::arrow::Type::DICTIONARY: {
      const auto& encoded = static_cast<const ::arrow::DictionaryArray&>(array);
      return value_at(*encoded.dictionary(), encoded.GetValueIndex(row));
    }
    case ::arrow::Type::EXTENSION:
      return value_at(*static_cast<const ::arrow::ExtensionArray&>(array).storage(), row);
    default:
      // has_json_form refused every other type before any row was read.
      return nullptr;
  }
}

template <class ArrayType>
Json list_value(const ArrayType& array, int64_t row) {
  const auto values = array.value_slice(row);
  Json out = Json::array();
  for (int64_t i = 0; i < values->length(); ++i) out.push_back(value_at(*values, i));
  return out;
}

}  // namespace

std::vector<Json> row_values(const ::arrow::Array& array, const NestedKey& key) {
  if (!has_json_form(*array.type())) {
    throw TypeError(fmt::format("The Arrow column {} has the type {}, whose values have no JSON form for a "
                                "non-tensor entry. Cast it first, for example to a string or a number type.",
                                tuple_repr(key), array.type()->ToString()));
  }
  std::vector<Json> out;
  out.reserve(static_cast<std::size_t>(array.length()));
  for (int64_t row = 0; row < array.length(); ++row) out.push_back(value_at(array, row));
  return out;
}

}  // namespace tensordict::detail::arrow_io
