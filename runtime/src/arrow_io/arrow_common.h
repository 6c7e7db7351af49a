// What the Arrow conversions share (private): Arrow's Status as tensordict's
// errors, and keys as tensordict's messages print them.
#pragma once

#include <arrow/result.h>
#include <arrow/status.h>

#include <string>
#include <string_view>
#include <utility>

#include "tensordict/arrow.h"
#include "tensordict/key.h"

namespace tensordict::detail::arrow_io {

// Python's repr of the key as a tuple, ('a',) or ('a', 'b'): from_arrow's
// messages name a column by the tuple of its path.
std::string tuple_repr(const NestedKey& key);
// 'raise', 'fill' or 'mask', as tensordict's nulls= argument.
std::string_view nulls_repr(ArrowNulls nulls);

// Throws RuntimeError "<context>: <Arrow's message>" unless `status` is OK.
void check(const ::arrow::Status& status, std::string_view context);
template <class T>
T value_or_throw(::arrow::Result<T> result, std::string_view context) {
  check(result.status(), context);
  return std::move(result).ValueUnsafe();
}

}  // namespace tensordict::detail::arrow_io
