// PersistentTensorDict: a tensordict over an HDF5 file (tensordict's
// PersistentTensorDict, h5py's layout: groups for nested levels, one dataset
// per leaf, strings as scalar UTF-8 string datasets).
//
// Nothing is read at open but the tree's shapes; get() reads one dataset,
// get_at()/index() read hyperslabs, contiguous()/to_tensordict() read all.
// In "w", "w-"/"x", "a" and "r+" modes set()/set_()/del_() write to the file.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "tensordict/base.h"
#include "tensordict/dense.h"

namespace tensordict {

class PersistentTensorDict : public TensorDictBase {
 public:
  // Opens `path` with h5py's modes: "r" (read), "r+" (read/write), "w"
  // (create, truncate), "w-"/"x" (create, fail if it exists), "a" (read/write,
  // create if missing). Without a batch size, each group's is inferred as
  // tensordict does: the longest leading-dim prefix common to its datasets
  // and sub-groups (a group may get a longer one than its parent).
  static PersistentTensorDict from_h5(const std::string& path, const std::string& mode = "r",
                                      std::optional<std::vector<int64_t>> batch_size = std::nullopt);
  // Writes `td` to a new file at `path` (truncating it); the result stays open
  // read/write. `options` apply to every tensor dataset.
  static PersistentTensorDict from_dict(const TensorDictBase& td, const std::string& path,
                                        const H5Options& options = {});

  // Views `td` as a PersistentTensorDict; std::invalid_argument if it is another kind.
  explicit PersistentTensorDict(const TensorDictBase& td);

  // Closes the file now (else the last handle closes it); later access throws.
  void close();
  bool is_open() const;
  const std::string& filename() const;
  const std::string& mode() const;

  // Reads everything into a dense TensorDict (same as contiguous()).
  TensorDict to_tensordict() const;
  // td[index] reading only the selected hyperslab of every dataset (ints and
  // slices with positive steps over leading dims; other indices read the
  // datasets whole, then index).
  TensorDict index(at::ArrayRef<TensorIndex> index) const;
  at::Tensor get_at(const NestedKey& key, at::ArrayRef<TensorIndex> index) const;
  // In-place writes that reach the file (the TensorDictBase versions would
  // write into a tensor read from it).
  PersistentTensorDict& set_(const NestedKey& key, const at::Tensor& value);
  PersistentTensorDict& set_at_(const NestedKey& key, const at::Tensor& value, at::ArrayRef<TensorIndex> index);

 private:
  explicit PersistentTensorDict(std::shared_ptr<TensorDictImpl> impl);
};

}  // namespace tensordict
