// TensorDict: the dense tensordict, owning its entries.
#pragma once

#include <initializer_list>
#include <utility>
#include <vector>

#include "tensordict/base.h"

namespace tensordict {

class TensorDict : public TensorDictBase {
 public:
  using Entry = std::pair<NestedKey, Value>;

  // An empty tensordict with an empty batch size and no device.
  TensorDict();
  // Entries are set in order with set()'s rules: every tensor must start with
  // `batch_size`; with a `device`, entries are moved there; `names` names the
  // batch dims.
  TensorDict(std::vector<Entry> entries, at::IntArrayRef batch_size = {},
             std::optional<at::Device> device = std::nullopt, Names names = {});
  // Views `td` as a dense TensorDict; std::invalid_argument if it is another kind.
  explicit TensorDict(const TensorDictBase& td);

  // A tensordict of batch size [] with `value` (a 0-dim tensor of it) at
  // each key (tensordict's TensorDict.fromkeys).
  // tensordict's from_dict: tensors, nested dicts (nested tensordicts) and
  // non-tensor values (strings, numbers, bools, None, lists). Without a
  // batch size the batch size is [] unless `auto_batch_size` or `batch_dims`
  // asks for the longest leading shape every entry shares (at most
  // `batch_dims` dims), as in tensordict.
  static TensorDict from_dict(const c10::Dict<std::string, c10::IValue>& dict,
                              std::optional<std::vector<int64_t>> batch_size = std::nullopt,
                              std::optional<at::Device> device = std::nullopt, bool auto_batch_size = false,
                              std::optional<int64_t> batch_dims = std::nullopt);
  static TensorDict fromkeys(const std::vector<NestedKey>& keys, const at::Scalar& value = 0);

  // ---- persistence
  // Loads a tree written by memmap()/memmap_() (or Python tensordict) at any
  // level; leaves map their files (no data is read). With a device, leaves are
  // copied there.
  static TensorDict load_memmap(const std::string& prefix, std::optional<at::Device> device = std::nullopt);
  static TensorDict load(const std::string& prefix, std::optional<at::Device> device = std::nullopt);

 private:
  friend class TensorDictBase;
  explicit TensorDict(std::shared_ptr<TensorDictImpl> impl);
};

}  // namespace tensordict
