#include "arrow_io/arrow_common.h"

#include <fmt/format.h>

#include "tensordict/errors.h"

namespace tensordict::detail::arrow_io {

std::string tuple_repr(const NestedKey& key) {
  if (key.is_nested()) return key.repr();
  return "(" + key.repr() + ",)";
}

std::string_view nulls_repr(ArrowNulls nulls) {
  switch (nulls) {
    case ArrowNulls::Raise:
      return "'raise'";
    case ArrowNulls::Fill:
      return "'fill'";
    case ArrowNulls::Mask:
      return "'mask'";
  }
  return "'?'";
}

void check(const ::arrow::Status& status, std::string_view context) {
  if (!status.ok()) throw RuntimeError(fmt::format("{}: {}", context, status.ToString()));
}

}  // namespace tensordict::detail::arrow_io
