// to_dict / from_dict: tensordicts as nested c10::Dicts of IValues (the C++
// form of tensordict's nested Python dicts).
#include <ATen/core/Dict.h>
#include <ATen/core/ivalue.h>

#include <nlohmann/json.hpp>
#include <stdexcept>

#include "core/format.h"
#include "core/ivalue_dict.h"
#include "core/kind_ops.h"
#include "core/nesting.h"
#include "tensordict/base.h"
#include "tensordict/errors.h"
#include "tensordict/non_tensor.h"

namespace tensordict {

namespace {

using IDict = c10::Dict<std::string, c10::IValue>;

c10::IValue to_ivalue(const Json& value) {
  switch (value.type()) {
    case Json::value_t::null: return c10::IValue();
    case Json::value_t::boolean: return c10::IValue(value.get<bool>());
    case Json::value_t::number_integer:
    case Json::value_t::number_unsigned: return c10::IValue(value.get<int64_t>());
    case Json::value_t::number_float: return c10::IValue(value.get<double>());
    case Json::value_t::string: return c10::IValue(value.get<std::string>());
    case Json::value_t::array: {
      c10::impl::GenericList list(c10::AnyType::get());
      for (const auto& item : value) list.push_back(to_ivalue(item));
      return c10::IValue(list);
    }
    default: {
      IDict dict = detail::empty_ivalue_dict();
      for (const auto& [k, v] : value.items()) dict.insert(k, to_ivalue(v));
      return c10::IValue(dict);
    }
  }
}

// A non-tensor value back as JSON; nullopt for what JSON cannot hold.
std::optional<Json> to_json(const c10::IValue& value) {
  if (value.isNone()) return Json(nullptr);
  if (value.isBool()) return Json(value.toBool());
  if (value.isInt()) return Json(value.toInt());
  if (value.isDouble()) return Json(value.toDouble());
  if (value.isString()) return Json(value.toStringRef());
  if (value.isList()) {
    Json out = Json::array();
    for (const c10::IValue& item : value.toListRef()) {
      auto converted = to_json(item);
      if (!converted) return std::nullopt;
      out.push_back(std::move(*converted));
    }
    return out;
  }
  return std::nullopt;
}

IDict level_to_dict(const TensorDict& td) {
  detail::NestingGuard guard("to_dict");
  // A dict cannot hold what only some of a lazy stack's members have.
  if (const auto refuse = detail::kind_ops(*td.impl()).check_to_dict) refuse(td);
  IDict out = detail::empty_ivalue_dict();
  for (const auto& key : td.keys()) {
    const Value value = *td.get_value(key);
    if (value.is_tensor()) {
      out.insert(key.back(), value.tensor());
    } else if (value.is_tensordict()) {
      out.insert(key.back(), level_to_dict(value.tensordict()));
    } else {
      out.insert(key.back(), to_ivalue(td.get_non_tensor(key)));
    }
  }
  return out;
}

void fill_level(TensorDict& td, const IDict& dict, std::vector<std::string>& path) {
  detail::NestingGuard guard("from_dict");
  for (const auto& entry : dict) {
    path.push_back(entry.key());
    const NestedKey key{std::span<const std::string>(path)};
    const NestedKey here(entry.key());
    const c10::IValue& value = entry.value();
    if (value.isTensor()) {
      td.set(here, value.toTensor());
    } else if (value.isGenericDict() && value.toGenericDict().keyType()->kind() == c10::TypeKind::StringType) {
      TensorDict nested({}, td.batch_size(), td.device());
      fill_level(nested, c10::impl::toTypedDict<std::string, c10::IValue>(value.toGenericDict()), path);
      td.set(here, nested);
    } else if (auto json = to_json(value)) {
      td.set_non_tensor(here, *json);
    } else {
      throw TypeError(
          fmt::format("from_dict: key {} holds a {}; expected a tensor, a dict with string keys, "
                      "or a string, number, bool, None or list of them",
                      key.repr(), value.tagKind()));
    }
    path.pop_back();
  }
}

}  // namespace

c10::Dict<std::string, c10::IValue> TensorDict::to_dict() const { return level_to_dict(*this); }

TensorDict TensorDict::from_dict(const c10::Dict<std::string, c10::IValue>& dict, const FromDictOptions& options) {
  const auto& batch_size = options.batch_size;
  const auto& device = options.device;
  const auto& auto_batch_size = options.auto_batch_size;
  const auto& batch_dims = options.batch_dims;
  if (batch_size && batch_dims) throw ValueError("Cannot pass both batch_size and batch_dims to `from_dict`.");
  TensorDict out({}, batch_size ? at::IntArrayRef(*batch_size) : at::IntArrayRef(), device);
  std::vector<std::string> path;
  fill_level(out, dict, path);
  if (!batch_size && (auto_batch_size || batch_dims)) out.auto_batch_size_(batch_dims);
  return out;
}

}  // namespace tensordict
