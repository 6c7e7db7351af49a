// An empty c10::Dict<std::string, IValue> (private): that type has no default
// constructor, its element types must be spelled out.
#pragma once

#include <ATen/core/Dict.h>
#include <ATen/core/ivalue.h>

namespace tensordict::detail {

inline c10::Dict<std::string, c10::IValue> empty_ivalue_dict() {
  return c10::impl::toTypedDict<std::string, c10::IValue>(c10::impl::GenericDict(c10::StringType::get(), c10::AnyType::get()));
}

}  // namespace tensordict::detail
