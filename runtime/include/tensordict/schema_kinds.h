// The vocabulary of a schema, one definition for the generator (its IR) and
// the runtime (the tables generated code holds). Standard headers only: the
// generator includes it without libtorch.
#pragma once

#include <cstdint>

namespace tensordict::schema {

// What a field holds.
enum class FieldKind : std::uint8_t {
  Tensor,       // a torch::Tensor member
  TensorClass,  // a nested generated tensorclass member
  NonTensor,    // a string / number / bool / list member carried through ops
  NonTensorStack,  // one string / number / bool per batch element (NonTensorStack<T>)
};

// One entry of a field's declared shape.
enum class DimKind : std::uint8_t {
  Batch,   // "..." : all batch dims of the instance
  Fixed,   // an integer size
  Symbol,  // an upper-case name that must agree across the fields of one instance
};

// Non-tensor value types (a list type is `list` with `element` set).
enum class ValueType : std::uint8_t { None, String, Int, Float, Bool, List };

}  // namespace tensordict::schema
