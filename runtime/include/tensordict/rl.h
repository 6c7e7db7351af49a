// tensordict::rl: TorchRL's replay buffer over a memory-mapped storage, in
// TorchRL's on-disk checkpoint format.
//
//   tensordict::rl::ReplayBuffer rb(tensordict::rl::LazyMemmapStorage(100'000, {.scratch_dir = "rb"}));
//   rb.extend(rollout);                  // rows along the first batch dim
//   TensorDict batch = rb.sample(256);   // uniform, with replacement
//   rb.dumps("ckpt");                    // TorchRL's rb.loads("ckpt") reads it
//
// The names and semantics are TorchRL 0.14's ReplayBuffer with a
// LazyMemmapStorage, a RoundRobinWriter and a RandomSampler: the storage is
// created by the first write (every leaf [max_size, *row shape], zero-filled),
// the writer's cursor wraps and its write_count grows, size() is TorchRL's
// len(rb), and dumps/loads write and read the directory TorchRL's do
// (storage/ with storage_metadata.json, writer/metadata.json,
// buffer_metadata.json, rng_state/). ReplayBuffer<Step> holds a generated
// tensorclass: its storage tree is written in tensorclass layout, so TorchRL
// with the schema's Python module loads it as that @tensorclass.
#pragma once

#include <ATen/core/Generator.h>

#include <cstdint>
#include <memory>
#include <optional>
#include <string>

#include "tensordict/base.h"

namespace tensordict::rl {

struct LazyMemmapStorageOptions {
  // The directory the storage's memmap tree lives in, written in place as rows
  // arrive (TorchRL's scratch_dir). Empty: anonymous shared memory, released
  // with the storage (TorchRL's temporary directory, cleaned up at exit).
  std::string scratch_dir = {};
};

namespace detail {
// How a storage's tree is written to and read from disk: as a plain
// tensordict (this base), or as a generated tensorclass (TensorClassLayout).
struct TreeLayout {
  virtual ~TreeLayout() = default;
  // memmap (like: memmap_like, zero-filled) of `td` at `prefix`.
  virtual TensorDict write(const TensorDict& td, const std::string& prefix, bool like) const;
  virtual TensorDict load(const std::string& prefix) const;
  // "TensorDict", or the tensorclass's name (for messages).
  virtual std::string element_name() const { return "TensorDict"; }
};
}  // namespace detail

// TorchRL's LazyMemmapStorage: max_size rows of one element structure, in a
// memmap tree created by the first write. A handle: copies share the storage.
class LazyMemmapStorage {
 public:
  explicit LazyMemmapStorage(int64_t max_size, LazyMemmapStorageOptions options = {});

  int64_t max_size() const;
  // The number of rows written, at most max_size (TorchRL's len(storage)).
  int64_t size() const;
  bool initialized() const;
  // The [max_size] tree; RuntimeError before the first write.
  TensorDict tensordict() const;
  const std::string& scratch_dir() const;

  // Writes `rows` (batch [n, ...]) at the storage indices `index` (int64, [n]),
  // creating the storage from rows[0] on the first write. The rows must hold
  // exactly the storage's keys (KeyError naming the first that differs).
  void set(const at::Tensor& index, const TensorDict& rows);
  // The rows at `index`, copied (a dense tensordict of batch [n, ...]).
  TensorDict get(const at::Tensor& index) const;

  // storage/ of a checkpoint: the tree and storage_metadata.json.
  void dumps(const std::string& path) const;
  void loads(const std::string& path);

  // The typed layer's layout (ReplayBuffer<Step>).
  void set_layout(std::shared_ptr<const detail::TreeLayout> layout);

 private:
  struct State;
  std::shared_ptr<State> state_;
};

struct ReplayBufferOptions {
  // Seeds the sampler's own generator (TorchRL's generator=); without one,
  // samples draw from libtorch's default CPU generator, as TorchRL's do from
  // torch's global one. For the same seed, the same libtorch as Python's
  // torch draws the same indices as TorchRL.
  std::optional<uint64_t> seed = std::nullopt;
  // sample()'s batch size when none is given (TorchRL's batch_size=).
  std::optional<int64_t> batch_size = std::nullopt;
};

namespace detail {
// The untyped buffer every ReplayBuffer<Element> wraps (src/rl/replay_buffer.cpp).
class ReplayBufferCore {
 public:
  ReplayBufferCore(LazyMemmapStorage storage, ReplayBufferOptions options);

  at::Tensor extend(const TensorDict& rows);
  int64_t add(const TensorDict& row);
  TensorDict sample(std::optional<int64_t> batch_size);
  // sample() and the storage indices it drew.
  std::pair<TensorDict, at::Tensor> sample_with_index(std::optional<int64_t> batch_size);
  int64_t size() const { return storage_.size(); }
  int64_t cursor() const { return cursor_; }
  int64_t write_count() const { return write_count_; }
  void dumps(const std::string& path) const;
  void loads(const std::string& path);
  LazyMemmapStorage& storage() { return storage_; }
  const LazyMemmapStorage& storage() const { return storage_; }

 private:
  at::Tensor draw(int64_t batch_size);

  LazyMemmapStorage storage_;
  ReplayBufferOptions options_;
  std::optional<at::Generator> generator_;
  int64_t cursor_ = 0;
  int64_t write_count_ = 0;
};

// The layout of a generated tensorclass T: its tree in tensorclass layout
// (meta.json names T's Python class), read back through T.
template <class T>
struct TensorClassLayout : TreeLayout {
  TensorDict write(const TensorDict& td, const std::string& prefix, bool like) const override {
    const T typed = T::from_tensordict(td);
    return (like ? typed.memmap_like(prefix) : typed.memmap(prefix, {.copy_existing = true})).tensordict();
  }
  TensorDict load(const std::string& prefix) const override { return T::load_memmap(prefix).tensordict(); }
  std::string element_name() const override { return std::string(T::schema().name); }
};
}  // namespace detail

// TorchRL's ReplayBuffer (and TensorDictReplayBuffer's storage format) with a
// LazyMemmapStorage, a RoundRobinWriter and a RandomSampler. Element is
// TensorDict (the default) or a generated tensorclass.
template <class Element = TensorDict>
class ReplayBuffer {
 public:
  explicit ReplayBuffer(LazyMemmapStorage storage, ReplayBufferOptions options = {})
      : core_(with_layout(std::move(storage)), options) {}

  // Writes the rows of `data` (its first batch dim) at the cursor, which
  // wraps at max_size; returns their storage indices (TorchRL's extend).
  at::Tensor extend(const Element& data) { return core_.extend(as_tensordict(data)); }
  // One element (batch []) at the cursor; returns its index (TorchRL's add).
  int64_t add(const Element& data) { return core_.add(as_tensordict(data)); }
  // `batch_size` rows drawn uniformly with replacement from the size() rows
  // written (TorchRL's RandomSampler); without a batch size, the buffer's.
  Element sample(std::optional<int64_t> batch_size = std::nullopt) {
    return as_element(core_.sample(batch_size));
  }
  // sample() and the storage index of each row (TorchRL's return_info=True,
  // info["index"]).
  std::pair<Element, at::Tensor> sample_with_index(std::optional<int64_t> batch_size = std::nullopt) {
    auto [data, index] = core_.sample_with_index(batch_size);
    return {as_element(data), index};
  }
  // The number of rows stored (TorchRL's len(rb)).
  int64_t size() const { return core_.size(); }
  int64_t cursor() const { return core_.cursor(); }
  int64_t write_count() const { return core_.write_count(); }
  // Writes the buffer in TorchRL's checkpoint layout at `path`; TorchRL's
  // rb.loads(path) reads it (a LazyMemmapStorage of the same max_size).
  void dumps(const std::string& path) const { core_.dumps(path); }
  // Reads a checkpoint TorchRL's rb.dumps(path) (or dumps here) wrote. Its
  // storage must have this buffer's max_size; what the files say is checked
  // (RuntimeError naming the file) before the buffer changes.
  void loads(const std::string& path) { core_.loads(path); }
  LazyMemmapStorage& storage() { return core_.storage(); }

 private:
  static LazyMemmapStorage with_layout(LazyMemmapStorage storage) {
    if constexpr (!std::is_same_v<Element, TensorDict>) {
      storage.set_layout(std::make_shared<detail::TensorClassLayout<Element>>());
    }
    return storage;
  }
  static TensorDict as_tensordict(const Element& data) {
    if constexpr (std::is_same_v<Element, TensorDict>) {
      return data;
    } else {
      return data.tensordict();
    }
  }
  static Element as_element(const TensorDict& td) {
    if constexpr (std::is_same_v<Element, TensorDict>) {
      return td;
    } else {
      return Element::from_tensordict(td);
    }
  }

  detail::ReplayBufferCore core_;
};

}  // namespace tensordict::rl
