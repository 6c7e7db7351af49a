// PersistentTensorDict: opening, lazy reads, hyperslabs, batch size inference.
#include <ATen/ATen.h>
#include <nlohmann/json.hpp>
#include <sys/stat.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <limits>
#include <stdexcept>

#include "core/format.h"
#include "core/libtorch_compat.h"
#include "kinds/dense/map_leaves.h"
#include "core/nesting.h"
#include "kinds/persistent/h5_detail.h"
#include "tensordict/errors.h"
#include "tensordict/detail/impl.h"
#include "tensordict/persistent.h"

namespace tensordict {

namespace detail::h5 {

namespace {

bool starts_with(at::IntArrayRef sizes, at::IntArrayRef prefix) {
  return sizes.size() >= prefix.size() && sizes.slice(0, prefix.size()) == prefix;
}

std::vector<int64_t> space_dims(hid_t space, const std::string& where) {
  // A NULL dataspace holds no element at all (not even a scalar's): there is
  // nothing to read, and reading it as a scalar would return uninitialised memory.
  if (H5Sget_simple_extent_type(space) == H5S_NULL) {
    throw RuntimeError(fmt::format("{} has a NULL dataspace (no data); only simple and scalar datasets are read", where));
  }
  const int rank = H5Sget_simple_extent_ndims(space);
  std::vector<hsize_t> dims(static_cast<std::size_t>(std::max(rank, 0)));
  if (rank > 0) H5Sget_simple_extent_dims(space, dims.data(), nullptr);
  return std::vector<int64_t>(dims.begin(), dims.end());
}

std::vector<std::string> read_strings(hid_t dset, hid_t ftype, hid_t space, hid_t memspace, std::size_t count,
                                      const std::string& where) {
  std::vector<std::string> out(count);
  if (count == 0) return out;
  if (H5Tis_variable_str(ftype) > 0) {
    Hid mem = string_type();
    H5Tset_cset(mem.get(), H5Tget_cset(ftype));
    std::vector<char*> ptrs(count, nullptr);
    if (H5Dread(dset, mem.get(), memspace, space, H5P_DEFAULT, ptrs.data()) < 0) {
      throw RuntimeError(fmt::format("cannot read the strings of {}", where));
    }
    for (std::size_t i = 0; i < count; ++i) out[i] = ptrs[i] ? ptrs[i] : "";
    // Each string was allocated by HDF5 for us. (H5Dvlen_reclaim needs a
    // real dataspace: with H5S_ALL it failed and every string leaked; found
    // by the ASan/LSan suite.)
    for (char* p : ptrs) H5free_memory(p);
  } else {
    const std::size_t n = H5Tget_size(ftype);
    Hid mem(H5Tcopy(H5T_C_S1), H5Tclose);
    H5Tset_size(mem.get(), n);
    H5Tset_strpad(mem.get(), H5T_STR_NULLPAD);
    std::vector<char> buf(n * count);
    if (H5Dread(dset, mem.get(), memspace, space, H5P_DEFAULT, buf.data()) < 0) {
      throw RuntimeError(fmt::format("cannot read the strings of {}", where));
    }
    for (std::size_t i = 0; i < count; ++i) {
      std::string s(buf.data() + i * n, n);
      s.erase(s.find_last_not_of('\0') + 1);
      out[i] = std::move(s);
    }
  }
  return out;
}

// Per-dim hyperslab of `index` (ints and positive-step slices over the leading
// dims); nullopt when the index needs another kind of read.

std::optional<Slab> hyperslab(const std::vector<TensorIndex>& index, at::IntArrayRef dims) {
  Slab slab;
  for (const auto& idx : index) {
    if (!idx.is_integer() && !(idx.is_slice() && detail::slice_bounds(idx.slice()).step > 0)) return std::nullopt;
  }
  std::size_t d = 0;
  for (const auto& idx : index) {
    if (d >= dims.size()) return std::nullopt;
    const int64_t n = dims[d];
    if (idx.is_integer()) {
      int64_t i = detail::index_integer(idx);
      if (i < 0) i += n;
      if (i < 0 || i >= n) {
        throw IndexError(
            fmt::format("index {} is out of bounds for dim {} of size {}", detail::index_integer(idx), d, n));
      }
      slab.start.push_back(static_cast<hsize_t>(i));
      slab.count.push_back(1);
      slab.stride.push_back(1);
    } else if (idx.is_slice()) {
      const auto s = detail::slice_bounds(idx.slice());
      const int64_t step = s.step;
      if (step <= 0) return std::nullopt;
      auto clamp = [&](int64_t v) {
        if (v < 0) v += n;
        return std::clamp<int64_t>(v, 0, n);
      };
      const int64_t start = clamp(s.start);
      const int64_t stop = clamp(s.stop);
      const int64_t len = stop > start ? (stop - start + step - 1) / step : 0;
      slab.start.push_back(static_cast<hsize_t>(start));
      slab.count.push_back(static_cast<hsize_t>(len));
      slab.stride.push_back(static_cast<hsize_t>(step));
      slab.shape.push_back(len);
    } else {
      return std::nullopt;
    }
    ++d;
  }
  for (; d < dims.size(); ++d) {
    slab.start.push_back(0);
    slab.count.push_back(static_cast<hsize_t>(dims[d]));
    slab.stride.push_back(1);
    slab.shape.push_back(dims[d]);
  }
  return slab;
}

}  // namespace

Slab hyperslab_of(const std::vector<TensorIndex>& index, at::IntArrayRef dims) {
  auto slab = hyperslab(index, dims);
  if (!slab) throw ValueError("the index is not a hyperslab (ints and positive-step slices only)");
  return *slab;
}

bool is_slab_index(const std::vector<TensorIndex>& index) {
  for (const auto& idx : index) {
    if (!idx.is_integer() && !(idx.is_slice() && detail::slice_bounds(idx.slice()).step > 0)) return false;
  }
  return true;
}

PersistentImpl::PersistentImpl(std::shared_ptr<H5File> file, std::string group, std::vector<int64_t> batch_size)
    : file_(std::move(file)),
      group_(std::move(group)),
      batch_size_(std::move(batch_size)),
      names_(batch_size_.size()) {}

void PersistentImpl::set_meta(std::vector<int64_t> batch_size, std::optional<at::Device> device, Names names) {
  names_ = names.empty() ? Names(batch_size.size()) : std::move(names);
  batch_size_ = std::move(batch_size);
  device_ = device;
}

std::vector<std::string> PersistentImpl::link_names() const {
  Hid group(H5Gopen2(fid(), group_.c_str(), H5P_DEFAULT), H5Gclose);
  if (!group.valid()) throw RuntimeError(fmt::format("{}: cannot open group {}", file_->path, group_));
  std::vector<std::string> names;
  H5Literate(
      group.get(), H5_INDEX_NAME, H5_ITER_INC, nullptr,
      [](hid_t, const char* name, const H5L_info_t*, void* data) -> herr_t {
        static_cast<std::vector<std::string>*>(data)->emplace_back(name);
        return 0;
      },
      &names);
  return names;
}

std::size_t PersistentImpl::num_keys() const { return link_names().size(); }

namespace {

// The object at `path`, refusing links that leave the file: an external link
// names another file (reading it would read outside what was opened), and a
// soft link through one is not followed either (the file's link access).
H5O_info_t object_info(const H5File& file, const std::string& path) {
  H5L_info_t link{};
  if (H5Lget_info(file.id(path), path.c_str(), &link, file.lapl.get()) >= 0) {  // the root "/" has no link
    if (link.type == H5L_TYPE_EXTERNAL) {
      throw RuntimeError(fmt::format(
          "{}: {} is an external link to another file; links out of the file are not followed", file.path, path));
    }
    if (link.type != H5L_TYPE_HARD && link.type != H5L_TYPE_SOFT) {
      throw RuntimeError(fmt::format("{}: {} is a user-defined link, which is not followed", file.path, path));
    }
  }
  H5O_info_t info;
  if (H5Oget_info_by_name(file.id(path), path.c_str(), &info, file.lapl.get()) < 0) {
    throw RuntimeError(fmt::format("{}: cannot inspect {} (a dangling soft link, or one through an external link?)",
                                         file.path, path));
  }
  return info;
}

}  // namespace

bool PersistentImpl::is_group(const std::string& key) const {
  const H5O_info_t info = object_info(*file_, path_of(key));
  if (info.type != H5O_TYPE_GROUP && info.type != H5O_TYPE_DATASET) {
    throw RuntimeError(fmt::format("{}: {} is neither a group nor a dataset", file_->path, path_of(key)));
  }
  return info.type == H5O_TYPE_GROUP;
}

std::vector<int64_t> PersistentImpl::dataset_shape(const std::string& key, bool* is_string) const {
  Hid dset = open_dataset(*file_, path_of(key), fmt::format("{}:{}", file_->path, path_of(key)));
  if (!dset.valid()) throw RuntimeError(fmt::format("{}: cannot open dataset {}", file_->path, path_of(key)));
  Hid type(H5Dget_type(dset.get()), H5Tclose);
  Hid space(H5Dget_space(dset.get()), H5Sclose);
  *is_string = H5Tget_class(type.get()) == H5T_STRING;
  return space_dims(space.get(), fmt::format("{}:{}", file_->path, path_of(key)));
}

std::shared_ptr<PersistentImpl> PersistentImpl::child(const std::string& key) const {
  auto it = children_.find(key);
  if (it != children_.end()) return it->second;
  if (ancestry_.empty()) ancestry_.push_back(object_info(*file_, group_).addr);
  const haddr_t addr = object_info(*file_, path_of(key)).addr;
  if (std::find(ancestry_.begin(), ancestry_.end(), addr) != ancestry_.end()) {
    throw RuntimeError(fmt::format("{}: the group {} is one of its own ancestors (a hard-link cycle)", file_->path,
                                         path_of(key)));
  }
  if (ancestry_.size() > kMaxNestingDepth) {
    throw RuntimeError(fmt::format("{}: the group {} is nested more than {} levels deep", file_->path,
                                         path_of(key), kMaxNestingDepth));
  }
  auto nested = std::make_shared<PersistentImpl>(file_, path_of(key), batch_size_);
  nested->ancestry_ = ancestry_;
  nested->ancestry_.push_back(addr);
  nested->device_ = device_;
  nested->options = options;
  children_[key] = nested;
  return nested;
}

Value PersistentImpl::read(const std::string& key, const std::vector<TensorIndex>* index) const {
  const std::string where = fmt::format("{}:{}", file_->path, path_of(key));
  Hid dset = open_dataset(*file_, path_of(key), where);
  if (!dset.valid()) throw RuntimeError(fmt::format("cannot open dataset {}", where));
  Hid ftype(H5Dget_type(dset.get()), H5Tclose);
  Hid space(H5Dget_space(dset.get()), H5Sclose);
  const auto dims = space_dims(space.get(), where);
  ReadType rt = read_type(ftype.get(), where);

  std::optional<Slab> slab;
  if (index) slab = hyperslab(*index, dims);
  Hid memspace(H5S_ALL, nullptr);
  std::vector<int64_t> shape = dims;
  if (slab && !dims.empty()) {
    H5Sselect_hyperslab(space.get(), H5S_SELECT_SET, slab->start.data(), slab->stride.data(), slab->count.data(),
                        nullptr);
    memspace = Hid(H5Screate_simple(static_cast<int>(slab->count.size()), slab->count.data(), nullptr), H5Sclose);
    shape = slab->shape;
  }
  // Bounded well below int64 so that numel times an element's size fits too.
  int64_t numel = 1;
  for (auto s : shape) {
    if (s < 0 || __builtin_mul_overflow(numel, s, &numel) || numel > (int64_t{1} << 56)) {
      throw RuntimeError(fmt::format("{}: its shape {} has more elements than can be read", where,
                                     shape_string(shape)));
    }
  }
  const hid_t fspace = slab && !dims.empty() ? space.get() : H5S_ALL;

  if (rt.content == ReadType::Content::String) {
    check_read_size(dset.get(), static_cast<std::size_t>(numel) * sizeof(std::string), where);
    auto strings =
        read_strings(dset.get(), ftype.get(), fspace, memspace.get(), static_cast<std::size_t>(numel), where);
    if (shape.empty()) return Value(NonTensorData(Json(strings.front())));
    std::vector<Json> values(strings.begin(), strings.end());
    return Value(NonTensorData::stack(std::move(values), shape));
  }
  check_read_size(dset.get(), static_cast<std::size_t>(numel) * c10::elementSize(rt.dtype), where);
  at::Tensor out = at::empty(shape, at::TensorOptions().dtype(rt.dtype));
  CheckedTransfer transfer;
  if (numel > 0 && H5Dread(dset.get(), rt.memtype.get(), memspace.get(), fspace, transfer.get(), out.data_ptr()) < 0) {
    if (transfer.out_of_range()) {
      throw RuntimeError(fmt::format("cannot read dataset {}: a value lies outside the range of {} (values past it are "
                                     "refused, not saturated)",
                                     where, c10::toString(rt.dtype)));
    }
    throw RuntimeError(fmt::format("cannot read dataset {}", where));
  }
  if (device_ && !device_->is_cpu()) out = out.to(*device_);
  return Value(out);
}

bool PersistentImpl::has_key(const std::string& key) const {
  if (key.empty() || key.find('/') != std::string::npos || key == ".") return false;
  return H5Lexists(fid(), path_of(key).c_str(), file_->lapl.get()) > 0;
}

std::optional<Value> PersistentImpl::find(const std::string& key) const {
  if (!has_key(key)) return std::nullopt;
  if (is_group(key)) return Value(TensorDict(child(key)));
  Value value = read(key, nullptr);
  // The file may have changed since the batch size was set (another writer):
  // a leaf that no longer starts with it must not get in.
  const auto shape = value.is_tensor()        ? value.tensor().sizes()
                     : value.non_tensor().is_stack() ? value.non_tensor().ids().sizes()
                                                     : at::IntArrayRef(batch_size_);
  if (!starts_with(shape, batch_size_)) {
    throw RuntimeError(fmt::format("{}: dataset {} has shape {}, which does not start with its group's batch size {}",
                                         file_->path, path_of(key), shape_string(shape), shape_string(batch_size_)));
  }
  return value;
}

void PersistentImpl::for_each(c10::function_ref<void(const std::string&, const Value&)> fn) const {
  for (const auto& key : link_names()) fn(key, *find(key));
}

void PersistentImpl::for_each_key(c10::function_ref<void(const std::string&, EntryKind)> fn) const {
  // Metadata only: no dataset is read to list the keys.
  for (const auto& key : link_names()) {
    if (is_group(key)) {
      fn(key, EntryKind::TensorDict);
      continue;
    }
    bool is_string = false;
    dataset_shape(key, &is_string);
    fn(key, is_string ? EntryKind::NonTensor : EntryKind::Tensor);
  }
}

TensorMeta PersistentImpl::tensor_meta(const std::string& key) const {
  const std::string where = fmt::format("{}:{}", file_->path, path_of(key));
  Hid dset = open_dataset(*file_, path_of(key), where);
  if (!dset.valid()) throw RuntimeError(fmt::format("cannot open dataset {}", where));
  Hid ftype(H5Dget_type(dset.get()), H5Tclose);
  Hid space(H5Dget_space(dset.get()), H5Sclose);
  const at::Device device = device_.value_or(at::kCPU);
  return {space_dims(space.get(), where), read_type(ftype.get(), where).dtype, device, device.is_cuda()};
}

void PersistentImpl::infer_batch_size() {
  std::vector<std::vector<int64_t>> shapes;
  for (const auto& key : link_names()) {
    if (is_group(key)) {
      auto nested = child(key);
      nested->infer_batch_size();
      shapes.push_back(nested->batch_size_);
    } else {
      // A string array is a non-tensor stack, whose shape is batch dims
      // too; a single string (a scalar) constrains nothing.
      bool is_string = false;
      auto shape = dataset_shape(key, &is_string);
      if (!is_string || !shape.empty()) shapes.push_back(std::move(shape));
    }
  }
  std::vector<int64_t> batch;
  if (!shapes.empty()) {
    for (std::size_t d = 0;; ++d) {
      if (shapes.front().size() <= d) break;
      const int64_t size = shapes.front()[d];
      bool common = true;
      for (const auto& s : shapes) common = common && s.size() > d && s[d] == size;
      if (!common) break;
      batch.push_back(size);
    }
  }
  names_ = Names(batch.size());
  batch_size_ = std::move(batch);
}

void PersistentImpl::apply_batch_size(std::vector<int64_t> batch_size) {
  for (const auto& key : link_names()) {
    if (is_group(key)) {
      child(key)->apply_batch_size(batch_size);
    } else {
      bool is_string = false;
      auto shape = dataset_shape(key, &is_string);
      if ((!is_string || !shape.empty()) && !starts_with(shape, batch_size)) {
        throw RuntimeError(fmt::format("{}: batch size {} does not match dataset {} of shape {}", file_->path,
                                             shape_string(batch_size), path_of(key), shape_string(shape)));
      }
    }
  }
  names_ = Names(batch_size.size());
  batch_size_ = std::move(batch_size);
}

}  // namespace detail::h5

using detail::h5::H5File;
using detail::h5::Hid;
using detail::h5::PersistentImpl;

PersistentTensorDict::PersistentTensorDict(std::shared_ptr<TensorDictImpl> impl) : TensorDict(std::move(impl)) {
  require_kind(Kind::Persistent);
}

PersistentTensorDict::PersistentTensorDict(const TensorDict& td) : TensorDict(td.impl()) {
  require_kind(Kind::Persistent);
}

PersistentTensorDict PersistentTensorDict::from_h5(const std::string& path, const std::string& mode,
                                                   std::optional<std::vector<int64_t>> batch_size) {
  detail::h5::quiet_hdf5();
  auto file = std::make_shared<H5File>();
  file->path = path;
  file->mode = mode;
  detail::h5::require_regular_file(path, mode);
  struct stat st {};
  const bool exists = ::stat(path.c_str(), &st) == 0;
  hid_t id = H5I_INVALID_HID;
  errno = 0;
  if (mode == "r" || mode == "r+") {
    if (!exists) throw RuntimeError(fmt::format("cannot open h5 file {}: it does not exist", path));
    id = H5Fopen(path.c_str(), mode == "r" ? H5F_ACC_RDONLY : H5F_ACC_RDWR, H5P_DEFAULT);
  } else if (mode == "w") {
    id = H5Fcreate(path.c_str(), H5F_ACC_TRUNC, H5P_DEFAULT, H5P_DEFAULT);
  } else if (mode == "w-" || mode == "x") {
    if (exists) throw RuntimeError(fmt::format("cannot create h5 file {}: it exists (mode '{}')", path, mode));
    id = H5Fcreate(path.c_str(), H5F_ACC_EXCL, H5P_DEFAULT, H5P_DEFAULT);
  } else if (mode == "a") {
    id = exists ? H5Fopen(path.c_str(), H5F_ACC_RDWR, H5P_DEFAULT)
                : H5Fcreate(path.c_str(), H5F_ACC_EXCL, H5P_DEFAULT, H5P_DEFAULT);
  } else {
    throw ValueError(fmt::format("unknown h5 mode '{}' (expected r, r+, w, w-, x or a)", mode));
  }
  if (id < 0 && mode != "r" && mode != "r+" && errno != 0 && errno != ENOENT) {
    // Creating failed for a reason the system names (permissions, a full disk).
    throw RuntimeError(fmt::format("cannot open h5 file {} in mode '{}': {}", path, mode, std::strerror(errno)));
  }
  if (id < 0)
    throw RuntimeError(fmt::format(
        "cannot open h5 file {} in mode '{}': not a readable HDF5 file, or already open in another mode", path, mode));
  file->file = Hid(id, H5Fclose);
  file->lapl = detail::h5::no_external_links();
  file->writable = mode != "r";
  auto impl = std::make_shared<PersistentImpl>(file, "/", std::vector<int64_t>{});
  if (batch_size) {
    impl->apply_batch_size(*batch_size);
  } else {
    impl->infer_batch_size();
  }
  return PersistentTensorDict(std::shared_ptr<TensorDictImpl>(impl));
}

void PersistentTensorDict::close() {
  auto& impl = detail::h5::persistent_impl(*this);
  if (impl.file()->file.valid()) H5Fflush(impl.file()->file.get(), H5F_SCOPE_GLOBAL);
  impl.file()->file.reset();
}

bool PersistentTensorDict::is_open() const { return detail::h5::persistent_impl(*this).file()->file.valid(); }

const std::string& PersistentTensorDict::filename() const { return detail::h5::persistent_impl(*this).file()->path; }

const std::string& PersistentTensorDict::mode() const { return detail::h5::persistent_impl(*this).file()->mode; }

// ---- the kind-specific operations (TensorDictImpl's virtuals) ------------------------

namespace detail::h5 {

std::optional<EntryKind> PersistentImpl::entry_kind(const std::string& key) const {
  if (!has_key(key)) return std::nullopt;
  if (is_group(key)) return EntryKind::TensorDict;
  bool is_string = false;
  dataset_shape(key, &is_string);
  return is_string ? EntryKind::NonTensor : EntryKind::Tensor;
}

at::Tensor PersistentImpl::read_at(const std::string& key, const BatchIndex& resolved, at::ArrayRef<TensorIndex> index) const {
  std::vector<TensorIndex> idx(index.begin(), index.end());
  if (h5::is_slab_index(idx)) return read(key, &idx).tensor();
  return resolved.apply(read(key, nullptr).tensor());
}

TensorDict PersistentImpl::index(at::ArrayRef<TensorIndex> index) const {
  std::vector<TensorIndex> idx(index.begin(), index.end());
  // Other indices read every dataset whole: the default does that.
  if (!h5::is_slab_index(idx)) return TensorDictImpl::index(index);
  const BatchIndex resolved(index, batch_size());
  const std::size_t top_dims = batch_size().size();
  // Named dims (set in memory: h5 stores no names) follow the index as in
  // every kind.
  const Names& own = names();
  const bool named = detail::any_named(own);
  const Names result_names = named ? resolved.result_names(own) : Names{};
  // Each level: the indexed batch size followed by the level's own extra dims.
  auto build = [&](auto&& self, const PersistentImpl& level) -> TensorDict {
    std::vector<int64_t> batch = resolved.result_batch_size().vec();
    const auto own = level.batch_size();
    // (past the top's batch dims, which the index replaced)
    batch.insert(batch.end(), own.begin() + static_cast<std::ptrdiff_t>(top_dims), own.end());
    TensorDict out({}, batch, level.device());
    if (named) {
      Names level_names = result_names;
      const Names& extra = level.names();
      for (std::size_t d = top_dims; d < level.batch_size().size(); ++d) {  // the level's own dims
        level_names.push_back(d < extra.size() ? extra[d] : std::nullopt);
      }
      out.impl()->set_meta(batch, level.device(), std::move(level_names));
    }
    for (const auto& key : level.link_names()) {
      if (level.is_group(key)) {
        out.set(key, self(self, *level.child(key)));
        continue;
      }
      bool is_string = false;
      level.dataset_shape(key, &is_string);
      if (!is_string) {
        out.set(key, level.read(key, &idx));  // only the selected hyperslab
        continue;
      }
      Value value = level.read(key, nullptr);
      const NonTensorData& data = value.non_tensor();
      if (data.is_stack() && !h5::starts_with(data.ids().sizes(), level.batch_size())) {
        throw RuntimeError(fmt::format(
            "{}: cannot index the string dataset '{}' of shape {}: it does not start with its group's batch size {}",
            level.file()->path, key, shape_string(data.ids().sizes()), shape_string(level.batch_size())));
      }
      out.set(key, data.is_stack() ? Value(NonTensorData::from_ids(data.pool(), resolved.apply(data.ids()))) : value);
    }
    return out;
  };
  return build(build, *this);
}

}  // namespace detail::h5

}  // namespace tensordict
