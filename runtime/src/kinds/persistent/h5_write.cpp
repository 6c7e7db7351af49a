// Writing to h5: datasets, groups, strings; to_h5 / from_dict; in-place writes.
#include <ATen/ATen.h>
#include <nlohmann/json.hpp>

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <stdexcept>

#include "core/format.h"
#include "core/utf8.h"
#include "kinds/dense/map_leaves.h"
#include "core/prefix_lock.h"
#include "core/nesting.h"
#include "kinds/persistent/h5_detail.h"
#include "tensordict/errors.h"
#include "tensordict/detail/impl.h"
#include "tensordict/lazy.h"
#include "tensordict/persistent.h"

namespace tensordict {

namespace detail::h5 {

void check_link_name(const std::string& key, const std::string& where) {
  if (key.empty() || key == "." || key.find('/') != std::string::npos || key.find('\0') != std::string::npos) {
    std::string shown = key;  // a NUL would end the message here
    for (std::size_t at = shown.find('\0'); at != std::string::npos; at = shown.find('\0', at)) shown.replace(at, 1, "\\0");
    throw ValueError(fmt::format(
        "cannot store key '{}' in {}: HDF5 names cannot be empty, '.' or contain '/' (it separates groups) or a NUL "
        "character",
        shown, where));
  }
}

namespace {

// Dataset creation properties: chunking and gzip, for a dataset of `dims`.
Hid creation_properties(const H5Options& options, const std::vector<hsize_t>& dims, const std::string& where) {
  Hid dcpl(H5Pcreate(H5P_DATASET_CREATE), H5Pclose);
  if (dims.empty() || (options.chunks.empty() && !options.gzip_level)) return dcpl;
  std::vector<hsize_t> chunk(dims.size());
  for (std::size_t d = 0; d < dims.size(); ++d) {
    const hsize_t want = d < options.chunks.size() ? options.chunks[d] : dims[d];
    chunk[d] = std::max<hsize_t>(1, std::min<hsize_t>(want, std::max<hsize_t>(dims[d], 1)));
  }
  if (H5Pset_chunk(dcpl.get(), static_cast<int>(chunk.size()), chunk.data()) < 0) {
    throw RuntimeError(fmt::format("{}: invalid chunk shape", where));
  }
  if (options.gzip_level) {
    if (*options.gzip_level < 0 || *options.gzip_level > 9) {
      throw ValueError(fmt::format("{}: gzip level {} is not in 0..9", where, *options.gzip_level));
    }
    H5Pset_deflate(dcpl.get(), static_cast<unsigned>(*options.gzip_level));
  }
  return dcpl;
}

// tensordict writes a lazy stack to h5 densely (its stacked entries), which
// only works when every member has the same keys and tensor shapes; refused
// up front, naming the place, rather than losing keys silently.
void check_dense_writable(const TensorDict& td, const std::string& where) {
  if (td.kind() != Kind::LazyStack) return;
  const LazyStackedTensorDict lazy(td);
  const auto exclusive = lazy.exclusive_keys();
  for (std::size_t i = 0; i < exclusive.size(); ++i) {
    if (!exclusive[i].empty()) {
      throw ValueError(fmt::format(
          "cannot write {} to h5: a LazyStackedTensorDict is stored densely, but member {} has key '{}' that not every "
          "member has (heterogeneous lazy stacks can be saved with memmap)",
          where, i, exclusive[i].front()));
    }
  }
  const auto& members = lazy.tensordicts();
  td.impl()->for_each_key([&](const std::string& key, EntryKind kind) {
    if (kind != EntryKind::Tensor) return;
    const auto first = members.front().impl()->tensor_meta(key).shape;
    for (std::size_t i = 1; i < members.size(); ++i) {
      const auto shape = members[i].impl()->tensor_meta(key).shape;
      if (shape != first) {
        throw ValueError(fmt::format(
            "cannot write {} to h5: a LazyStackedTensorDict is stored densely, but key '{}' has shape {} in member 0 "
            "and {} in member {} (heterogeneous lazy stacks can be saved with memmap)",
            where, key, detail::shape_string(first), detail::shape_string(shape), i));
      }
    }
  });
}

Hid make_space(const std::vector<hsize_t>& dims) {
  if (dims.empty()) return Hid(H5Screate(H5S_SCALAR), H5Sclose);
  return Hid(H5Screate_simple(static_cast<int>(dims.size()), dims.data(), nullptr), H5Sclose);
}

// tensordict (0.15) marks the string datasets it writes: one string with
// __tensordict_str__ = True (h5py's bool), a NonTensorStack with
// __tensordict_stack__ = its shape. Python reads an unmarked array of strings
// as one NonTensorData holding a list, not as a stack.
void mark_strings(hid_t dset, const NonTensorData& data, const std::string& where) {
  auto write_attribute = [&](const char* name, hid_t type, const std::vector<hsize_t>& dims, const void* value) {
    Hid space = make_space(dims);
    Hid attr(H5Acreate2(dset, name, type, space.get(), H5P_DEFAULT, H5P_DEFAULT), H5Aclose);
    if (!attr.valid() || H5Awrite(attr.get(), type, value) < 0) {
      throw RuntimeError(fmt::format("cannot write the attribute {} of {}", name, where));
    }
  };
  if (data.is_stack()) {
    const std::vector<int64_t> shape = data.ids().sizes().vec();
    write_attribute("__tensordict_stack__", H5T_NATIVE_INT64, {shape.size()}, shape.data());
  } else {
    const Hid bool_type = write_type(at::kBool, where);
    const int8_t yes = 1;
    write_attribute("__tensordict_str__", bool_type.get(), {}, &yes);
  }
}

}  // namespace

namespace {
// tensordict warns once per save (to_h5 / from_dict) however many
// UnbatchedTensor leaves it holds, and at each write into an open file.
enum class UnbatchedWarning { NoSave, Pending, Given };
thread_local UnbatchedWarning unbatched_warning = UnbatchedWarning::NoSave;

struct SaveWarnsOnce {
  SaveWarnsOnce() { unbatched_warning = UnbatchedWarning::Pending; }
  ~SaveWarnsOnce() { unbatched_warning = UnbatchedWarning::NoSave; }
};

// An h5 file has no place for the class: the leaf is written as a plain
// tensor (tensordict 0.15.3's rule and warning).
void warn_unbatched_saved_as_plain() {
  if (unbatched_warning == UnbatchedWarning::Given) return;
  if (unbatched_warning == UnbatchedWarning::Pending) unbatched_warning = UnbatchedWarning::Given;
  TORCH_WARN(
      "UnbatchedTensor leaves are saved as plain tensors: they are read back as plain tensors, or fail to load when "
      "their shape does not fit the batch size. Exclude them before saving.");
}
}  // namespace

void PersistentImpl::write_entry(const std::string& key, const Value& value, const H5Options& opts) {
  NestingGuard guard("to_h5");
  const std::string path = path_of(key);
  const std::string where = fmt::format("{}:{}", file_->path, path);
  check_link_name(key, file_->path);
  if (!file_->writable) {
    throw RuntimeError(
        fmt::format("cannot write {}: the file is open read-only (mode '{}')", where, file_->mode));
  }
  const hid_t f = fid();
  if (H5Lexists(f, path.c_str(), H5P_DEFAULT) > 0) {
    if (H5Ldelete(f, path.c_str(), H5P_DEFAULT) < 0) throw RuntimeError(fmt::format("cannot replace {}", where));
    children_.erase(key);
  }
  if (value.is_tensor()) {
    if (value.is_unbatched()) warn_unbatched_saved_as_plain();
    at::Tensor t = value.tensor().detach().cpu().contiguous();
    Hid type = write_type(t.scalar_type(), where);
    const std::vector<hsize_t> dims(t.sizes().begin(), t.sizes().end());
    Hid space = make_space(dims);
    Hid dcpl = creation_properties(opts, dims, where);
    Hid dset(H5Dcreate2(f, path.c_str(), type.get(), space.get(), H5P_DEFAULT, dcpl.get(), H5P_DEFAULT), H5Dclose);
    if (!dset.valid()) throw RuntimeError(fmt::format("cannot create dataset {}", where));
    if (t.numel() > 0 && H5Dwrite(dset.get(), type.get(), H5S_ALL, H5S_ALL, H5P_DEFAULT, t.data_ptr()) < 0) {
      throw RuntimeError(fmt::format("cannot write dataset {}", where));
    }
  } else if (value.is_non_tensor()) {
    const NonTensorData& data = value.non_tensor();
    std::vector<Json> values;
    std::vector<hsize_t> dims;
    if (data.is_stack()) {
      const auto flat = data.ids().reshape({-1}).contiguous();
      for (int64_t i = 0; i < flat.numel(); ++i) values.push_back((*data.pool())[flat.data_ptr<int64_t>()[i]]);
      dims.assign(data.ids().sizes().begin(), data.ids().sizes().end());
    } else {
      values.push_back(data.data());
    }
    std::vector<const char*> ptrs;
    for (const auto& v : values) {
      if (!v.is_string()) {
        throw ValueError(
            fmt::format("cannot write {}: only string non-tensor data can be stored in h5, got {}", where, v.dump()));
      }
      const std::string& text = v.get_ref<const std::string&>();
      // The dataset's strings are declared UTF-8: h5py (and tensordict) fail
      // to read other bytes back.
      if (const auto bad = detail::invalid_utf8_at(text)) {
        throw ValueError(fmt::format(
            "cannot write {}: the string holds bytes that are not valid UTF-8 (byte {} of it), which an HDF5 "
            "UTF-8 string cannot store; store bytes in a uint8 tensor",
            where, *bad));
      }
      // HDF5's variable-length strings end at the first NUL: the rest would be lost.
      if (text.find('\0') != std::string::npos) {
        throw ValueError(
            fmt::format("cannot write {}: the string {} holds a NUL character, which an HDF5 string cannot store",
                        where, v.dump()));
      }
      ptrs.push_back(text.c_str());
    }
    Hid type = string_type();
    Hid space = make_space(dims);
    Hid dset(H5Dcreate2(f, path.c_str(), type.get(), space.get(), H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT), H5Dclose);
    if (!dset.valid() ||
        (!ptrs.empty() && H5Dwrite(dset.get(), type.get(), H5S_ALL, H5S_ALL, H5P_DEFAULT, ptrs.data()) < 0)) {
      throw RuntimeError(fmt::format("cannot write string dataset {}", where));
    }
    mark_strings(dset.get(), data, where);
  } else {
    const TensorDict td = value.tensordict();
    check_dense_writable(td, where);
    Hid group(H5Gcreate2(f, path.c_str(), H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT), H5Gclose);
    if (!group.valid()) throw RuntimeError(fmt::format("cannot create group {}", where));
    auto nested = child(key);
    nested->set_meta(td.batch_size().vec(), device_, td.names());
    td.impl()->for_each([&](const std::string& k, const Value& v) { nested->write_entry(k, v, opts); });
  }
}

void PersistentImpl::insert(const std::string& key, Value value) { write_entry(key, value, options); }

bool PersistentImpl::erase(const std::string& key) {
  if (key.empty() || key.find('/') != std::string::npos || key == ".") return false;
  if (!file_->writable) {
    throw RuntimeError(fmt::format("cannot delete {}:{}: the file is open read-only", file_->path, path_of(key)));
  }
  if (H5Lexists(fid(), path_of(key).c_str(), H5P_DEFAULT) <= 0) return false;
  children_.erase(key);
  return H5Ldelete(fid(), path_of(key).c_str(), H5P_DEFAULT) >= 0;
}

void PersistentImpl::check_share_memory() const {
  // The leaves are datasets in the file: tensordict refuses, pointing at a copy in memory.
  throw NotImplementedError(
      "share_memory_: Cannot call share_memory_ on a PersistentTensorDict. Call `to_tensordict()` first.");
}

void PersistentImpl::rename(const std::string& from, const std::string& to) {
  check_link_name(to, file_->path);
  if (!file_->writable)
    throw RuntimeError(fmt::format("cannot rename in {}: the file is open read-only", file_->path));
  if (H5Lmove(fid(), path_of(from).c_str(), fid(), path_of(to).c_str(), H5P_DEFAULT, H5P_DEFAULT) < 0) {
    throw RuntimeError(fmt::format("{}: cannot rename {} to {}", file_->path, path_of(from), path_of(to)));
  }
  children_.erase(from);
}

void PersistentImpl::write_data(const std::string& key, const at::Tensor& value,
                                const std::vector<TensorIndex>* index) {
  const std::string where = fmt::format("{}:{}", file_->path, path_of(key));
  if (!file_->writable) {
    throw RuntimeError(
        fmt::format("cannot write {}: the file is open read-only (mode '{}')", where, file_->mode));
  }
  Hid dset = open_dataset(*file_, path_of(key), where);
  if (!dset.valid()) throw KeyError(fmt::format("no dataset {}", where));
  Hid ftype(H5Dget_type(dset.get()), H5Tclose);
  ReadType rt = read_type(ftype.get(), where);
  if (rt.content != ReadType::Content::Tensor) throw TypeError(fmt::format("{} holds strings, not a tensor", where));
  Hid space(H5Dget_space(dset.get()), H5Sclose);
  const int rank = H5Sget_simple_extent_ndims(space.get());
  std::vector<hsize_t> dims(static_cast<std::size_t>(std::max(rank, 0)));
  if (rank > 0) H5Sget_simple_extent_dims(space.get(), dims.data(), nullptr);
  std::vector<int64_t> shape(dims.begin(), dims.end());
  Hid memspace(H5S_ALL, nullptr);
  hid_t fspace = H5S_ALL;
  if (index && rank > 0) {
    auto slab = hyperslab_of(*index, shape);
    H5Sselect_hyperslab(space.get(), H5S_SELECT_SET, slab.start.data(), slab.stride.data(), slab.count.data(), nullptr);
    memspace = Hid(H5Screate_simple(static_cast<int>(slab.count.size()), slab.count.data(), nullptr), H5Sclose);
    fspace = space.get();
    shape = slab.shape;
  }
  at::Tensor data = value.detach().to(at::kCPU, rt.dtype).expand(shape).contiguous();
  CheckedTransfer transfer;
  if (data.numel() > 0 &&
      H5Dwrite(dset.get(), rt.memtype.get(), memspace.get(), fspace, transfer.get(), data.data_ptr()) < 0) {
    if (transfer.out_of_range()) {
      throw RuntimeError(fmt::format("cannot write dataset {}: a value lies outside the range of its type", where));
    }
    throw RuntimeError(fmt::format("cannot write dataset {}", where));
  }
}

}  // namespace detail::h5

using detail::h5::PersistentImpl;


namespace {
void fsync_path(const std::string& path, int flags) {
  const int fd = ::open(path.c_str(), flags | O_CLOEXEC);
  if (fd < 0) return;
  (void)::fsync(fd);
  ::close(fd);
}
}  // namespace

// Crash safety: the file is written under a temporary name beside `path`,
// synced, closed and renamed over `path`. A writer killed midway leaves the
// previous file (or none) at `path`, never a half-written one.
PersistentTensorDict PersistentTensorDict::from_dict(const TensorDict& td, const std::string& path,
                                                     const H5Options& options) {
  namespace fs = std::filesystem;
  detail::h5::check_dense_writable(td, path);
  const fs::path target(path);
  if (target.filename().empty()) throw ValueError(fmt::format("to_h5 needs a file name, got '{}'", path));
  // One writer of a path at a time; temporaries found under the lock are
  // those of writers that died.
  detail::PrefixLock lock(target);
  detail::remove_stale_staging(target);
  const fs::path tmp = detail::staging_path(target);
  // Created here first, so that a failure names the file and the real cause
  // (permissions, a full disk) rather than HDF5's "cannot open".
  {
    const int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0666);
    if (fd < 0) {
      throw RuntimeError(fmt::format("cannot write h5 file {}: cannot create its temporary file {}: {}", path,
                                           tmp.string(), std::strerror(errno)));
    }
    ::close(fd);
  }
  try {
    {
      detail::h5::SaveWarnsOnce warns_once;
      PersistentTensorDict out = from_h5(tmp.string(), "w");
      auto& impl = detail::h5::persistent_impl(out);
      impl.file()->path = path;  // messages name the file being written, not its temporary
      impl.options = options;
      impl.set_meta(td.batch_size().vec(), std::nullopt, td.names());
      td.impl()->for_each([&](const std::string& key, const Value& value) { impl.write_entry(key, value, options); });
      errno = 0;
      if (H5Fflush(impl.file()->file.get(), H5F_SCOPE_GLOBAL) < 0) {
        throw RuntimeError(fmt::format("cannot write h5 file {}: flushing {} failed{}", path, tmp.string(),
                                             errno ? std::string(": ") + std::strerror(errno) : std::string()));
      }
      out.close();
    }
    fsync_path(tmp.string(), O_RDONLY);
    if (::rename(tmp.c_str(), target.c_str()) != 0) {
      throw RuntimeError(fmt::format("cannot write h5 file {}: renaming {} over it failed: {}", path,
                                           tmp.string(), std::strerror(errno)));
    }
    fsync_path(target.parent_path().empty() ? std::string(".") : target.parent_path().string(), O_RDONLY | O_DIRECTORY);
  } catch (...) {
    ::unlink(tmp.c_str());
    throw;
  }
  return from_h5(path, "r+");
}

PersistentTensorDict TensorDict::to_h5(const std::string& path, const H5Options& options) const {
  PersistentTensorDict out = PersistentTensorDict::from_dict(*this, path, options);
  // tensordict names the result in memory: its h5 backend stores no names
  // (persistent.py: to_h5, _H5Backend's no-op write_attrs_metadata).
  const Names& dims = names();
  if (std::any_of(dims.begin(), dims.end(), [](const auto& n) { return n.has_value(); })) out.rename_(dims);
  return out;
}

void PersistentImpl::assign_at(const std::string& key, const BatchIndex& resolved, at::ArrayRef<TensorIndex> index,
                               const at::Tensor& value) {
  std::vector<TensorIndex> idx(index.begin(), index.end());
  if (h5::is_slab_index(idx)) {
    write_data(key, value, &idx);  // only the hyperslab
    return;
  }
  at::Tensor whole = read(key, nullptr).tensor();
  resolved.put(whole, value);
  write_data(key, whole, nullptr);
}

}  // namespace tensordict
