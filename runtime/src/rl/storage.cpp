// TorchRL's LazyMemmapStorage: a [max_size] memmap tree created by the first
// write, rows written in place at the writer's indices, and storage/ of a
// checkpoint (the tree plus storage_metadata.json).
#include <ATen/ATen.h>
#include <nlohmann/json.hpp>
#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <filesystem>

#include "memmap/memmap_detail.h"
#include "rl/checkpoint_files.h"
#include "tensordict/errors.h"
#include "tensordict/memmap.h"
#include "tensordict/non_tensor.h"
#include "tensordict/rl.h"

namespace tensordict::rl {

namespace fs = std::filesystem;

TensorDict detail::TreeLayout::write(const TensorDict& td, const std::string& prefix, bool like) const {
  return like ? td.memmap_like(prefix) : td.memmap(prefix, {.copy_existing = true});
}

TensorDict detail::TreeLayout::load(const std::string& prefix) const { return TensorDict::load_memmap(prefix); }

namespace {
// The storage as rows are written into it: its tensors stay the mapped files
// (written in place), while its non-tensor entries are held in memory, per
// row, until dumps writes them (as TorchRL's storage holds them): a
// memory-mapped tensordict would rewrite a NonTensorStack's meta.json on
// every write, and keep one value shared by every row.
TensorDict in_memory(const TensorDict& mapped) { return mapped.clone({.recurse = false}); }

// The leaf keys (non-tensor entries included) that make a storage's structure.
std::vector<NestedKey> leaf_keys(const TensorDict& td) {
  auto keys = td.keys({.include_nested = true, .leaves_only = true, .is_leaf = IsLeaf::NonTensor});
  std::sort(keys.begin(), keys.end(), [](const NestedKey& a, const NestedKey& b) { return a.repr() < b.repr(); });
  return keys;
}
}  // namespace

struct LazyMemmapStorage::State {
  State(int64_t max_size, LazyMemmapStorageOptions options) : max_size(max_size), options(std::move(options)) {}
  int64_t max_size;
  LazyMemmapStorageOptions options;
  std::shared_ptr<const detail::TreeLayout> layout = std::make_shared<detail::TreeLayout>();
  std::optional<TensorDict> tree;
  // The tree's leaf keys, sorted: what every write must hold (taken once,
  // not on every extend).
  std::vector<NestedKey> keys;
  bool tree_has_non_tensor = false;
  int64_t len = 0;

  void adopt(TensorDict mapped) {
    tree = in_memory(mapped);
    keys = leaf_keys(*tree);
    tree_has_non_tensor = !tree->non_tensor_items({.include_nested = true}).empty();
  }
};

namespace {

// KeyError naming the first key that one structure has and the other lacks.
void check_same_keys(const std::vector<NestedKey>& held, const TensorDict& rows, std::string_view op,
                     std::string_view what) {
  const auto given = leaf_keys(rows);
  if (held == given) return;
  auto has = [](const std::vector<NestedKey>& keys, const NestedKey& key) {
    return std::any_of(keys.begin(), keys.end(), [&](const NestedKey& k) { return k.repr() == key.repr(); });
  };
  for (const auto& key : held) {
    if (!has(given, key)) {
      throw KeyError(fmt::format("{}: {} lack the key {} that the storage holds (every row holds the storage's keys)",
                                 op, what, key.repr()));
    }
  }
  for (const auto& key : given) {
    if (!has(held, key)) {
      throw KeyError(fmt::format("{}: {} hold the key {}, which the storage, created by the first write, does not",
                                 op, what, key.repr()));
    }
  }
}


bool same_path(const std::string& a, const fs::path& b) {
  if (a.empty()) return false;
  std::error_code ec;
  const fs::path x = fs::weakly_canonical(fs::absolute(a, ec), ec);
  if (ec) return false;
  const fs::path y = fs::weakly_canonical(fs::absolute(b, ec), ec);
  return !ec && x == y;
}

}  // namespace

LazyMemmapStorage::LazyMemmapStorage(int64_t max_size, LazyMemmapStorageOptions options)
    : state_(std::make_shared<State>(max_size, std::move(options))) {
  if (max_size <= 0) {
    throw ValueError(fmt::format("LazyMemmapStorage: max_size must be positive, got {}", max_size));
  }
}

int64_t LazyMemmapStorage::max_size() const { return state_->max_size; }
int64_t LazyMemmapStorage::size() const { return state_->len; }
bool LazyMemmapStorage::initialized() const { return state_->tree.has_value(); }
const std::string& LazyMemmapStorage::scratch_dir() const { return state_->options.scratch_dir; }

TensorDict LazyMemmapStorage::tensordict() const {
  if (!state_->tree) throw RuntimeError("LazyMemmapStorage: the storage is created by the first write; nothing was written yet");
  return *state_->tree;
}

void LazyMemmapStorage::set_layout(std::shared_ptr<const detail::TreeLayout> layout) {
  state_->layout = std::move(layout);
}

void LazyMemmapStorage::set(const at::Tensor& index, const TensorDict& rows) {
  State& s = *state_;
  if (rows.batch_dims() == 0) {
    throw ValueError("LazyMemmapStorage.set: the rows need a batch dim (batch size [n, ...]); add() takes one element");
  }
  const int64_t n = rows.batch_size()[0];
  if (index.dim() != 1 || index.numel() != n) {
    throw ValueError(fmt::format("LazyMemmapStorage.set: {} rows need {} indices, got an index of shape [{}]", n, n,
                                 fmt::join(index.sizes(), ", ")));
  }
  if (!s.tree) {
    // TorchRL's _init: the first row, expanded to max_size rows, in files
    // of full size (zero-filled), or in anonymous shared memory.
    const TensorDict row = rows.index({0});
    std::vector<int64_t> shape{s.max_size};
    shape.insert(shape.end(), row.batch_size().begin(), row.batch_size().end());
    const TensorDict full = row.expand(shape);
    if (s.options.scratch_dir.empty()) {
      TensorDict anonymous = full.clone();
      anonymous.zero_();
      s.adopt(anonymous.memmap_());
    } else {
      s.adopt(s.layout->write(full, s.options.scratch_dir, /*like=*/true));
    }
  }
  check_same_keys(s.keys, rows, "LazyMemmapStorage.set", "the rows");
  s.tree->update_at_(rows, {index});
  s.len = std::min(s.len + n, s.max_size);
}

TensorDict LazyMemmapStorage::get(const at::Tensor& index) const {
  const TensorDict tree = tensordict();
  if (!state_->tree_has_non_tensor) {
    // The indices are the sampler's, in [0, len): index_select gathers whole
    // rows, about twice as fast as an advanced index (which also wraps
    // negative indices, and gathers non-tensor entries, which need it).
    std::vector<int64_t> batch = tree.batch_size().vec();
    batch[0] = index.numel();
    return tree.apply([&](const at::Tensor& leaf) { return leaf.index_select(0, index); }, batch);
  }
  return tree.index({index});
}

void LazyMemmapStorage::dumps(const std::string& path) const {
  State& s = *state_;
  if (!s.tree) throw RuntimeError(fmt::format("LazyMemmapStorage.dumps({}): cannot save a storage nothing was written to", path));
  // The tree is written anew; when it lives there already (scratch_dir is the
  // checkpoint's storage/), the storage maps the new files from then on.
  const TensorDict written = s.layout->write(*s.tree, path, /*like=*/false);
  if (same_path(s.options.scratch_dir, path)) s.adopt(written);
  write_checkpoint_json(fs::path(path) / "storage_metadata.json",
                        Json{{"metadata", Json::object()}, {"is_pytree", false}, {"len", s.len}});
}

void LazyMemmapStorage::loads(const std::string& path) {
  State& s = *state_;
  const fs::path file = fs::path(path) / "storage_metadata.json";
  const Json meta = read_checkpoint_json(file);
  const Json& pytree = checkpoint_field(meta, "is_pytree", file);
  if (!pytree.is_boolean()) {
    throw RuntimeError(fmt::format("malformed {}: \"is_pytree\" is {}, expected true or false", file.string(), pytree.dump()));
  }
  if (pytree.get<bool>()) {
    throw RuntimeError(fmt::format("{}: a pytree storage (is_pytree: true); only tensordict storages are read here",
                                   file.string()));
  }
  const int64_t len = checkpoint_int(meta, "len", file, 0, s.max_size);
  TensorDict loaded = s.layout->load(path);
  if (loaded.batch_dims() == 0 || loaded.batch_size()[0] != s.max_size) {
    throw RuntimeError(fmt::format(
        "{}: the storage holds {} rows, but this buffer's LazyMemmapStorage has max_size {} (TorchRL's loads needs "
        "the same max_size)",
        path, loaded.batch_dims() == 0 ? 0 : loaded.batch_size()[0], s.max_size));
  }
  if (s.tree) check_same_keys(s.keys, loaded, "LazyMemmapStorage.loads(" + path + ")", "the saved rows");
  // The loaded rows go where this storage keeps its rows (TorchRL copies them
  // into its own storage), unless that is the checkpoint itself.
  if (same_path(s.options.scratch_dir, path)) {
    s.adopt(loaded);
  } else if (s.options.scratch_dir.empty()) {
    s.adopt(loaded.clone().memmap_());
  } else {
    s.adopt(s.layout->write(loaded, s.options.scratch_dir, /*like=*/false));
  }
  s.len = len;
}

}  // namespace tensordict::rl
