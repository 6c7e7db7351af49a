#include "arrow_io/json_arrays.h"

#include <nlohmann/json.hpp>

#include <arrow/api.h>
#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <cstdint>
#include <limits>
#include <string>

#include "arrow_io/arrow_common.h"
#include "tensordict/errors.h"

namespace tensordict::detail::arrow_io {

namespace {

// What the values of one level are, as pyarrow's type inference sees them.
struct Kinds {
  bool boolean = false, integer = false, big = false, negative = false, floating = false;
  bool string = false, list = false, object = false, binary = false;
  std::vector<std::string> seen;  // the kinds in the order met, for messages

  void add(const Json& v) {
    switch (v.type()) {
      case Json::value_t::null:
        return;
      case Json::value_t::boolean:
        note(boolean, "bool");
        return;
      case Json::value_t::number_integer:
        note(integer, "int");
        negative = negative || v.get<int64_t>() < 0;
        return;
      case Json::value_t::number_unsigned:
        note(integer, "int");
        big = big || v.get<uint64_t>() > static_cast<uint64_t>(std::numeric_limits<int64_t>::max());
        return;
      case Json::value_t::number_float:
        note(floating, "float");
        return;
      case Json::value_t::string:
        note(string, "str");
        return;
      case Json::value_t::array:
        note(list, "list");
        return;
      case Json::value_t::object:
        note(object, "dict");
        return;
      default:
        note(binary, "bytes");
        return;
    }
  }
  void note(bool& flag, const char* name) {
    if (!flag) seen.push_back(name);
    flag = true;
  }
};

std::shared_ptr<::arrow::DataType> infer(const std::vector<const Json*>& values, const NestedKey& key,
                                         std::string_view op) {
  Kinds kinds;
  for (const Json* v : values) kinds.add(*v);
  const bool numbers = kinds.integer || kinds.floating;
  const int families = int(kinds.boolean) + int(numbers) + int(kinds.string) + int(kinds.list) + int(kinds.object);
  if (families > 1 || kinds.binary) {
    throw TypeError(fmt::format("{} cannot convert the non-tensor entry at {}: its values are {}, which no one Arrow "
                                "type holds",
                                op, key.repr(), fmt::join(kinds.seen, " and ")));
  }
  if (kinds.boolean) return ::arrow::boolean();
  if (kinds.floating) return ::arrow::float64();
  if (kinds.big) {
    if (kinds.negative) {
      throw TypeError(fmt::format("{} cannot convert the non-tensor entry at {}: its integers span more than int64 "
                                  "and uint64 hold",
                                  op, key.repr()));
    }
    return ::arrow::uint64();
  }
  if (kinds.integer) return ::arrow::int64();
  if (kinds.string) return ::arrow::utf8();
  if (kinds.list) {
    std::vector<const Json*> elements;
    for (const Json* v : values) {
      if (v->is_array()) {
        for (const Json& e : *v) elements.push_back(&e);
      }
    }
    return ::arrow::list(infer(elements, key, op));
  }
  if (kinds.object) {
    std::vector<std::string> names;
    for (const Json* v : values) {
      if (!v->is_object()) continue;
      for (const auto& item : v->items()) {
        if (std::find(names.begin(), names.end(), item.key()) == names.end()) names.push_back(item.key());
      }
    }
    ::arrow::FieldVector fields;
    for (const std::string& name : names) {
      std::vector<const Json*> field_values;
      for (const Json* v : values) {
        if (v->is_object() && v->contains(name)) field_values.push_back(&(*v)[name]);
      }
      fields.push_back(::arrow::field(name, infer(field_values, key, op)));
    }
    return ::arrow::struct_(fields);
  }
  return ::arrow::null();
}

void append(::arrow::ArrayBuilder& builder, const Json& v, std::string_view op) {
  if (v.is_null()) {
    check(builder.AppendNull(), op);
    return;
  }
  switch (builder.type()->id()) {
    case ::arrow::Type::BOOL:
      check(static_cast<::arrow::BooleanBuilder&>(builder).Append(v.get<bool>()), op);
      return;
    case ::arrow::Type::INT64:
      check(static_cast<::arrow::Int64Builder&>(builder).Append(v.get<int64_t>()), op);
      return;
    case ::arrow::Type::UINT64:
      check(static_cast<::arrow::UInt64Builder&>(builder).Append(v.get<uint64_t>()), op);
      return;
    case ::arrow::Type::DOUBLE:
      check(static_cast<::arrow::DoubleBuilder&>(builder).Append(v.get<double>()), op);
      return;
    case ::arrow::Type::STRING:
      check(static_cast<::arrow::StringBuilder&>(builder).Append(v.get_ref<const std::string&>()), op);
      return;
    case ::arrow::Type::LIST: {
      auto& list = static_cast<::arrow::ListBuilder&>(builder);
      check(list.Append(), op);
      for (const Json& e : v) append(*list.value_builder(), e, op);
      return;
    }
    case ::arrow::Type::STRUCT: {
      auto& structs = static_cast<::arrow::StructBuilder&>(builder);
      check(structs.Append(), op);
      for (int f = 0; f < structs.num_fields(); ++f) {
        const std::string& name = structs.type()->field(f)->name();
        const auto found = v.find(name);
        append(*structs.field_builder(f), found == v.end() ? Json(nullptr) : *found, op);
      }
      return;
    }
    default:
      check(builder.AppendNull(), op);
      return;
  }
}

}  // namespace

std::shared_ptr<::arrow::Array> json_array(const std::vector<Json>& values, const NestedKey& key, std::string_view op) {
  std::vector<const Json*> pointers;
  pointers.reserve(values.size());
  for (const Json& v : values) pointers.push_back(&v);
  const auto type = infer(pointers, key, op);
  std::unique_ptr<::arrow::ArrayBuilder> builder = value_or_throw(::arrow::MakeBuilder(type), op);
  for (const Json& v : values) append(*builder, v, op);
  return value_or_throw(builder->Finish(), op);
}

}  // namespace tensordict::detail::arrow_io
