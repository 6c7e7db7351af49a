// from_consolidated(): a file in tensordict's consolidated layout
// (consolidated_file.h) mapped, and the tree rebuilt over it as views. The
// file may come from anywhere: every length, offset, dtype and shape is
// checked against the file before any view is made, and every error names
// the file and what was expected.
#include <ATen/ops/empty.h>
#include <nlohmann/json.hpp>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <limits>
#include <string_view>

#include "core/format.h"
#include "core/nesting.h"
#include "kinds/dense/dense_impl.h"
#include "storage/consolidated_file.h"
#include "storage/flat_storage.h"
#include "tensordict/dtype.h"
#include "tensordict/errors.h"
#include "tensordict/detail/impl.h"
#include "tensordict/lazy.h"
#include "tensordict/memmap.h"  // kLoadedClassKey
#include "tensordict/non_tensor.h"

namespace tensordict {

namespace detail {

namespace {

namespace fs = std::filesystem;

// The metadata length field: an int64 after the metadata.
constexpr int64_t kLengthBytes = 8;

// Reads exactly `n` bytes at `offset`; false on a short read (a file cut
// meanwhile).
bool read_exactly(int fd, char* out, std::size_t n, off_t offset) {
  std::size_t done = 0;
  while (done < n) {
    const ssize_t got = ::pread(fd, out + done, n - done, offset + static_cast<off_t>(done));
    if (got < 0 && errno == EINTR) continue;
    if (got <= 0) return false;
    done += static_cast<std::size_t>(got);
  }
  return true;
}

class LevelReader {
 public:
  // `source`: what errors name ("consolidated file X"); `file_`: the label
  // the shared metadata helpers put in theirs.
  LevelReader(std::string source, fs::path label, at::Tensor storage)
      : source_(std::move(source)), file_(std::move(label)), storage_(std::move(storage)) {}

  // The level `meta` at `path` (a nested level, a lazy stack's member or a
  // NonTensorStack).
  Value level(const Json& meta, std::vector<std::string>& path) const {
    NestingGuard guard("from_consolidated");
    if (!meta.is_object()) fail(path, fmt::format("expected a level (a JSON object), got {}", meta.type_name()));
    const std::string cls = string_field(meta, "cls", path);
    if (cls == "LazyStackedTensorDict") return Value(lazy(meta, path));
    if (cls == "NonTensorStack") {
      if (path.empty()) fail(path, "a NonTensorStack is an entry, not a tensordict");
      std::vector<int64_t> shape;
      std::vector<Json> values;
      stack_values(meta, path, 0, shape, values);
      return Value(NonTensorData::stack(std::move(values), shape));
    }
    if (cls == "TensorDict") return Value(dense(meta, path));
    // A tensorclass (str(cls)): its fields as a TensorDict, its class under
    // kLoadedClassKey, as load_memmap reads one without a registered loader.
    if (cls.starts_with("<class '") && cls.ends_with("'>")) return Value(dense(meta, path, &cls));
    fail(path, fmt::format("unknown \"cls\" {} (expected TensorDict, LazyStackedTensorDict, NonTensorStack or a "
                           "tensorclass as \"<class 'module.Name'>\")",
                           Json(cls).dump()));
  }

 private:
  [[noreturn]] void fail(const std::vector<std::string>& path, const std::string& what) const {
    const std::string where = path.empty() ? "the top level" : fmt::format("level {}", NestedKey(path).repr());
    throw RuntimeError(fmt::format("malformed {}: {}: {}", source_, where, what));
  }

  const Json& field(const Json& meta, const char* name, const std::vector<std::string>& path) const {
    auto it = meta.find(name);
    if (it == meta.end()) fail(path, fmt::format("no \"{}\" field", name));
    return *it;
  }
  std::string string_field(const Json& meta, const char* name, const std::vector<std::string>& path) const {
    const Json& value = field(meta, name, path);
    if (!value.is_string()) fail(path, fmt::format("\"{}\" must be a string, got {}", name, value.dump()));
    return value.get<std::string>();
  }
  const Json& object_field(const Json& meta, const char* name, const std::vector<std::string>& path) const {
    const Json& value = field(meta, name, path);
    if (!value.is_object()) fail(path, fmt::format("\"{}\" must be an object, got {}", name, value.type_name()));
    return value;
  }
  int64_t integer(const Json& value, const std::vector<std::string>& path, std::string_view what) const {
    if (!value.is_number_integer() ||
        (value.is_number_unsigned() && value.get<uint64_t>() > static_cast<uint64_t>(std::numeric_limits<int64_t>::max()))) {
      fail(path, fmt::format("{} must be an integer, got {}", what, value.dump()));
    }
    return value.get<int64_t>();
  }
  bool locked(const Json& cls_metadata, const std::vector<std::string>& path) const {
    auto it = cls_metadata.find("is_locked");
    if (it == cls_metadata.end() || it->is_null()) return false;
    if (!it->is_boolean()) fail(path, fmt::format("\"is_locked\" must be true or false, got {}", it->dump()));
    return it->get<bool>();
  }
  static bool is_field(const std::string& key) {
    return key == "cls" || key == "non_tensors" || key == "leaves" || key == "cls_metadata" || key == "size";
  }
  static std::vector<std::string> below(const std::vector<std::string>& path, const std::string& key) {
    std::vector<std::string> out(path);
    out.push_back(key);
    return out;
  }

  std::optional<at::Device> device(const Json& cls_metadata, const std::vector<std::string>& path) const {
    auto it = cls_metadata.find("device");
    if (it == cls_metadata.end() || it->is_null()) return std::nullopt;
    if (it->is_string()) {
      try {
        return at::Device(it->get<std::string>());
      } catch (const std::exception&) {
      }
    }
    fail(path, fmt::format("\"device\" must be null or a device such as \"cpu\", got {}", it->dump()));
  }

  // A TensorDict level; `tensorclass`: the class of a tensorclass level,
  // kept under kLoadedClassKey.
  TensorDict dense(const Json& meta, std::vector<std::string>& path, const std::string* tensorclass = nullptr) const {
    const Json& cls_metadata = object_field(meta, "cls_metadata", path);
    const std::string where = path.empty() ? "the top level's" : fmt::format("{}'s", NestedKey(path).repr());
    const auto batch = memmap::read_shape(field(cls_metadata, "batch_size", path), file_,
                                          fmt::format("{} \"batch_size\"", where));
    Names names;
    if (auto it = cls_metadata.find("names"); it != cls_metadata.end() && !it->is_null()) {
      names = memmap::read_dim_names(*it, file_, fmt::format("{} \"names\"", where), batch.size());
      bool any = false;
      for (const auto& name : names) any = any || name.has_value();
      if (!any) names.clear();  // tensordict records [null, ...] for no names
    }
    // The leaves are CPU views: a level on an accelerator is read on the CPU
    // and the whole tree moved once at the end (from_consolidated).
    std::optional<at::Device> level_device = device(cls_metadata, path);
    if (level_device && !level_device->is_cpu()) level_device = at::Device(at::kCPU);
    auto impl = std::make_shared<DenseImpl>(batch, level_device, std::move(names));
    const auto add = [&](const std::string& key, Value value) {
      if (impl->has_key(key)) fail(path, fmt::format("key '{}' appears twice", key));
      impl->insert(key, std::move(value));
    };

    for (const auto& [key, entry] : object_field(meta, "non_tensors", path).items()) {
      if (!entry.is_array() || entry.empty() || entry.size() > 3) {
        fail(path, fmt::format("non-tensor entry '{}' must be [data, batch_size, device], got {}", key, entry.dump()));
      }
      add(key, Value(NonTensorData(entry[0])));
    }
    for (const auto& [key, entry] : object_field(meta, "leaves", path).items()) {
      add(key, Value(leaf(key, entry, batch, path)));
    }
    for (const auto& [key, entry] : meta.items()) {
      if (is_field(key)) continue;
      path.push_back(key);
      Value value = level(entry, path);
      path.pop_back();
      if (value.is_tensordict() && !memmap::starts_with(value.tensordict().batch_size(), batch)) {
        fail(path, fmt::format("the batch size {} of key '{}' does not start with the level's {}",
                               shape_string(value.tensordict().batch_size()), key, shape_string(batch)));
      }
      if (value.is_non_tensor() && !memmap::starts_with(value.non_tensor().ids().sizes(), batch)) {
        fail(path, fmt::format("the NonTensorStack of key '{}' has shape {}, which does not start with the level's "
                               "batch size {}",
                               key, shape_string(value.non_tensor().ids().sizes()), shape_string(batch)));
      }
      add(key, std::move(value));
    }
    if (tensorclass) {
      if (impl->has_key(std::string(kLoadedClassKey))) {
        fail(path, fmt::format("the tensorclass {} has a field named '{}', which holds the class name of a class "
                               "read without its C++ type",
                               *tensorclass, kLoadedClassKey));
      }
      impl->insert(std::string(kLoadedClassKey), Value(NonTensorData(*tensorclass)));
    }
    TensorDict td(impl);
    if (locked(cls_metadata, path)) td.lock_();
    return td;
  }

  // ["torch.<dtype>", shape, start, stop, pad] -> the view of the storage.
  at::Tensor leaf(const std::string& key, const Json& entry, at::IntArrayRef batch,
                  const std::vector<std::string>& path) const {
    const auto key_path = below(path, key);
    const std::string name = NestedKey(key_path).repr();
    if (key.starts_with("<NJT")) {
      throw NotImplementedError(fmt::format(
          "{}: leaf {} is part of a jagged nested tensor, which libtorch's C++ API cannot build", source_, name));
    }
    if (!entry.is_array() || entry.size() != 5) {
      fail(path, fmt::format("leaf '{}' must be [dtype, shape, start, stop, pad], got {}", key, entry.dump()));
    }
    const auto dtype = entry[0].is_string() ? dtype_from_name(entry[0].get<std::string>()) : std::nullopt;
    if (!dtype) {
      fail(path, fmt::format("leaf '{}' has unknown dtype {} (expected one of {})", key, entry[0].dump(),
                             memmap::known_dtypes()));
    }
    const auto shape = memmap::read_shape(entry[1], file_, fmt::format("the shape of leaf {}", name));
    if (!memmap::starts_with(shape, batch)) {
      fail(path, fmt::format("leaf '{}' has shape {}, which does not start with the batch size {}", key,
                             shape_string(shape), shape_string(batch)));
    }
    const int64_t start = integer(entry[2], path, fmt::format("the start of leaf '{}'", key));
    const int64_t stop = integer(entry[3], path, fmt::format("the stop of leaf '{}'", key));
    const int64_t pad = integer(entry[4], path, fmt::format("the padding of leaf '{}'", key));
    const std::size_t bytes = memmap::checked_byte_size(shape, *dtype, file_);
    const auto data_bytes = static_cast<uint64_t>(storage_.numel());
    const auto itemsize = static_cast<int64_t>(c10::elementSize(*dtype));
    if (start < 0 || stop < start || static_cast<uint64_t>(stop) > data_bytes) {
      fail(path, fmt::format("leaf '{}' spans bytes {}..{}, outside the file's {} bytes of data", key, start, stop,
                             data_bytes));
    }
    if (pad < 0 || static_cast<uint64_t>(stop - start) != bytes + static_cast<uint64_t>(pad)) {
      fail(path, fmt::format("leaf '{}' spans bytes {}..{} with padding {}, but shape {} of {} needs {} bytes", key,
                             start, stop, pad, shape_string(shape), c10::toString(*dtype), bytes));
    }
    if (start % itemsize != 0) {
      fail(path, fmt::format("leaf '{}' starts at byte {}, not a multiple of the {} bytes of {}", key, start, itemsize,
                             c10::toString(*dtype)));
    }
    return view_contiguous(storage_, caffe2::TypeMeta::fromScalarType(*dtype), shape, start);
  }

  TensorDict lazy(const Json& meta, std::vector<std::string>& path) const {
    const Json& cls_metadata = object_field(meta, "cls_metadata", path);
    const int64_t stack_dim = integer(field(cls_metadata, "stack_dim", path), path, "\"stack_dim\"");
    if (!object_field(meta, "leaves", path).empty() || !object_field(meta, "non_tensors", path).empty()) {
      fail(path, "a LazyStackedTensorDict keeps its entries in its members \"0\", \"1\", ...: its \"leaves\" and "
                 "\"non_tensors\" must be empty");
    }
    std::vector<TensorDict> members;
    for (std::size_t i = 0;; ++i) {
      const std::string key = std::to_string(i);
      auto it = meta.find(key);
      if (it == meta.end()) break;
      path.push_back(key);
      Value member = level(*it, path);
      if (!member.is_tensordict()) fail(path, "a member of a LazyStackedTensorDict must be a tensordict");
      path.pop_back();
      members.push_back(member.tensordict());
    }
    std::size_t entries = 0;
    for (const auto& [key, entry] : meta.items()) entries += is_field(key) ? 0 : 1;
    if (entries != members.size()) {
      fail(path, "a LazyStackedTensorDict holds its members under \"0\", \"1\", ..., and nothing else");
    }
    if (members.empty()) fail(path, "a LazyStackedTensorDict needs members \"0\", \"1\", ...");
    const auto dims = static_cast<int64_t>(members.front().batch_dims());
    if (stack_dim < 0 || stack_dim > dims) {
      fail(path, fmt::format("\"stack_dim\" {} is out of range for members with {} batch dims", stack_dim, dims));
    }
    for (std::size_t i = 1; i < members.size(); ++i) {
      if (members[i].batch_size() != members.front().batch_size()) {
        fail(path, fmt::format("member {} has batch size {}, member 0 has {}", i, shape_string(members[i].batch_size()),
                               shape_string(members.front().batch_size())));
      }
    }
    TensorDict td = LazyStackedTensorDict(std::move(members), stack_dim);
    if (locked(cls_metadata, path)) td.lock_();
    return td;
  }

  // A NonTensorStack's values, row-major, and its shape: its members "0",
  // "1", ... are values (in "non_tensors") or, for a stack of more dims, all
  // NonTensorStacks of one shape.
  void stack_values(const Json& meta, std::vector<std::string>& path, std::size_t dim, std::vector<int64_t>& shape,
                    std::vector<Json>& values) const {
    NestingGuard guard("from_consolidated");
    if (!meta.is_object() || !meta.contains("cls") || meta["cls"] != "NonTensorStack") {
      fail(path, "a member of a NonTensorStack must be a value or a NonTensorStack");
    }
    const Json& non_tensors = object_field(meta, "non_tensors", path);
    // The members, found in one pass over the keys: ordered_json looks a key
    // up by a linear search, so finding "0", "1", ... one by one (as this did)
    // was quadratic in the member count (100k members: 15 s).
    std::size_t n = non_tensors.size();
    for (const auto& [key, entry] : meta.items()) n += is_field(key) ? 0 : 1;
    std::vector<const Json*> members(n, nullptr);
    std::vector<char> is_value(n, 0);  // found in "non_tensors"
    const auto place = [&](const std::string& key, const Json& entry, bool value) {
      // "0", "1", ..., each once (no sign, no leading zero).
      const bool number = !key.empty() && key.size() <= 19 && key.find_first_not_of("0123456789") == std::string::npos &&
                          (key.size() == 1 || key[0] != '0');
      const std::size_t i = number ? std::stoull(key) : n;
      if (i >= n || members[i]) fail(path, "a NonTensorStack holds its members under \"0\", \"1\", ..., each once");
      members[i] = &entry;
      is_value[i] = value;
    };
    for (const auto& [key, entry] : non_tensors.items()) place(key, entry, true);
    for (const auto& [key, entry] : meta.items()) {
      if (!is_field(key)) place(key, entry, false);
    }
    const bool of_values = n == 0 || is_value[0];
    if (dim == shape.size()) {
      shape.push_back(static_cast<int64_t>(n));
    } else if (shape[dim] != static_cast<int64_t>(n) || (of_values != (dim + 1 == shape.size()))) {
      fail(path, "the members of a NonTensorStack must all have one shape");
    }
    for (std::size_t i = 0; i < n; ++i) {
      const Json& member = *members[i];
      if (static_cast<bool>(is_value[i]) != of_values) {
        fail(path, "the members of a NonTensorStack must be all values or all NonTensorStacks");
      }
      if (of_values) {
        if (!member.is_array() || member.empty() || member.size() > 3) {
          fail(path, fmt::format("non-tensor entry '{}' must be [data, batch_size, device], got {}", i, member.dump()));
        }
        values.push_back(member[0]);
        continue;
      }
      path.push_back(std::to_string(i));
      stack_values(member, path, dim + 1, shape, values);
      path.pop_back();
    }
  }

  std::string source_;
  fs::path file_;
  at::Tensor storage_;
};

}  // namespace

TensorDict tensordict_from_consolidated_metadata(const Json& meta, const at::Tensor& storage, const std::string& source,
                                                 const fs::path& label) {
  std::vector<std::string> path;
  TensorDict td = LevelReader(source, label, storage).level(meta, path).tensordict();
  td.impl()->set_consolidated_storage(storage);
  return td;
}

TensorDict read_consolidated_file(const std::string& filename, const LoadOptions& options) {
  const auto fail = [&](const std::string& what) {
    return RuntimeError(fmt::format("cannot read the consolidated file {}: {}", filename, what));
  };
  memmap::UniqueFd fd(::open(filename.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK));
  if (fd.get() < 0) throw fail(std::strerror(errno));
  struct stat st {};
  if (::fstat(fd.get(), &st) != 0) throw fail(std::strerror(errno));
  if (!S_ISREG(st.st_mode)) throw fail("not a regular file");
  const auto size = static_cast<int64_t>(st.st_size);
  if (size < kLengthBytes) {
    throw fail(fmt::format("it has {} bytes, fewer than the {} of the metadata length that ends a consolidated file "
                           "(truncated, or not written by consolidate(filename=...))",
                           size, kLengthBytes));
  }
  unsigned char raw[kLengthBytes];
  if (!read_exactly(fd.get(), reinterpret_cast<char*>(raw), kLengthBytes, static_cast<off_t>(size - kLengthBytes))) {
    throw fail("it was cut short while being read");
  }
  uint64_t length = 0;
  for (int i = kLengthBytes - 1; i >= 0; --i) length = (length << 8) | raw[i];
  const auto before = static_cast<uint64_t>(size - kLengthBytes);
  if (length > before) {
    throw fail(fmt::format("its last 8 bytes give a metadata length of {} bytes, but only {} bytes precede them "
                           "(truncated, or not written by consolidate(filename=...))",
                           static_cast<int64_t>(length), before));
  }
  if (length > memmap::kMaxMetaBytes) {
    throw fail(fmt::format("its metadata has {} bytes, more than the {} a reader accepts", length, memmap::kMaxMetaBytes));
  }
  const auto data_bytes = static_cast<int64_t>(before - length);
  std::string text(static_cast<std::size_t>(length), '\0');
  if (!read_exactly(fd.get(), text.data(), text.size(), static_cast<off_t>(data_bytes))) {
    throw fail("it was cut short while being read");
  }
  const Json meta = memmap::parse_json(text, filename);
  if (!meta.is_object()) {
    throw fail(fmt::format("its metadata must be a JSON object, got {}", meta.type_name()));
  }
  at::Tensor storage;
  if (data_bytes > 0 && !options.copy) {
    storage = memmap::map_fd(fd.get(), static_cast<std::size_t>(data_bytes), filename, false);
  } else {
    // LoadOptions::copy: in memory, so that no later truncation of the file
    // by another process can raise SIGBUS on a read.
    storage = at::empty({data_bytes}, at::TensorOptions().dtype(at::kByte));
    if (data_bytes > 0 &&
        !read_exactly(fd.get(), static_cast<char*>(storage.data_ptr()), static_cast<std::size_t>(data_bytes), 0)) {
      throw fail("it was cut short while being read");
    }
  }
  std::vector<std::string> path;
  try {
    TensorDict td =
        tensordict_from_consolidated_metadata(meta, storage, fmt::format("consolidated file {}", filename), filename);
    // A tree recorded on an accelerator: read on the CPU, moved in one block.
    const Json* cls_metadata = meta.contains("cls_metadata") ? &meta["cls_metadata"] : nullptr;
    if (cls_metadata && cls_metadata->contains("device") && (*cls_metadata)["device"].is_string()) {
      const at::Device target((*cls_metadata)["device"].get<std::string>());
      if (!target.is_cpu()) return TensorDict(td.to(target));
    }
    return td;
  } catch (const std::exception& e) {
    // Errors from below (a tree nested too deep, a move to a device this
    // libtorch lacks) say which file too.
    if (std::string_view(e.what()).find(filename) != std::string_view::npos) throw;
    rethrow_reworded([&](std::string_view why) { return fmt::format("consolidated file {}: {}", filename, why); });
  }
}

}  // namespace detail

TensorDict TensorDict::from_consolidated(const std::string& filename, const LoadOptions& options) {
  return detail::read_consolidated_file(filename, options);
}

TensorDict from_consolidated(const std::string& filename, const LoadOptions& options) {
  return detail::read_consolidated_file(filename, options);
}

}  // namespace tensordict
