// to_safetensors: tensordict 0.15's encoding (tensordict/_safetensors.py
// _encode_level), laid out as the safetensors library lays a file out.
#include <ATen/ATen.h>
#include <nlohmann/json.hpp>
#include <fmt/format.h>

#include <algorithm>
#include <map>

#include "core/kind_ops.h"
#include "memmap/memmap_detail.h"
#include "safetensors/safetensors_format.h"
#include "tensordict/errors.h"
#include "tensordict/lazy.h"
#include "tensordict/memmap.h"
#include "tensordict/safetensors.h"

namespace tensordict {

namespace st = detail::safetensors;

namespace {

std::string key_repr(const std::vector<std::string>& path) {
  if (path.empty()) return "the root";
  std::string out = "(";
  for (std::size_t i = 0; i < path.size(); ++i) out += (i ? ", '" : "'") + path[i] + "'";
  return out + (path.size() == 1 ? ",)" : ")");
}

struct Encoder {
  std::map<std::string, at::Tensor> tensors;

  Json level(const TensorDict& td, const std::vector<std::string>& prefix) {
    Json out = Json::object();
    out["batch_size"] = td.batch_size().vec();
    if (td.has_names()) {
      Json names = Json::array();
      for (const auto& name : td.names()) names.push_back(name ? Json(*name) : Json(nullptr));
      out["names"] = names;
    } else {
      out["names"] = nullptr;
    }
    if (detail::as_stacked(*td.impl())) {
      const LazyStackedTensorDict stack(td);
      for (const auto& exclusive : stack.exclusive_keys()) {
        if (!exclusive.empty()) {
          throw TypeError(fmt::format("Cannot save the lazy stack at {} as safetensors: its entries have different "
                                      "keys. Give every entry the same keys first.",
                                      key_repr(prefix)));
        }
      }
      out["stack_dim"] = stack.stack_dim();
    }
    const auto cls = td.get_value(std::string(kLoadedClassKey));
    if (cls && cls->is_non_tensor() && !cls->non_tensor().is_stack()) out["class"] = cls->non_tensor().data();
    Json& entries = out["keys"] = Json::object();
    for (const auto& [key, value] : td.items()) {
      const std::string& name = key.back();
      if (name == kLoadedClassKey && out.contains("class")) continue;
      auto path = prefix;
      path.push_back(name);
      if (value.is_non_tensor()) {
        if (value.non_tensor().is_stack()) {
          throw TypeError(fmt::format(
              "Cannot save the non-tensor stack at {} as safetensors: only single JSON values are supported.",
              key_repr(path)));
        }
        entries[name] = Json{{"non_tensor", value.non_tensor().data()}};
      } else if (value.is_tensordict()) {
        entries[name] = Json{{"td", level(value.tensordict(), path)}};
      } else {
        const at::Tensor& t = value.tensor();
        if (t.is_nested() || t.layout() != at::kStrided) {
          throw TypeError(fmt::format("Cannot save the tensor at {} as safetensors: only dense tensors are supported, "
                                      "got layout {}{}.",
                                      key_repr(path), c10::str(t.layout()), t.is_nested() ? " (nested)" : ""));
        }
        if (!st::find_dtype(t.scalar_type())) {
          throw TypeError(fmt::format("Cannot save the tensor at {} as safetensors: dtype {} has no safetensors name "
                                      "here (supported: {})",
                                      key_repr(path), c10::toString(t.scalar_type()), st::known_dtypes()));
        }
        std::string joined;
        for (const auto& part : path) joined += (joined.empty() ? "" : ".") + part;
        if (tensors.count(joined)) {
          throw ValueError(fmt::format("Two keys of the tensordict have the safetensors name '{}'.", joined));
        }
        // Its own contiguous CPU copy when it is not one already (shared
        // memory is written once per name, as safetensors requires).
        tensors.emplace(joined, t.detach().to(at::kCPU).contiguous());
        entries[name] = Json{{"tensor", joined}};
      }
    }
    return out;
  }
};

}  // namespace

void to_safetensors(const TensorDict& td, const std::string& path) {
  Encoder encoder;
  const Json root = encoder.level(td, {});
  // safetensors' layout: the widest dtype first, then by name; offsets from
  // the end of the header, which is padded with spaces to 8 bytes.
  std::vector<std::pair<std::string, at::Tensor>> order(encoder.tensors.begin(), encoder.tensors.end());
  std::stable_sort(order.begin(), order.end(), [](const auto& a, const auto& b) {
    return st::find_dtype(a.second.scalar_type())->rank > st::find_dtype(b.second.scalar_type())->rank;
  });
  Json header = Json::object();
  header["__metadata__"] = Json{{std::string(st::kMetadataKey),
                                 st::python_json_dumps(Json{{"version", st::kFormatVersion}, {"root", root}})}};
  std::size_t offset = 0;
  for (const auto& [name, tensor] : order) {
    const std::size_t bytes = tensor.numel() * tensor.element_size();
    header[name] = Json{{"dtype", st::find_dtype(tensor.scalar_type())->name},
                        {"shape", tensor.sizes().vec()},
                        {"data_offsets", {offset, offset + bytes}}};
    offset += bytes;
  }
  std::string text = detail::memmap::dump_meta(header, path, "the safetensors header");
  text.append((8 - text.size() % 8) % 8, ' ');
  std::string length(8, '\0');
  for (int i = 0; i < 8; ++i) length[i] = static_cast<char>((uint64_t(text.size()) >> (8 * i)) & 0xFF);
  detail::memmap::AtomicFile file(path);
  file.write_at(length, 0);
  file.write_at(text, 8);
  std::size_t at = 8 + text.size();
  for (const auto& [name, tensor] : order) {
    const std::size_t bytes = tensor.numel() * tensor.element_size();
    file.write_at(std::string_view(static_cast<const char*>(tensor.data_ptr()), bytes), at);
    at += bytes;
  }
  file.commit(/*sync=*/true);
}

}  // namespace tensordict
