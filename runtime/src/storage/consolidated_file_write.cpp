// consolidate({.filename = ...}): the storage is a shared mapping of a new
// file, and the metadata of the result follows the data (consolidated_file.h
// gives the layout). The file is written under a temporary name and renamed
// into place, so a reader sees the old file or the new one, never a part.
#include <ATen/ops/empty.h>
#include <nlohmann/json.hpp>

#include <array>
#include <string_view>

#include "core/kind_ops.h"
#include "core/format.h"
#include "storage/consolidated_file.h"
#include "storage/flat_storage.h"
#include "tensordict/dtype.h"
#include "tensordict/errors.h"
#include "tensordict/detail/impl.h"
#include "tensordict/lazy.h"
#include "tensordict/memmap.h"  // kLoadedClassKey
#include "tensordict/non_tensor.h"

namespace tensordict::detail {

namespace {

// The fields of a level's metadata: a nested level under one of these keys
// would be read back as the field.
constexpr std::array<std::string_view, 5> kReservedKeys = {"cls", "non_tensors", "leaves", "cls_metadata", "size"};

Json device_json(std::optional<at::Device> device) { return device ? Json(device->str()) : Json(nullptr); }

// tensordict records one name (or null) per batch dim, names or not.
Json names_json(const TensorDict& td) {
  Json names = Json::array();
  const Names& given = td.names();
  for (std::size_t d = 0; d < static_cast<std::size_t>(td.batch_dims()); ++d) {
    const bool named = d < given.size() && given[d].has_value();
    names.push_back(named ? Json(*given[d]) : Json(nullptr));
  }
  return names;
}

Json empty_level(std::string_view cls, Json cls_metadata) {
  return Json{{"cls", cls}, {"non_tensors", Json::object()}, {"leaves", Json::object()}, {"cls_metadata", std::move(cls_metadata)}};
}

// A NonTensorStack as tensordict records it: one level per stack dim (named
// as the tensordict's dim `dim`), the values as its members "0", "1", ... of
// batch size [].
Json stack_json(const Json& values, std::size_t dim, std::size_t dims, const Json& names,
                std::optional<at::Device> device, bool locked) {
  const Json name = dim < names.size() ? names[dim] : Json(nullptr);
  Json level = empty_level("NonTensorStack", {{"stack_dim", 0}, {"stack_dim_name", name}, {"is_locked", locked}});
  // The member names are new: appended directly (ordered_json's operator[]
  // searches its keys linearly, quadratic over the members).
  auto& members = (dim + 1 == dims ? level["non_tensors"] : level).get_ref<Json::object_t&>();
  members.reserve(members.size() + values.size());
  for (std::size_t i = 0; i < values.size(); ++i) {
    if (dim + 1 == dims) {
      members.emplace_back(std::to_string(i), Json::array({values[i], Json::array(), device_json(device)}));
    } else {
      members.emplace_back(std::to_string(i), stack_json(values[i], dim + 1, dims, names, device, locked));
    }
  }
  return level;
}

class MetadataWriter {
 public:
  MetadataWriter(const at::Tensor& storage, bool locked) : storage_(storage), locked_(locked) {}

  Json level(const TensorDict& td, std::vector<std::string>& path) const {
    if (detail::as_stacked(*td.impl())) return lazy_level(LazyStackedTensorDict(td), path);
    Json meta = empty_level("TensorDict", {{"device", device_json(td.device())},
                                           {"names", names_json(td)},
                                           {"batch_size", td.batch_size().vec()},
                                           {"is_locked", locked_}});
    td.impl()->for_each([&](const std::string& key, const Value& value) {
      if (value.is_tensor()) {
        meta["leaves"][key] = leaf(value.tensor());
      } else if (value.is_non_tensor()) {
        const NonTensorData& data = value.non_tensor();
        if (key == kLoadedClassKey && !data.is_stack() && data.data().is_string()) {
          meta["cls"] = data.data();  // a tensorclass read without its C++ type: its class again
        } else if (data.is_stack() && data.ids().dim() > 0) {
          meta[checked_key(key, path)] = stack_json(data.data(), 0, static_cast<std::size_t>(data.ids().dim()),
                                                    meta["cls_metadata"]["names"], td.device(), locked_);
        } else {
          meta["non_tensors"][key] = Json::array({data.data(), td.batch_size().vec(), device_json(td.device())});
        }
      } else {
        const std::string& slot = checked_key(key, path);
        path.push_back(key);
        meta[slot] = level(value.tensordict(), path);
        path.pop_back();
      }
    });
    return meta;
  }

 private:
  Json lazy_level(const LazyStackedTensorDict& lazy, std::vector<std::string>& path) const {
    const auto dim = static_cast<std::size_t>(lazy.stack_dim());
    const Names& names = lazy.names();
    const Json stack_dim_name = dim < names.size() && names[dim] ? Json(*names[dim]) : Json(nullptr);
    Json meta = empty_level("LazyStackedTensorDict",
                            {{"stack_dim", lazy.stack_dim()}, {"stack_dim_name", stack_dim_name}, {"is_locked", locked_}});
    const auto& members = lazy.tensordicts();
    for (std::size_t i = 0; i < members.size(); ++i) {
      path.push_back(std::to_string(i));
      meta[path.back()] = level(members[i], path);
      path.pop_back();
    }
    return meta;
  }

  // [dtype, shape, start, stop, pad]: where the leaf lies in the storage.
  Json leaf(const at::Tensor& t) const {
    const int64_t start = t.storage_offset() * static_cast<int64_t>(t.element_size()) -
                          storage_.storage_offset() * static_cast<int64_t>(storage_.element_size());
    const int64_t bytes = byte_size(t);
    const int64_t pad = align_up(bytes, 8) - bytes;
    return Json::array({fmt::format("torch.{}", dtype_name(t.scalar_type())), t.sizes().vec(), start, start + bytes + pad, pad});
  }

  static const std::string& checked_key(const std::string& key, const std::vector<std::string>& path) {
    for (std::string_view reserved : kReservedKeys) {
      if (key == reserved) {
        std::vector<std::string> where(path);
        where.push_back(key);
        throw ValueError(fmt::format(
            "consolidate: key {} cannot be written to a consolidated file: a nested level named '{}' would be read "
            "back as the level's \"{}\" field (tensordict's layout); rename it first",
            NestedKey(std::move(where)).repr(), key, key));
      }
    }
    return key;
  }

  const at::Tensor& storage_;
  bool locked_;
};

}  // namespace

Json consolidated_metadata(const TensorDict& consolidated, const at::Tensor& storage, bool locked) {
  std::vector<std::string> path;
  return MetadataWriter(storage, locked).level(consolidated, path);
}

ConsolidatedFileWriter::ConsolidatedFileWriter(const std::string& filename, int64_t data_bytes)
    : filename_(filename), data_bytes_(data_bytes), file_(filename) {
  if (data_bytes == 0) {
    storage_ = at::empty({0}, at::TensorOptions().dtype(at::kByte));
    return;
  }
  file_.resize(static_cast<std::size_t>(data_bytes));  // zeros: the padding as tensordict writes it
  storage_ = memmap::map_fd(file_.fd(), static_cast<std::size_t>(data_bytes), filename, /*shared=*/true);
}

void ConsolidatedFileWriter::commit(const TensorDict& consolidated, bool locked) {
  const Json metadata = consolidated_metadata(consolidated, storage_, locked);
  std::string json;
  try {
    json = metadata.dump();
  } catch (const std::exception&) {
    rethrow_reworded([&](std::string_view why) {
      return fmt::format("consolidate: cannot write the metadata of {} as JSON: {}", filename_, why);
    });
  }
  // The length as a little-endian int64 (tensordict writes the bytes of an
  // int64 tensor on a little-endian host).
  std::array<char, 8> length{};
  auto n = static_cast<uint64_t>(json.size());
  for (char& byte : length) {
    byte = static_cast<char>(n & 0xff);
    n >>= 8;
  }
  file_.write_at(json, static_cast<std::size_t>(data_bytes_));
  file_.write_at(std::string_view(length.data(), length.size()), static_cast<std::size_t>(data_bytes_) + json.size());
  file_.commit(/*sync=*/false);
}

}  // namespace tensordict::detail
