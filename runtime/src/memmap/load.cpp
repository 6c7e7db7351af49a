// load_memmap / load / memmap_refresh_: reading a tree in tensordict's layout.
// Leaves map their files (nothing is read); every input is validated first.
#include <ATen/ATen.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <mutex>
#include <stdexcept>
#include <unordered_map>

#include "core/kind_ops.h"
#include "kinds/dense/dense_impl.h"
#include "core/format.h"
#include "kinds/lazy/lazy_impl.h"
#include "core/nesting.h"
#include "memmap/memmap_detail.h"
#include "tensordict/base.h"
#include "tensordict/dtype.h"
#include "tensordict/errors.h"
#include "tensordict/detail/impl.h"
#include "tensordict/lazy.h"
#include "tensordict/detail/tensorclass_memmap.h"
#include "tensordict/memmap.h"
#include "tensordict/non_tensor.h"
#include "tensordict/detail/tensorclass_support.h"  // leaf_shape, leaf_starts_with

namespace tensordict {

namespace detail::memmap {

std::vector<int64_t> read_shape(const Json& value, const fs::path& file, std::string_view what) {
  if (!value.is_array()) {
    throw RuntimeError(
        fmt::format("malformed {}: {} must be a list of sizes, got {}", file.string(), what, value.dump()));
  }
  std::vector<int64_t> shape;
  for (const auto& s : value) {
    if (!s.is_number_integer() || s.get<int64_t>() < 0) {
      throw RuntimeError(fmt::format("malformed {}: {} must be a list of non-negative sizes, got {}",
                                           file.string(), what, value.dump()));
    }
    shape.push_back(s.get<int64_t>());
  }
  return shape;
}

bool starts_with(at::IntArrayRef sizes, at::IntArrayRef prefix) {
  return sizes.size() >= prefix.size() && sizes.slice(0, prefix.size()) == prefix;
}

std::string known_dtypes() {
  return "torch.float32, float64, float16, bfloat16, int8, int16, int32, int64, uint8, bool, complex64, complex128";
}

Names read_dim_names(const Json& value, const fs::path& file, std::string_view what, std::size_t batch_dims) {
  const auto malformed = [&] {
    return RuntimeError(
        fmt::format("malformed {}: {} must list one name (a string or null) per batch dim ({}), got {}",
                    file.string(), what, batch_dims, value.dump()));
  };
  if (!value.is_array() || value.size() != batch_dims) throw malformed();
  Names names;
  for (const auto& name : value) {
    if (!name.is_string() && !name.is_null()) throw malformed();
    names.push_back(name.is_string() ? std::optional<std::string>(name.get<std::string>()) : std::nullopt);
  }
  try {
    return checked_names(std::move(names), batch_dims);
  } catch (const std::invalid_argument& e) {
    throw RuntimeError(fmt::format("malformed {}: {}", file.string(), e.what()));
  }
}

namespace {

std::mutex& registry_mutex() {
  static std::mutex m;
  return m;
}

std::unordered_map<std::string, MemmapLoader>& registry() {
  static std::unordered_map<std::string, MemmapLoader> r;
  return r;
}

// The registered loader for `type` ("<class 'module.Name'>"), else for "Name".
MemmapLoader registered_loader(const std::string& type) {
  std::lock_guard lock(registry_mutex());
  auto& r = registry();
  if (auto it = r.find(type); it != r.end()) return it->second;
  if (auto it = r.find(bare_class_name(type)); it != r.end()) return it->second;
  return nullptr;
}

}  // namespace

bool type_is(const std::string& type, std::string_view cls) {
  // "<class 'module.Class'>": match the class name, whatever module wrote it.
  const std::string tail = fmt::format(".{}'>", cls);
  return type.size() > tail.size() && type.starts_with("<class '") && type.ends_with(tail);
}

std::string bare_class_name(const std::string& type) {
  std::string bare = type;
  if (bare.starts_with("<class '") && bare.ends_with("'>")) bare = bare.substr(8, bare.size() - 10);
  if (auto dot = bare.rfind('.'); dot != std::string::npos) bare = bare.substr(dot + 1);
  return bare;
}

namespace {

// Two names for one key (tensordict's encoding and an older writer's raw
// name, `a%20b` and `a b`) would make which data loads depend on the order
// of the lookups: refused.
[[noreturn]] void refuse_two_names(const fs::path& dir, const std::string& key, const fs::path& encoded,
                                   const fs::path& raw) {
  throw RuntimeError(fmt::format("{}: key '{}' has two entries, {} and the older unencoded {}; remove one",
                                 (dir / "meta.json").string(), key, encoded.filename().string(),
                                 raw.filename().string()));
}

}  // namespace

// The sub-directory of a collection entry: the encoded name, else the raw one.
fs::path entry_dir(const fs::path& dir, const std::string& key) {
  fs::path encoded = dir / encode_key(key);
  fs::path raw = dir / key;
  const bool legacy = encoded != raw && safe_legacy_key(key, true) && tree_dir(raw);
  if (tree_dir(encoded)) {
    if (legacy) refuse_two_names(dir, key, encoded, raw);
    return encoded;
  }
  if (legacy) return raw;
  throw RuntimeError(fmt::format("{} lists key '{}' as a collection but its directory {} is missing",
                                       (dir / "meta.json").string(), key, encoded.string()));
}

// The data file of a leaf: the encoded name, else the raw one (older writers).
fs::path leaf_file(const fs::path& dir, const std::string& key) {
  fs::path encoded = dir / (encode_key(key) + ".memmap");
  fs::path raw = dir / (key + ".memmap");
  const bool legacy = encoded != raw && safe_legacy_key(key, false) && tree_entry_exists(raw);
  if (tree_entry_exists(encoded)) {
    if (legacy) refuse_two_names(dir, key, encoded, raw);
    return encoded;
  }
  return legacy ? raw : encoded;
}

namespace {

// Level metadata a meta.json may hold besides its entries (objects): what
// tensordict writes, and anything private to it ("_"-prefixed). Another
// key with a list, string or number would be an entry loaded as nothing.
bool level_metadata(const std::string& key) {
  return key == "shape" || key == "device" || key == "stack_dim" || key == "stack_dim_name" ||
         (!key.empty() && key.front() == '_');
}

Value load_any(const fs::path& dir, std::optional<at::Device> device, std::optional<std::size_t> max_dims);

// The dim names tensordict (since its format version 1) writes as "_names":
// one string or null per batch dim. A user key named "_names" is an object
// (an entry), and then the level has no names, as tensordict reads it.
Names read_names(const Json& meta, const fs::path& file, std::size_t batch_dims) {
  if (!meta.contains("_names") || meta["_names"].is_object() || meta["_names"].is_null()) return {};
  return read_dim_names(meta["_names"], file, "\"_names\"", batch_dims);
}

// Nested levels share the dims names of their parent (the first ones of their own).
void check_child_names(const TensorDict& child, const Names& parent, const fs::path& file, const std::string& key) {
  bool parent_named = false;
  for (const auto& name : parent) parent_named = parent_named || name.has_value();
  if (!parent_named || !detail::kind_ops(*child.impl()).owns_entries) return;
  const Names& names = child.names();
  if (!std::equal(parent.begin(), parent.end(), names.begin())) {
    throw RuntimeError(fmt::format("{}: the dim names of key '{}' do not start with the level's names",
                                         file.string(), key));
  }
}

TensorDict load_td(const fs::path& dir, const Json& meta, std::optional<at::Device> device) {
  const fs::path file = dir / "meta.json";
  const auto batch = read_shape(meta.contains("shape") ? meta["shape"] : Json::array(), file, "\"shape\"");
  std::optional<at::Device> level_device = device;
  if (!level_device && meta.contains("device") && meta["device"].is_string() && meta["device"] != "None") {
    try {
      level_device = at::Device(meta["device"].get<std::string>());
    } catch (const std::exception&) {
      throw RuntimeError(fmt::format("malformed {}: unknown device {}", file.string(), meta["device"].dump()));
    }
  }
  auto impl = std::make_shared<DenseImpl>(batch, level_device, read_names(meta, file, batch.size()));
  // An archive's levels are views of its mapping, not memory-mapped directories.
  const bool mapped = (!level_device || level_device->is_cpu()) && !reading_archive();
  for (const auto& [key, entry] : meta.items()) {
    if (!entry.is_object()) {
      if (level_metadata(key)) continue;
      throw RuntimeError(fmt::format("malformed {}: key '{}' holds a JSON {}, not an entry's description (an object)",
                                     file.string(), key, entry.type_name()));
    }
    if (entry.contains("type")) {
      Value value = load_any(entry_dir(dir, key), level_device, batch.size());
      if (value.is_tensordict() && !starts_with(value.tensordict().batch_size(), batch)) {
        throw RuntimeError(fmt::format("{}: the batch size {} of key '{}' does not start with the level's {}",
                                             file.string(), shape_string(value.tensordict().batch_size()), key,
                                             shape_string(batch)));
      }
      if (value.is_tensordict()) check_child_names(value.tensordict(), impl->names(), file, key);
      if (value.is_non_tensor() && value.non_tensor().is_stack() &&
          !starts_with(value.non_tensor().ids().sizes(), batch)) {
        throw RuntimeError(fmt::format("{}: the NonTensorStack of key '{}' has shape {}, not the level's batch {}",
                                             file.string(), key, shape_string(value.non_tensor().ids().sizes()),
                                             shape_string(batch)));
      }
      impl->insert(key, std::move(value));
      continue;
    }
    const Json& dtype_json = entry.contains("dtype") ? entry["dtype"] : Json();
    if (!dtype_json.is_string()) {
      throw RuntimeError(fmt::format("malformed {}: key '{}' has no dtype string", file.string(), key));
    }
    const auto dtype = dtype_from_name(dtype_json.get<std::string>());
    if (!dtype) {
      throw RuntimeError(fmt::format("{}: key '{}' has unknown dtype '{}' (expected one of {})", file.string(),
                                           key, dtype_json.get<std::string>(), known_dtypes()));
    }
    const auto shape =
        read_shape(entry.contains("shape") ? entry["shape"] : Json(), file, fmt::format("the shape of key '{}'", key));
    if (entry.contains("is_nested") && entry["is_nested"] == true) {
      at::Tensor nested = load_jagged(leaf_file(dir, key), *dtype, shape, key);
      if (!leaf_starts_with(nested, batch)) {
        throw RuntimeError(fmt::format("{}: key '{}' is a nested tensor of shape {}, which does not start with the batch "
                                             "size {}",
                                             file.string(), key, shape_string(leaf_shape(nested)), shape_string(batch)));
      }
      if (level_device && !level_device->is_cpu()) nested = nested.to(*level_device);
      impl->insert(key, Value(std::move(nested)));
      continue;
    }
    if (!starts_with(shape, batch)) {
      throw RuntimeError(fmt::format("{}: key '{}' has shape {}, which does not start with the batch size {}",
                                           file.string(), key, shape_string(shape), shape_string(batch)));
    }
    at::Tensor tensor = map_existing(leaf_file(dir, key), *dtype, shape, key);
    if (level_device && !level_device->is_cpu()) tensor = tensor.to(*level_device);
    impl->insert(key, Value(std::move(tensor)));
  }
  if (mapped) mark_memmapped(impl, dir);
  return TensorDict(impl);
}

TensorDict load_lazy(const fs::path& dir, const Json& meta, std::optional<at::Device> device) {
  const fs::path file = dir / "meta.json";
  if (!meta.contains("stack_dim") || !meta["stack_dim"].is_number_integer()) {
    throw RuntimeError(
        fmt::format("malformed {}: a LazyStackedTensorDict needs an integer stack_dim", file.string()));
  }
  std::vector<TensorDict> members;
  for (std::size_t i = 0; tree_dir(dir / std::to_string(i)); ++i) {
    Value v = load_any(dir / std::to_string(i), device, std::nullopt);
    if (!v.is_tensordict()) {
      throw RuntimeError(
          fmt::format("{}: member {} of a LazyStackedTensorDict is not a tensordict", dir.string(), i));
    }
    members.push_back(v.tensordict());
  }
  if (members.empty()) {
    throw RuntimeError(
        fmt::format("{}: a LazyStackedTensorDict directory needs member directories 0/, 1/, ...", dir.string()));
  }
  const int64_t stack_dim = meta["stack_dim"].get<int64_t>();
  const auto dims = static_cast<int64_t>(members.front().batch_dims());
  if (stack_dim < 0 || stack_dim > dims) {
    throw RuntimeError(fmt::format("malformed {}: stack_dim {} is out of range for members with {} batch dims",
                                         file.string(), stack_dim, dims));
  }
  // Members keep their own keys, feature shapes and batch sizes (tensordict
  // 0.15 stacks members of different batch sizes, -1 where they differ);
  // only their numbers of batch dims must agree.
  for (std::size_t i = 1; i < members.size(); ++i) {
    if (members[i].batch_dims() != members.front().batch_dims()) {
      throw RuntimeError(fmt::format("{}: member {} of the LazyStackedTensorDict has batch size {}, member 0 has {}: "
                                     "the members of a lazy stack have as many batch dims",
                                     dir.string(), i, shape_string(members[i].batch_size()),
                                     shape_string(members.front().batch_size())));
    }
  }
  LazyStackedTensorDict lazy(std::move(members), stack_dim);
  if ((!device || device->is_cpu()) && !reading_archive()) mark_memmapped(lazy.impl(), dir);
  return lazy;
}

NonTensorData load_non_tensor_stack(const fs::path& dir, const Json& meta, std::optional<std::size_t> max_dims) {
  if (!meta.contains("data") || !meta["data"].is_array()) {
    throw RuntimeError(
        fmt::format("malformed {}: a NonTensorStack needs a \"data\" list (pickled stacks are not supported)",
                    (dir / "meta.json").string()));
  }
  // tensordict's rule: the list is the first stack dim, and each further level
  // of equally long lists another one (at most the parent's batch dims).
  std::vector<int64_t> shape;
  std::vector<Json> level{meta["data"]};
  while (!level.empty() && (!max_dims || shape.size() < std::max<std::size_t>(*max_dims, 1))) {
    const std::size_t n = level.front().is_array() ? level.front().size() : 0;
    bool regular = true;
    for (const auto& item : level) regular = regular && item.is_array() && item.size() == n;
    if (!regular) break;
    shape.push_back(static_cast<int64_t>(n));
    std::vector<Json> next;
    for (const auto& item : level) next.insert(next.end(), item.begin(), item.end());
    level = std::move(next);
  }
  return NonTensorData::stack(std::move(level), shape);
}

// Python's str(cls): "<class 'module.Name'>".
bool is_class_string(const std::string& type) {
  return type.size() > 10 && type.starts_with("<class '") && type.ends_with("'>");
}

// A tensorclass no loader is registered for (a Python @tensorclass): its
// fields as a TensorDict, its class name in the kLoadedClassKey entry.
TensorDict load_unknown_class(const fs::path& dir, const Json& meta, const std::string& type,
                              std::optional<at::Device> device) {
  const fs::path file = dir / "meta.json";
  if (!tree_dir(dir / "_tensordict")) {
    throw RuntimeError(fmt::format(
        "{}: _type {} is neither a tensordict class nor a registered one, and the directory is no tensorclass "
        "either: its tensor fields directory {} is missing",
        file.string(), type, (dir / "_tensordict").string()));
  }
  TensorDict td = load_tensorclass_level(dir.string(), meta, device);
  if (td.contains(std::string(kLoadedClassKey))) {
    throw RuntimeError(fmt::format("{}: the tensorclass {} has a field named '{}', which holds the class name "
                                         "of a class loaded without a registered loader",
                                         file.string(), type, kLoadedClassKey));
  }
  td.set_non_tensor(std::string(kLoadedClassKey), type);
  return td;
}

Value load_any(const fs::path& dir, std::optional<at::Device> device, std::optional<std::size_t> max_dims) {
  NestingGuard guard("load_memmap");
  const Json meta = read_meta(dir);
  const fs::path file = dir / "meta.json";
  if (!meta.contains("_type") || !meta["_type"].is_string()) {
    throw RuntimeError(fmt::format("malformed {}: no \"_type\" string naming the class", file.string()));
  }
  // tensordict refuses a newer layout than it knows; so do we.
  if (meta.contains("_format_version") && meta["_format_version"].is_number_integer() &&
      meta["_format_version"].get<int64_t>() > kFormatVersion) {
    throw RuntimeError(fmt::format("{} was saved in the tensordict format version {}; this reader reads versions "
                                         "up to {}",
                                         file.string(), meta["_format_version"].get<int64_t>(), kFormatVersion));
  }
  const auto type = meta["_type"].get<std::string>();
  if (type_is(type, "TensorDict")) return Value(load_td(dir, meta, device));
  if (type_is(type, "LazyStackedTensorDict")) return Value(load_lazy(dir, meta, device));
  if (type_is(type, "NonTensorData")) {
    if (!meta.contains("data")) {
      throw RuntimeError(fmt::format("malformed {}: NonTensorData without \"data\"", file.string()));
    }
    return Value(NonTensorData(meta["data"]));
  }
  if (type_is(type, "NonTensorStack")) return Value(load_non_tensor_stack(dir, meta, max_dims));
  if (auto loader = registered_loader(type)) return loader(dir.string(), meta, device);
  if (is_class_string(type)) return Value(load_unknown_class(dir, meta, type, device));
  throw RuntimeError(fmt::format(
      "{}: cannot map _type {} to a C++ class (known: TensorDict, LazyStackedTensorDict, NonTensorData, NonTensorStack, "
      "classes given to register_memmap_class, and any other \"<class 'module.Name'>\" as a tensorclass)",
      file.string(), meta["_type"].dump()));
}

}  // namespace

TensorDict load_level(const fs::path& dir, std::optional<at::Device> device) {
  Value value = load_any(dir, device, std::nullopt);
  if (!value.is_tensordict()) {
    throw RuntimeError(
        fmt::format("{} holds non-tensor data, not a tensordict; load its parent directory", dir.string()));
  }
  return value.tensordict();
}

}  // namespace detail::memmap

void register_memmap_class(const std::string& type, MemmapLoader loader) {
  if (type.empty() || !loader) throw ValueError("register_memmap_class needs a type name and a loader");
  std::lock_guard lock(detail::memmap::registry_mutex());
  detail::memmap::registry()[type] = std::move(loader);
}

TensorDict load_memmap(const std::string& prefix, std::optional<at::Device> device, const LoadOptions& options) {
  if (prefix.empty()) throw ValueError("load_memmap needs a directory, got an empty path");
  if (!std::filesystem::is_directory(prefix) && !detail::memmap::regular_file_at(prefix)) {
    throw RuntimeError(
        fmt::format("cannot load a memmap tensordict from {}: not a directory, nor a .tdz archive", prefix));
  }
  TensorDict out;
  detail::memmap::CopyLeaves copying(options.copy);
  detail::memmap::read_tree(prefix, [&] { out = detail::memmap::load_level(prefix, device); });
  return out;
}

TensorDict TensorDict::load_memmap(const std::string& prefix, std::optional<at::Device> device,
                                   const LoadOptions& options) {
  return tensordict::load_memmap(prefix, device, options);
}

LazyStackedTensorDict LazyStackedTensorDict::load_memmap(const std::string& prefix, std::optional<at::Device> device) {
  TensorDict td = tensordict::load_memmap(prefix, device);
  if (td.kind() != Kind::LazyStack) {
    throw ValueError(fmt::format("{} holds a {}, not a LazyStackedTensorDict: load it with TensorDict::load_memmap",
                                 prefix, td.type_name()));
  }
  return LazyStackedTensorDict(td);
}

Json read_memmap_meta(const std::string& dir) {
  Json meta;
  detail::memmap::read_tree(dir, [&] { meta = detail::memmap::read_meta(dir); });
  return meta;
}

void read_memmap_tree(const std::string& prefix, c10::function_ref<void()> read) {
  detail::memmap::read_tree(prefix, read);
}

TensorDict TensorDict::load(const std::string& prefix, std::optional<at::Device> device) {
  return load_memmap(prefix, device);
}

TensorDict& TensorDict::memmap_refresh_() {
  auto path = saved_path();
  if (!path) {
    throw RuntimeError("cannot refresh a tensordict that is not memory-mapped or has no path associated");
  }
  // A lazy stack's entries live in its members, each saved in its own directory.
  if (const auto own = detail::kind_ops(*impl_).memmap_refresh) {
    own(*this);
    return *this;
  }
  TensorDict fresh;
  detail::memmap::read_tree(*path, [&] { fresh = detail::memmap::load_level(*path, std::nullopt); });
  // As tensordict: unlocked while the entries are replaced, locked again after.
  const bool was_locked = is_locked();
  if (was_locked) unlock_();
  clear();
  fresh.impl()->for_each([&](const std::string& key, const Value& value) { impl_->insert(key, value); });
  // The tree's dim names (tensordict writes them); a tree without any keeps
  // the names in memory while the batch dims stay (an append changes only
  // the first size).
  const Names& stored = fresh.names();
  const bool named = std::any_of(stored.begin(), stored.end(), [](const auto& n) { return n.has_value(); });
  impl_->set_meta(fresh.batch_size().vec(), fresh.device(),
                  named || fresh.batch_dims() != batch_dims() ? stored : names());
  detail::memmap::mark_memmapped(impl_, *path);
  if (was_locked) lock_();
  return *this;
}

}  // namespace tensordict
