// fmt::format("{}", td) for every tensordict kind: tensordict's repr (repr.h).
// Apart from repr.h so that only the units that format with fmt parse it.
#pragma once

#include <fmt/format.h>

#include <string>
#include <string_view>
#include <type_traits>

#include "tensordict/repr.h"

// fmt::format("{}", td) for every tensordict kind.
template <class T, class Char>
struct fmt::formatter<T, Char, std::enable_if_t<std::is_base_of_v<tensordict::TensorDict, T>>>
    : fmt::formatter<std::basic_string_view<Char>, Char> {
  template <class Context>
  auto format(const T& td, Context& ctx) const {
    const std::string text = tensordict::repr(td);
    return fmt::formatter<std::basic_string_view<Char>, Char>::format({text.data(), text.size()}, ctx);
  }
};
