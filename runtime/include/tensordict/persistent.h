// PersistentTensorDict: a tensordict over an HDF5 file (tensordict's
// PersistentTensorDict, h5py's layout: groups for nested levels, one dataset
// per leaf, strings as scalar UTF-8 string datasets).
//
// Nothing is read at open but the tree's shapes; keys(), contains() and the
// repr read metadata only; get() reads one dataset, get_at() and index()
// (ints and slices with positive steps over leading dims) read hyperslabs,
// contiguous()/to_tensordict() read all. In "w", "w-"/"x", "a" and "r+"
// modes every write through the TensorDict interface (set, set_, set_at_,
// del_, update_, apply_, zero_, index_put_, ...) reaches the file.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "tensordict/base.h"

namespace tensordict {

class PersistentTensorDict : public TensorDict {
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
  static PersistentTensorDict from_dict(const TensorDict& td, const std::string& path,
                                        const H5Options& options = {});

  // Views `td` as a PersistentTensorDict (as td.as<PersistentTensorDict>());
  // TypeError naming both kinds if it is another kind.
  explicit PersistentTensorDict(const TensorDict& td);

  // Closes the file now (else the last handle closes it); later access throws.
  void close();
  bool is_open() const;
  const std::string& filename() const;
  const std::string& mode() const;

 private:
  explicit PersistentTensorDict(std::shared_ptr<TensorDictImpl> impl);
};

}  // namespace tensordict
