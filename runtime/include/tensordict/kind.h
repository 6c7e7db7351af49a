// The kinds of tensordict: what storage a TensorDict handle's impl is. Users
// hold a TensorDict whatever the kind (as an at::Tensor whatever its layout);
// a kind's own extras are reached through its class (LazyStackedTensorDict,
// SubTensorDict, PersistentTensorDict), converted to with TensorDict::as<K>().
#pragma once

#include <cstdint>
#include <string_view>

namespace tensordict {

enum class Kind : uint8_t {
  Dense,       // TensorDict: owns its entries (kinds/dense)
  LazyStack,   // LazyStackedTensorDict: members stacked on access (kinds/lazy)
  SubView,     // SubTensorDict: a view of another tensordict at an index (kinds/sub)
  Persistent,  // PersistentTensorDict: an HDF5 file (kinds/persistent)
};

// The class name tensordict prints for the kind (repr, memmap's "_type").
constexpr std::string_view type_name(Kind kind) {
  switch (kind) {
    case Kind::Dense: return "TensorDict";
    case Kind::LazyStack: return "LazyStackedTensorDict";
    case Kind::SubView: return "_SubTensorDict";
    case Kind::Persistent: return "PersistentTensorDict";
  }
  return "TensorDict";
}

// The C++ class that offers the kind's own methods.
constexpr std::string_view class_name(Kind kind) {
  return kind == Kind::SubView ? std::string_view("SubTensorDict") : type_name(kind);
}

}  // namespace tensordict
