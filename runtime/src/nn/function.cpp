// Kwargs and the arity check of wrapped functions.
#include "tensordict/nn/function.h"
#include "tensordict/errors.h"

#include <fmt/format.h>

#include <algorithm>
#include <stdexcept>

namespace tensordict::nn {

Kwargs::Kwargs(std::vector<std::string> names, std::vector<at::Tensor> values)
    : names_(std::move(names)), values_(std::move(values)) {
  if (names_.size() != values_.size()) {
    throw ValueError(fmt::format("Kwargs: {} name(s) for {} tensor(s)", names_.size(), values_.size()));
  }
}

bool Kwargs::contains(std::string_view name) const {
  return std::find(names_.begin(), names_.end(), name) != names_.end();
}

const at::Tensor& Kwargs::operator[](std::string_view name) const {
  const auto it = std::find(names_.begin(), names_.end(), name);
  if (it == names_.end()) {
    std::string given;
    for (const auto& n : names_) given += fmt::format("{}'{}'", given.empty() ? "" : ", ", n);
    throw TypeError(fmt::format("missing keyword argument '{}' (the keyword arguments are: {})", name,
                                 given.empty() ? "none" : given));
  }
  return values_[static_cast<std::size_t>(it - names_.begin())];
}

namespace detail {
void check_arity(std::size_t expected, std::size_t got) {
  if (expected != got) {
    throw ValueError(
        fmt::format("TensorDictModule: the wrapped function takes {} tensor(s) but {} were given", expected, got));
  }
}
}  // namespace detail

}  // namespace tensordict::nn
