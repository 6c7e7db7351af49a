// from_safetensors: a file is untrusted input. The header's length, JSON,
// dtypes, shapes and offsets are checked against the file before any tensor
// is read, and tensordict's metadata against the tensors the header lists
// (tensordict/_safetensors.py _decode_level, safetensors' validation).
#include <ATen/ATen.h>
#include <nlohmann/json.hpp>
#include <fcntl.h>
#include <fmt/format.h>
#include <fmt/ranges.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <map>
#include <set>

#include "memmap/memmap_detail.h"
#include "safetensors/safetensors_format.h"
#include "tensordict/errors.h"
#include "tensordict/lazy.h"
#include "tensordict/memmap.h"
#include "tensordict/safetensors.h"

namespace tensordict {

namespace st = detail::safetensors;

namespace {

struct Entry {
  at::ScalarType dtype;
  std::vector<int64_t> shape;
  uint64_t begin, end;
};

class Reader {
 public:
  Reader(const std::string& path, std::optional<at::Device> device) : path_(path), device_(device) {
    fd_ = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd_ < 0) fail(fmt::format("cannot open it ({})", std::strerror(errno)));
    struct stat s {};
    if (::fstat(fd_, &s) != 0 || !S_ISREG(s.st_mode)) {
      ::close(fd_);
      fail("not a regular file");
    }
    size_ = static_cast<uint64_t>(s.st_size);
  }
  ~Reader() { ::close(fd_); }
  Reader(const Reader&) = delete;
  Reader& operator=(const Reader&) = delete;

  TensorDict read() {
    if (size_ < 8) fail(fmt::format("{} bytes, fewer than the 8 of the header's length", size_));
    std::string length(8, '\0');
    read_at(length.data(), 8, 0);
    uint64_t n = 0;
    for (int i = 7; i >= 0; --i) n = (n << 8) | static_cast<unsigned char>(length[i]);
    if (n > st::kMaxHeaderBytes) fail(fmt::format("a header of {} bytes, more than the {} allowed", n, st::kMaxHeaderBytes));
    if (n > size_ - 8) fail(fmt::format("a header of {} bytes in a file of {}", n, size_));
    std::string text(n, '\0');
    read_at(text.data(), n, 8);
    data_start_ = 8 + n;
    const Json header = detail::memmap::parse_json(text, path_);
    if (!header.is_object()) fail(fmt::format("the header is a JSON {}, expected an object", header.type_name()));
    std::optional<std::string> metadata;
    for (const auto& [name, value] : header.items()) {
      if (name == "__metadata__") {
        if (!value.is_object()) fail("__metadata__ is not an object");
        const auto it = value.find(std::string(st::kMetadataKey));
        if (it != value.end()) {
          if (!it->is_string()) fail("__metadata__.tensordict is not a string");
          metadata = it->get<std::string>();
        }
        continue;
      }
      entries_.emplace(name, entry(name, value));
    }
    check_offsets();
    if (!metadata) return plain();
    const Json meta = detail::memmap::parse_json(*metadata, path_);
    if (!meta.is_object() || !meta.contains("version") || meta["version"] != st::kFormatVersion) {
      fail(fmt::format("its tensordict metadata has version {}, and this reader reads version {}",
                       meta.is_object() && meta.contains("version") ? meta["version"].dump() : "none", st::kFormatVersion));
    }
    if (!meta.contains("root")) fail("its tensordict metadata has no root");
    TensorDict out = level(meta["root"], "the root");
    std::vector<std::string> missing;
    for (const auto& [name, e] : entries_) {
      if (!used_.count(name)) missing.push_back("'" + name + "'");
    }
    if (!missing.empty()) fail(fmt::format("the tensors {} are not in its tensordict metadata", fmt::join(missing, ", ")));
    return out;
  }

 private:
  [[noreturn]] void fail(const std::string& what) const {
    throw RuntimeError(fmt::format("{}{}: {}", kFailure, path_, what));
  }
  // Whether `e` is fail()'s, which already names the file.
  static bool own(const Error& e) { return std::string_view(e.what()).starts_with(kFailure); }
  static constexpr std::string_view kFailure = "cannot load the safetensors file ";

  void read_at(char* out, uint64_t bytes, uint64_t offset) const {
    uint64_t done = 0;
    while (done < bytes) {
      const ssize_t got = ::pread(fd_, out + done, bytes - done, static_cast<off_t>(offset + done));
      if (got < 0 && errno == EINTR) continue;
      if (got <= 0) fail(fmt::format("it ended at byte {} while {} were expected", offset + done, offset + bytes));
      done += static_cast<uint64_t>(got);
    }
  }

  static bool is_count(const Json& v) { return v.is_number_unsigned() || (v.is_number_integer() && v.get<int64_t>() >= 0); }

  Entry entry(const std::string& name, const Json& value) const {
    if (!value.is_object()) fail(fmt::format("the entry of tensor '{}' is not an object", name));
    const auto dtype = value.find("dtype");
    const auto shape = value.find("shape");
    const auto offsets = value.find("data_offsets");
    if (dtype == value.end() || shape == value.end() || offsets == value.end()) {
      fail(fmt::format("the entry of tensor '{}' lacks dtype, shape or data_offsets", name));
    }
    const st::Dtype* d = dtype->is_string() ? st::find_dtype(dtype->get<std::string>()) : nullptr;
    if (!d) fail(fmt::format("tensor '{}' has dtype {}; supported: {}", name, dtype->dump(), st::known_dtypes()));
    if (!shape->is_array()) fail(fmt::format("tensor '{}' has shape {}, expected a list of sizes", name, shape->dump()));
    Entry e{d->type, {}, 0, 0};
    uint64_t numel = 1;
    for (const auto& dim : *shape) {
      if (!is_count(dim) || dim.get<uint64_t>() > uint64_t(INT64_MAX)) {
        fail(fmt::format("tensor '{}' has shape {}, expected a list of sizes", name, shape->dump()));
      }
      const uint64_t s = dim.get<uint64_t>();
      if (s != 0 && numel > (uint64_t(1) << 59) / s) fail(fmt::format("tensor '{}' has shape {}, too large", name, shape->dump()));
      numel *= s;
      e.shape.push_back(static_cast<int64_t>(s));
    }
    if (!offsets->is_array() || offsets->size() != 2 || !is_count((*offsets)[0]) || !is_count((*offsets)[1])) {
      fail(fmt::format("tensor '{}' has data_offsets {}, expected [begin, end]", name, offsets->dump()));
    }
    e.begin = (*offsets)[0].get<uint64_t>();
    e.end = (*offsets)[1].get<uint64_t>();
    const uint64_t bytes = numel * c10::elementSize(e.dtype);
    if (e.end < e.begin || e.end - e.begin != bytes) {
      fail(fmt::format("tensor '{}' of shape {} and dtype {} needs {} bytes, but its data_offsets {} hold {}", name,
                       shape->dump(), d->name, bytes, offsets->dump(),
                       e.end >= e.begin ? fmt::to_string(e.end - e.begin) : std::string("a negative count")));
    }
    return e;
  }

  // As the safetensors library requires: the tensors' bytes follow each
  // other from the end of the header to the end of the file, none
  // overlapping, none left out.
  void check_offsets() const {
    std::vector<std::pair<uint64_t, std::string>> order;
    for (const auto& [name, e] : entries_) order.emplace_back(e.begin, name);
    std::sort(order.begin(), order.end());
    uint64_t at = 0;
    for (const auto& [begin, name] : order) {
      const Entry& e = entries_.at(name);
      if (e.begin != at) {
        fail(fmt::format("tensor '{}' starts at byte {} of the data, where {} was expected (overlapping or missing bytes)",
                         name, e.begin, at));
      }
      at = e.end;
    }
    if (data_start_ + at != size_) {
      fail(fmt::format("its tensors hold {} bytes, but the file has {} after the header", at, size_ - data_start_));
    }
  }

  at::Tensor tensor(const std::string& name) {
    const auto it = entries_.find(name);
    if (it == entries_.end()) fail(fmt::format("its tensordict metadata names the tensor '{}', which the file lacks", name));
    if (!used_.insert(name).second) fail(fmt::format("its tensordict metadata names the tensor '{}' twice", name));
    const Entry& e = it->second;
    at::Tensor t = at::empty(e.shape, at::TensorOptions().dtype(e.dtype));
    read_at(static_cast<char*>(t.data_ptr()), e.end - e.begin, data_start_ + e.begin);
    return device_ ? t.to(*device_) : t;
  }

  std::vector<int64_t> sizes(const Json& value, const std::string& where) const {
    if (!value.is_array()) fail(fmt::format("{} has batch_size {}, expected a list of sizes", where, value.dump()));
    std::vector<int64_t> out;
    for (const auto& v : value) {
      if (!is_count(v) || v.get<uint64_t>() > uint64_t(INT64_MAX)) {
        fail(fmt::format("{} has batch_size {}, expected a list of sizes", where, value.dump()));
      }
      out.push_back(v.get<int64_t>());
    }
    return out;
  }

  TensorDict level(const Json& level, const std::string& where) {
    if (!level.is_object() || !level.contains("batch_size") || !level.contains("keys") || !level["keys"].is_object()) {
      fail(fmt::format("{} of its tensordict metadata is not a level (batch_size, names, keys)", where));
    }
    const auto batch = sizes(level["batch_size"], where);
    Names names;
    if (level.contains("names") && !level["names"].is_null()) {
      const Json& n = level["names"];
      if (!n.is_array() || n.size() != batch.size()) {
        fail(fmt::format("{} has names {} for {} batch dims", where, n.dump(), batch.size()));
      }
      for (const auto& name : n) {
        if (!name.is_null() && !name.is_string()) fail(fmt::format("{} has names {}", where, n.dump()));
        names.push_back(name.is_null() ? std::nullopt : std::optional<std::string>(name.get<std::string>()));
      }
    }
    TensorDict td({}, batch, device_, names);
    for (const auto& [key, entry] : level["keys"].items()) {
      const std::string at = where == "the root" ? "'" + key + "'" : where + "." + key;
      if (!entry.is_object()) fail(fmt::format("the entry of {} is not an object", at));
      try {
        if (entry.contains("tensor") && entry["tensor"].is_string()) {
          if (entry.contains("unbatched") && entry["unbatched"] == true) {
            fail(fmt::format("{} is an UnbatchedTensor, which is not supported here", at));
          }
          td.set(key, tensor(entry["tensor"].get<std::string>()));
        } else if (entry.contains("non_tensor")) {
          td.set_non_tensor(key, entry["non_tensor"]);
        } else if (entry.contains("td")) {
          td.set(key, this->level(entry["td"], at));
        } else {
          fail(fmt::format("the entry of {} is none of tensor, non_tensor, td", at));
        }
      } catch (const Error& e) {
        if (own(e)) throw;
        fail(fmt::format("the entry of {} does not fit its level: {}", at, e.what()));
      }
    }
    if (level.contains("stack_dim") && !level["stack_dim"].is_null()) {
      const Json& d = level["stack_dim"];
      if (!d.is_number_integer() || d.get<int64_t>() < 0 || d.get<int64_t>() >= static_cast<int64_t>(batch.size())) {
        fail(fmt::format("{} has stack_dim {} for {} batch dims", where, d.dump(), batch.size()));
      }
      const int64_t dim = d.get<int64_t>();
      // A lazy stack's members are made one by one: a batch size that no
      // tensor backs must not make the reader build billions of them.
      if (batch[dim] > st::kMaxStackMembers) {
        fail(fmt::format("{} stacks {} members, more than the {} read here", where, batch[dim], st::kMaxStackMembers));
      }
      std::optional<std::vector<int64_t>> empty_batch;
      if (batch[dim] == 0) {
        empty_batch = batch;
        empty_batch->erase(empty_batch->begin() + dim);
      }
      LazyStackedTensorDict stack(td.unbind(dim), dim, empty_batch, device_);
      if (!names.empty()) stack.rename_(names);
      td = stack;
    }
    if (level.contains("class") && level["class"].is_string()) td.set_non_tensor(std::string(kLoadedClassKey), level["class"]);
    return td;
  }

  // A file from elsewhere: a nested TensorDict of batch size [], each name
  // split on "." (from_module's layout).
  TensorDict plain() {
    TensorDict flat({}, {}, device_);
    for (const auto& [name, e] : entries_) flat.set(name, tensor(name));
    try {
      return flat.unflatten_keys(".");
    } catch (const Error& err) {
      fail(fmt::format("its tensor names do not nest: {}", err.what()));
    }
  }

  std::string path_;
  std::optional<at::Device> device_;
  int fd_ = -1;
  uint64_t size_ = 0, data_start_ = 0;
  std::map<std::string, Entry> entries_;
  std::set<std::string> used_;
};

}  // namespace

TensorDict from_safetensors(const std::string& path, std::optional<at::Device> device) {
  return Reader(path, device).read();
}

}  // namespace tensordict
