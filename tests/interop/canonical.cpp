#include "canonical.h"

#include <nlohmann/json.hpp>

#include <tensordict/dtype.h>
#include <tensordict/detail/impl.h>
#include <tensordict/lazy.h>
#include <tensordict/memmap.h>
#include <tensordict/non_tensor.h>

#include <cctype>
#include <stdexcept>
#include <string>

namespace interop {

using tensordict::Json;
using tensordict::TensorDict;
using tensordict::Value;

namespace {

std::string hex_bytes(const at::Tensor& tensor) {
  // resolve_conj/resolve_neg: the bytes of the values, not of a lazy view.
  const at::Tensor t = tensor.cpu().resolve_conj().resolve_neg().contiguous();
  const auto* bytes = static_cast<const unsigned char*>(t.data_ptr());
  const auto n = static_cast<std::size_t>(t.numel()) * t.element_size();
  static constexpr char kHex[] = "0123456789abcdef";
  std::string out;
  out.reserve(2 * n);
  for (std::size_t i = 0; i < n; ++i) {
    out += kHex[bytes[i] >> 4];
    out += kHex[bytes[i] & 15];
  }
  return out;
}


Json canonical_value(const Value& value) {
  if (value.is_tensor()) return canonical_tensor(value.tensor());
  if (value.is_tensordict()) return canonical(value.tensordict());
  const auto& data = value.non_tensor();
  return {{"kind", data.is_stack() ? "non_tensor_stack" : "non_tensor"}, {"value", data.data()}};
}

// torch's name of the dtype: tensordict's, or for a dtype the runtime names
// none of (uint16, uint32, uint64, which from_arrow gives), libtorch's in
// lower case, as str(torch.uint16) prints it.
std::string dtype_of(at::ScalarType dtype) {
  try {
    return std::string(tensordict::dtype_name(dtype));
  } catch (const std::invalid_argument&) {
    std::string name = c10::toString(dtype);
    for (char& c : name) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    return name;
  }
}

Json names_of(const TensorDict& td) {
  if (!td.has_names()) return nullptr;
  Json names = Json::array();
  for (const auto& name : td.names()) names.push_back(name ? Json(*name) : Json(nullptr));
  return names;
}

}  // namespace

Json canonical_tensor(const at::Tensor& t) {
  if (t.is_nested()) {
    Json components = Json::array();
    for (const auto& c : t.unbind(0)) components.push_back(canonical_tensor(c));
    return {{"kind", "nested_tensor"}, {"dtype", dtype_of(t.scalar_type())}, {"components", components}};
  }
  return {{"kind", "tensor"},
          {"dtype", dtype_of(t.scalar_type())},
          {"shape", t.sizes().vec()},
          {"data", hex_bytes(t)}};
}

Json canonical(const TensorDict& td) {
  if (td.kind() == tensordict::Kind::LazyStack) {
    const tensordict::LazyStackedTensorDict lazy(td);
    Json members = Json::array();
    for (const auto& member : lazy.tensordicts()) members.push_back(canonical(member));
    return {{"kind", "LazyStackedTensorDict"},
            {"batch_size", td.batch_size().vec()},
            {"stack_dim", lazy.stack_dim()},
            {"members", std::move(members)}};
  }
  Json entries = Json::object();
  Json cls = nullptr;
  td.impl()->for_each([&](const std::string& key, const Value& value) {
    if (key == tensordict::kLoadedClassKey && value.is_non_tensor() && !value.non_tensor().is_stack()) {
      cls = value.non_tensor().data();
      return;
    }
    entries[key] = canonical_value(value);
  });
  return {{"kind", "TensorDict"},
          {"batch_size", td.batch_size().vec()},
          {"names", names_of(td)},
          {"class", std::move(cls)},
          {"entries", std::move(entries)}};
}

}  // namespace interop
