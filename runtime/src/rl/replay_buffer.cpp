// TorchRL's ReplayBuffer over a LazyMemmapStorage: the RoundRobinWriter (a
// cursor that wraps at max_size, a write_count that grows), the
// RandomSampler (uniform, with replacement) and the checkpoint directory
// TorchRL's dumps/loads write and read.
#include <ATen/ATen.h>
#include <nlohmann/json.hpp>
#include <ATen/CPUGeneratorImpl.h>
#include <fmt/format.h>

#include <filesystem>

#include "rl/checkpoint_files.h"
#include "tensordict/errors.h"
#include "tensordict/rl.h"

namespace tensordict::rl::detail {

namespace fs = std::filesystem;

ReplayBufferCore::ReplayBufferCore(LazyMemmapStorage storage, ReplayBufferOptions options)
    : storage_(std::move(storage)), options_(options) {
  if (options_.batch_size && *options_.batch_size <= 0) {
    throw ValueError(fmt::format("ReplayBuffer: batch_size must be positive, got {}", *options_.batch_size));
  }
  if (options_.seed) generator_ = at::detail::createCPUGenerator(*options_.seed);
}

at::Tensor ReplayBufferCore::extend(const TensorDict& rows) {
  if (rows.batch_dims() == 0) {
    throw ValueError("ReplayBuffer.extend: the data has batch size [] (extend writes the rows of its first batch "
                     "dim); add() writes one element");
  }
  const int64_t n = rows.batch_size()[0];
  if (n == 0) throw RuntimeError("ReplayBuffer.extend: expected at least one element, got a batch of 0 rows");
  const int64_t max_size = storage_.max_size();
  const at::Tensor index = at::arange(cursor_, cursor_ + n, at::kLong).remainder_(max_size);
  // The writer moves once the rows are written: a refused write leaves the
  // buffer as it was.
  storage_.set(index, rows);
  cursor_ = (cursor_ + n) % max_size;
  write_count_ += n;
  return index;
}

int64_t ReplayBufferCore::add(const TensorDict& row) { return extend(row.unsqueeze(0)).item<int64_t>(); }

at::Tensor ReplayBufferCore::draw(int64_t batch_size) {
  if (storage_.size() == 0) throw RuntimeError("ReplayBuffer.sample: cannot sample from an empty storage");
  if (batch_size <= 0) throw ValueError(fmt::format("ReplayBuffer.sample: batch_size must be positive, got {}", batch_size));
  // TorchRL's RandomSampler: torch.randint(len(storage), (batch_size,), generator=rng).
  const auto options = at::TensorOptions().dtype(at::kLong);
  return generator_ ? at::randint(0, storage_.size(), {batch_size}, *generator_, options)
                    : at::randint(0, storage_.size(), {batch_size}, options);
}

std::pair<TensorDict, at::Tensor> ReplayBufferCore::sample_with_index(std::optional<int64_t> batch_size) {
  if (!batch_size) batch_size = options_.batch_size;
  if (!batch_size) {
    throw ValueError("ReplayBuffer.sample: no batch size given, and the buffer has none (ReplayBufferOptions.batch_size)");
  }
  at::Tensor index = draw(*batch_size);
  return {storage_.get(index), index};
}

TensorDict ReplayBufferCore::sample(std::optional<int64_t> batch_size) { return sample_with_index(batch_size).first; }

void ReplayBufferCore::dumps(const std::string& path) const {
  const fs::path root(path);
  make_checkpoint_dir(root);
  storage_.dumps((root / "storage").string());
  write_checkpoint_json(root / "writer" / "metadata.json", Json{{"cursor", cursor_}, {"write_count", write_count_}});
  if (generator_) {
    // TorchRL's rng_state/: the generator's state in a memmap tree.
    TensorDict({{"rng_state", generator_->get_state()}}, {}, at::Device(at::kCPU)).memmap((root / "rng_state").string());
  }
  write_checkpoint_json(root / "buffer_metadata.json",
                        Json{{"batch_size", options_.batch_size ? Json(*options_.batch_size) : Json(nullptr)},
                             {"consume_after_n_samples", nullptr}});
}

namespace {

// A generator with the state TorchRL's dumps wrote in rng_state/.
at::Generator load_generator(const fs::path& dir) {
  const at::Tensor state = TensorDict::load_memmap(dir.string()).get("rng_state");
  at::Generator generator = at::detail::createCPUGenerator();
  try {
    generator.set_state(state.contiguous());
  } catch (const c10::Error&) {
    rethrow_reworded([&](std::string_view what) {
      return fmt::format("{}: rng_state is not a CPU generator's state ({})", dir.string(), what);
    });
  }
  return generator;
}

}  // namespace

void ReplayBufferCore::loads(const std::string& path) {
  const fs::path root(path);
  const int64_t max_size = storage_.max_size();
  // Everything the files say is read and checked before the buffer changes.
  const fs::path buffer_file = root / "buffer_metadata.json";
  const Json buffer_meta = read_checkpoint_json(buffer_file);
  std::optional<int64_t> batch_size;
  if (!checkpoint_field(buffer_meta, "batch_size", buffer_file).is_null()) {
    batch_size = checkpoint_int(buffer_meta, "batch_size", buffer_file, 1, INT64_MAX);
  }
  const fs::path writer_file = root / "writer" / "metadata.json";
  const Json writer_meta = read_checkpoint_json(writer_file);
  const int64_t cursor = checkpoint_int(writer_meta, "cursor", writer_file, 0, max_size - 1);
  const fs::path storage_file = root / "storage" / "storage_metadata.json";
  const int64_t len = checkpoint_int(read_checkpoint_json(storage_file), "len", storage_file, 0, max_size);
  // The round-robin writer's invariants: len = min(write_count, max_size)
  // and cursor = write_count % max_size (a checkpoint without write_count,
  // from an older TorchRL: len rows from 0 unless it wrapped).
  int64_t write_count = len;
  const bool counted = writer_meta.contains("write_count") && !writer_meta["write_count"].is_null();
  if (counted) {
    write_count = checkpoint_int(writer_meta, "write_count", writer_file, 0, INT64_MAX);
    if (len != std::min(write_count, max_size) || cursor != write_count % max_size) {
      throw RuntimeError(fmt::format(
          "{}: the checkpoint contradicts itself: {} rows written (write_count) into {} slots give len {} and cursor "
          "{}, but {} says len {} and {} says cursor {}",
          path, write_count, max_size, std::min(write_count, max_size), write_count % max_size,
          storage_file.string(), len, writer_file.string(), cursor));
    }
  } else if (len < max_size && cursor != len) {
    throw RuntimeError(fmt::format("{}: the checkpoint contradicts itself: {} says len {}, so the cursor is {}, but {} says {}",
                                   path, storage_file.string(), len, len, writer_file.string(), cursor));
  }
  // State this buffer cannot hold is refused rather than dropped.
  const fs::path sampler_dir = root / "sampler";
  std::error_code ec;
  if (checkpoint_has(sampler_dir) && !fs::is_empty(sampler_dir, ec)) {
    throw RuntimeError(fmt::format("{}: the checkpoint holds a sampler's state ({}); only TorchRL's RandomSampler, "
                                   "which keeps none, is read here",
                                   path, sampler_dir.string()));
  }
  if (checkpoint_has(root / "transform.t")) {
    throw RuntimeError(fmt::format("{}: the checkpoint holds a transform's state (transform.t); buffers with transforms "
                                   "are not read here",
                                   path));
  }
  std::optional<at::Generator> generator = generator_;
  if (checkpoint_has(root / "rng_state")) generator = load_generator(root / "rng_state");
  storage_.loads((root / "storage").string());
  cursor_ = cursor;
  write_count_ = write_count;
  options_.batch_size = batch_size;
  generator_ = generator;
}

}  // namespace tensordict::rl::detail
