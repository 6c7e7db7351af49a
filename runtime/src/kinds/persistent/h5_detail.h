// HDF5 persistence internals (private): handles, type mapping, the impl.
#pragma once

#include <hdf5.h>

#include <ATen/core/Tensor.h>

#include <map>
#include <memory>
#include <string>
#include <vector>

#include "tensordict/base.h"
#include "tensordict/detail/impl.h"
#include "tensordict/non_tensor.h"
#include "tensordict/persistent.h"

namespace tensordict::detail::h5 {

// An HDF5 identifier closed by `close` on destruction.
class Hid {
 public:
  using Closer = herr_t (*)(hid_t);
  Hid() = default;
  Hid(hid_t id, Closer close) : id_(id), close_(close) {}
  Hid(Hid&& o) noexcept : id_(o.id_), close_(o.close_) { o.id_ = H5I_INVALID_HID; }
  Hid& operator=(Hid&& o) noexcept {
    std::swap(id_, o.id_);
    std::swap(close_, o.close_);
    return *this;
  }
  Hid(const Hid&) = delete;
  Hid& operator=(const Hid&) = delete;
  ~Hid() { reset(); }
  void reset() {
    if (id_ >= 0 && close_) close_(id_);
    id_ = H5I_INVALID_HID;
  }
  hid_t get() const { return id_; }
  bool valid() const { return id_ >= 0; }

 private:
  hid_t id_ = H5I_INVALID_HID;
  Closer close_ = nullptr;
};

// Silences HDF5's own error printing (errors become exceptions here).
void quiet_hdf5();

// The open file shared by every level of one PersistentTensorDict.
struct H5File {
  Hid file;
  std::string path;
  std::string mode;
  bool writable = false;
  hid_t id(const std::string& what) const;  // throws once closed
  // Link access for every lookup (H5Lexists, H5Lget_info, H5Oget_info):
  // external links are not followed (a file must not make us read another
  // one), so a soft link through one fails too. Datasets and groups are
  // opened only once their path passed such a lookup.
  Hid lapl;
};
// Throws unless `path` is missing or a regular file (a FIFO would block the
// open, a device would read without end).
void require_regular_file(const std::string& path, const std::string& mode);
// A link access property list that refuses to traverse external links.
Hid no_external_links();
// Opens the dataset `path` (invalid when HDF5 cannot) after checking that its
// data lies in the file itself, decoded by what this HDF5 has: external raw
// storage (H5Pset_external) and virtual datasets read and write other files
// and are refused, as are filters this HDF5 lacks (named) and chunks over
// kMaxChunkBytes (reading one element decodes the whole chunk). Errors name `where`.
Hid open_dataset(const H5File& file, const std::string& path, const std::string& where);
inline constexpr std::size_t kMaxChunkBytes = std::size_t{256} << 20;
// The largest read of a dataset with less stored data than it declares (a
// sparse or crafted one): its bytes past kMaxReadExpansion times what the
// file stores for it.
inline constexpr std::size_t kMaxSparseReadBytes = std::size_t{256} << 20;
inline constexpr std::size_t kMaxReadExpansion = 1024;
// Throws naming `where` when reading `bytes` of dataset `dset` would
// allocate far more than the file holds for it (see kMaxSparseReadBytes).
void check_read_size(hid_t dset, std::size_t bytes, const std::string& where);
// A transfer property list under which a value out of the memory type's
// range (a uint64 past int64's) fails the read or write instead of
// saturating; out_of_range() tells afterwards whether that was the failure.
class CheckedTransfer {
 public:
  CheckedTransfer();
  CheckedTransfer(const CheckedTransfer&) = delete;  // HDF5 holds its address
  CheckedTransfer& operator=(const CheckedTransfer&) = delete;
  hid_t get() const { return dxpl_.get(); }
  bool out_of_range() const { return out_of_range_; }

 private:
  Hid dxpl_;
  bool out_of_range_ = false;
};

// ---- types (h5_types.cpp) -------------------------------------------------------------
// How a dataset's file type reads into memory.
struct ReadType {
  // What the dataset holds.
  enum class Content { Tensor, String } content = Content::Tensor;
  at::ScalarType dtype = at::kFloat;
  Hid memtype;  // the memory type to read with
};
// Throws naming `where` for a type with no tensor dtype or string meaning.
ReadType read_type(hid_t file_type, const std::string& where);
// The file (and memory) type a tensor dtype is written as.
Hid write_type(at::ScalarType dtype, const std::string& where);
// A variable-length UTF-8 string type.
Hid string_type();

// ---- the impl (h5_read.cpp, h5_write.cpp) ------------------------------------------------
class PersistentImpl final : public TensorDictImpl {
 public:
  PersistentImpl(std::shared_ptr<H5File> file, std::string group, std::vector<int64_t> batch_size);

  static constexpr Kind kKind = Kind::Persistent;
  Kind kind() const override { return kKind; }
  at::IntArrayRef batch_size() const override { return batch_size_; }
  std::optional<at::Device> device() const override { return device_; }
  const Names& names() const override { return names_; }
  void set_meta(std::vector<int64_t> batch_size, std::optional<at::Device> device, Names names) override;

  std::size_t num_keys() const override;
  void for_each(c10::function_ref<void(const std::string&, const Value&)> fn) const override;
  std::optional<Value> find(const std::string& key) const override;
  void insert(const std::string& key, Value value) override;
  bool erase(const std::string& key) override;
  void rename(const std::string& from, const std::string& to) override;
  // share_memory_() refuses: the leaves are the file's datasets.
  void check_share_memory() const override;

  const std::shared_ptr<H5File>& file() const { return file_; }
  const std::string& group_path() const { return group_; }
  // This group's link names (h5py's order: by name).
  std::vector<std::string> link_names() const;
  // The nested level at `key` (cached, so its batch size stays as set).
  std::shared_ptr<PersistentImpl> child(const std::string& key) const;
  // The dataset at `key` read whole, or the hyperslab of `index` (ints and
  // slices over leading dims; nullopt = whole).
  Value read(const std::string& key, const std::vector<TensorIndex>* index) const;
  // Sets each group's batch size from its datasets and sub-groups, children first.
  void infer_batch_size();
  // With a given batch size: nested groups take it too, leaves are checked.
  void apply_batch_size(std::vector<int64_t> batch_size);
  // Writes `value` into the existing dataset at `key` (converted to its dtype,
  // broadcast), or into the hyperslab of `index`.
  void write_data(const std::string& key, const at::Tensor& value, const std::vector<TensorIndex>* index);
  // Writes the datasets and groups of `value` under this group.
  void write_entry(const std::string& key, const Value& value, const H5Options& options);

  // Whether the link `key` is a group (else a dataset); the shape of a dataset.
  bool is_group(const std::string& key) const;
  std::vector<int64_t> dataset_shape(const std::string& key, bool* is_string) const;
  bool has_key(const std::string& key) const override;
  void for_each_key(c10::function_ref<void(const std::string&, EntryKind)> fn) const override;
  // The dataset's shape and dtype from its metadata: no data is read.
  TensorMeta tensor_meta(const std::string& key) const override;
  // find() reads a fresh copy of a dataset, so writing into it changes
  // nothing: in-place operations through the base interface compute their
  // result and assign() it, which writes the dataset.
  bool entries_alias_storage() const override { return false; }
  void assign(const std::string& key, const at::Tensor& value) override { write_data(key, value, nullptr); }
  std::optional<EntryKind> entry_kind(const std::string& key) const override;
  // td[index] reading only the selected hyperslab of every dataset (ints and
  // slices with positive steps over leading dims; other indices read the
  // datasets whole, then index): a dense TensorDict.
  TensorDict index(at::ArrayRef<TensorIndex> index) const override;
  at::Tensor read_at(const std::string& key, const BatchIndex& resolved, at::ArrayRef<TensorIndex> index) const override;
  void assign_at(const std::string& key, const BatchIndex& resolved, at::ArrayRef<TensorIndex> index,
                 const at::Tensor& value) override;

  H5Options options;  // dataset creation options for later writes

 private:
  std::string path_of(const std::string& key) const { return group_ == "/" ? "/" + key : group_ + "/" + key; }
  hid_t fid() const { return file_->id(group_); }

  std::shared_ptr<H5File> file_;
  std::string group_;
  std::vector<int64_t> batch_size_;
  std::optional<at::Device> device_;
  Names names_;
  mutable std::map<std::string, std::shared_ptr<PersistentImpl>> children_;
  // The object addresses of this group and its ancestors, top first: a group
  // reached again below itself is a hard-link cycle.
  mutable std::vector<haddr_t> ancestry_;
};

// A hyperslab selection: per dim start/count/stride, and the result shape
// (int-indexed dims dropped).
struct Slab {
  std::vector<hsize_t> start, count, stride;
  std::vector<int64_t> shape;
};
Slab hyperslab_of(const std::vector<TensorIndex>& index, at::IntArrayRef dims);

// True when `index` is only ints and positive-step slices (a hyperslab).
bool is_slab_index(const std::vector<TensorIndex>& index);

// Checks that `key` can name an HDF5 link.
void check_link_name(const std::string& key, const std::string& where);

// A PersistentTensorDict's impl (its constructors check the kind).
inline PersistentImpl& persistent_impl(const PersistentTensorDict& td) {
  return static_cast<PersistentImpl&>(*td.impl());
}

}  // namespace tensordict::detail::h5
