// The member names of tensordict::TensorClass<Derived> that a field of a
// tensorclass must not take: a field so named would hide the member in the
// derived struct, and TensorClass's own code (which calls these members on
// Derived objects) would stop compiling, deep inside tensorclass.h.
//
// The one list of them: tensorclass-gen rejects such field names when it
// reads a schema, and TensorClass<Derived> rejects them at compile time in a
// hand-written field table. tests/tensorclass/test_member_names.cpp checks
// that the list is exactly the public members declared in tensorclass.h.
//
// Standard headers and op_lists.h (macros only): the generator, which does
// not see libtorch, includes this file too.
#pragma once

#include <algorithm>
#include <iterator>
#include <string_view>

#include "tensordict/op_lists.h"

namespace tensordict {

// Every public member of TensorClass<Derived>, sorted. Adding a public member
// to tensorclass.h means adding its name here (the test above fails until then).
// clang-format off
inline constexpr std::string_view tensorclass_public_members[] = {
    "TensorClass",          "add",                  "add_",                 "addcdiv",              "addcdiv_",
    "addcmul",              "addcmul_",             "all",                  "any",                  "apply",
    "apply_",               "batch_dims",           "batch_size",           "cat",                  "chunk",
    "clamp",                "clamp_",               "clamp_max",            "clamp_max_",           "clamp_min",
    "clamp_min_",           "clone",                "consolidate",          "consolidated_storage", "contains",
    "contiguous",           "cpu",                  "detach",               "device",               "dim",
    "exclude",              "expand",               "fields",               "fill_",                "flatten",
    "from_h5",              "from_tensordict",      "gather",               "get",                  "has_names",
    "index",                "index_put_",           "init_",                "is_consolidated",      "is_locked",
    "is_memmap",            "is_shared",            "len",                  "lerp",                 "lerp_",
    "load",                 "load_memmap",          "lock_",                "masked_fill",          "masked_fill_",
    "masked_select",        "memmap",               "memmap_",              "names",                "num_fields",
    "numel",                "permute",              "pin_memory",           "refine_names",         "register_memmap",
    "rename_",              "repr",                 "reshape",              "save",                 "saved_path",
    "schema",               "select",               "set",                  "set_",                 "sizes",
    "split",                "squeeze",              "stack",                "sub",                  "sub_",
    "to",                   "to_h5",                "to_tensordict",        "transpose",            "unbind",
    "unflatten",            "unlock_",              "unsqueeze",            "update",               "update_",
    "update_at_",           "validate",             "view",                 "where",                "zero_",
};
// clang-format on

// The members TensorClass declares from the op lists (op_lists.h): each op,
// and its in-place form where it has one.
#define TENSORCLASS_OP_NAME(name) #name,
#define TENSORCLASS_OP_NAMES_INPLACE(name) #name, #name "_",
inline constexpr std::string_view tensorclass_op_members[] = {
    TENSORDICT_UNARY_OPS(TENSORCLASS_OP_NAMES_INPLACE) TENSORDICT_BINARY_OPS(TENSORCLASS_OP_NAMES_INPLACE)
    TENSORDICT_BINARY_OPS_NO_INPLACE(TENSORCLASS_OP_NAMES_INPLACE) TENSORDICT_COMPARISONS(TENSORCLASS_OP_NAME)
    TENSORDICT_PREDICATES(TENSORCLASS_OP_NAME) TENSORDICT_REDUCTIONS(TENSORCLASS_OP_NAME)};
#undef TENSORCLASS_OP_NAME
#undef TENSORCLASS_OP_NAMES_INPLACE

// tensordict methods that TensorClass does not have yet. Field names the
// generator has always refused, kept refused so that adding one of these
// methods to TensorClass breaks no schema. None of them is a member today
// (the test above checks that too).
// clang-format off
inline constexpr std::string_view tensorclass_future_members[] = {
    "cuda", "items", "keys", "shape", "values",
};
// clang-format on

constexpr bool is_tensorclass_public_member(std::string_view name) {
  return std::find(std::begin(tensorclass_public_members), std::end(tensorclass_public_members), name) !=
             std::end(tensorclass_public_members) ||
         std::find(std::begin(tensorclass_op_members), std::end(tensorclass_op_members), name) !=
             std::end(tensorclass_op_members);
}

// Whether a field named `name` would hide a member of TensorClass<Derived>:
// a public one, or any name ending with '_': the in-place methods' (tensordict's
// convention) and the private members that TensorClass reaches through Derived
// objects (tc_batch_size_, map_into_, ...). Its other private helpers
// (derived) are only named unqualified inside TensorClass, where no field of
// Derived can hide them.
constexpr bool hides_tensorclass_member(std::string_view name) {
  return (!name.empty() && name.back() == '_') || is_tensorclass_public_member(name);
}

}  // namespace tensordict
