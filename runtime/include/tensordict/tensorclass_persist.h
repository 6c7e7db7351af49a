// Non-template helpers behind TensorClass<Derived>'s memmap and h5 methods
// (compiled once in the runtime, src/tensorclass_persist.cpp).
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "tensordict/base.h"
#include "tensordict/schema.h"

namespace tensordict::detail {

// Checks that meta.json `meta` of `dir` names the class `info` (its
// python_type, or the same bare class name as a Python module elsewhere
// writes it); throws std::runtime_error naming the file and both classes.
void check_memmap_class(const Json& meta, const schema::ClassInfo& info, const std::string& dir);

// h5 stores no batch size: the number of batch dims of a `info` level comes
// from a tensor field with a declared shape (its dims minus the declared
// feature dims) or the class's declared batch names; without either, the
// parent's batch size (`parent`, when nested) or the batch size `td` was read with.
std::vector<int64_t> infer_batch_size(const schema::ClassInfo& info, const TensorDictBase& td,
                                      std::optional<at::IntArrayRef> parent);

// std::invalid_argument "Class.name: non-tensor field must be a string, got 3".
[[noreturn]] void throw_bad_non_tensor(const std::string& path, const schema::FieldInfo& field, const Json& got);

}  // namespace tensordict::detail
