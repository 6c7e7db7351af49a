// tensordict::rl::ReplayBuffer: TorchRL's RoundRobinWriter, RandomSampler
// and LazyMemmapStorage semantics (torchrl/data/replay_buffers: writers/
// round_robin.py, samplers/random.py, storages/tensor.py), each expectation
// computed from the rows written.
#include "rl_helpers.h"

using namespace tensordict;
using td_test::ids_of;
using td_test::TempDir;
using td_test::transitions;

TEST_CASE("rl: extend writes rows at the cursor, which wraps, while write_count grows") {
  rl::ReplayBuffer rb(rl::LazyMemmapStorage(5));
  CHECK(rb.size() == 0);
  const at::Tensor first = rb.extend(transitions(0, 3));
  CHECK(at::equal(first, at::arange(3, at::kLong)));
  CHECK((rb.size() == 3 && rb.cursor() == 3 && rb.write_count() == 3));
  // Four more rows: slots 3, 4, then 0 and 1 again (TorchRL's
  // arange(cursor, cursor + n) % max_size).
  const at::Tensor second = rb.extend(transitions(3, 4));
  CHECK(at::equal(second, at::tensor({3, 4, 0, 1}, at::kLong)));
  CHECK((rb.size() == 5 && rb.cursor() == 2 && rb.write_count() == 7));
  const TensorDict stored = rb.storage().tensordict();
  CHECK(stored.batch_size().vec() == std::vector<int64_t>{5});
  // Slot i holds the last transition written there: 5, 6, 2, 3, 4.
  CHECK(at::equal(ids_of(stored), at::tensor({5, 6, 2, 3, 4}, at::kLong)));
  CHECK(at::equal(stored.get({"next", "reward"}).squeeze(1), -ids_of(stored).to(at::kFloat)));
}

TEST_CASE("rl: add writes one element and returns its index") {
  rl::ReplayBuffer rb(rl::LazyMemmapStorage(2));
  CHECK(rb.add(transitions(7, 1).index({0})) == 0);
  CHECK(rb.add(transitions(8, 1).index({0})) == 1);
  CHECK(rb.add(transitions(9, 1).index({0})) == 0);
  CHECK((rb.size() == 2 && rb.cursor() == 1 && rb.write_count() == 3));
  CHECK(at::equal(ids_of(rb.storage().tensordict()), at::tensor({9, 8}, at::kLong)));
}

TEST_CASE("rl: sample draws uniformly from the rows written, with the seed's indices") {
  rl::ReplayBuffer rb(rl::LazyMemmapStorage(1000), {.seed = 3});
  rb.extend(transitions(100, 40));  // 40 of 1000 slots written
  auto [batch, index] = rb.sample_with_index(4000);
  CHECK(batch.batch_size().vec() == std::vector<int64_t>{4000});
  // Only written rows, each the row at its index.
  CHECK(index.min().item<int64_t>() >= 0);
  CHECK(index.max().item<int64_t>() < 40);
  CHECK(at::equal(ids_of(batch), index + 100));
  // Every row drawn about 100 times (uniform; 5 sigma is about 50).
  const at::Tensor counts = at::bincount(index, {}, 40);
  CHECK(counts.min().item<int64_t>() > 50);
  CHECK(counts.max().item<int64_t>() < 150);
  // The seed fixes the indices: torch.randint(40, (8,), generator=torch.Generator().manual_seed(3)).
  rl::ReplayBuffer again(rl::LazyMemmapStorage(1000), {.seed = 3});
  again.extend(transitions(100, 40));
  at::Generator g = at::detail::createCPUGenerator(3);
  CHECK(at::equal(again.sample_with_index(8).second, at::randint(0, 40, {8}, g, at::kLong)));
}

TEST_CASE("rl: sample's batch size defaults to the buffer's") {
  rl::ReplayBuffer rb(rl::LazyMemmapStorage(10), {.batch_size = 6});
  rb.extend(transitions(0, 3));
  CHECK(rb.sample().batch_size().vec() == std::vector<int64_t>{6});
  rl::ReplayBuffer none(rl::LazyMemmapStorage(10));
  none.extend(transitions(0, 3));
  CHECK(TD_MESSAGE(none.sample()) ==
        "ReplayBuffer.sample: no batch size given, and the buffer has none (ReplayBufferOptions.batch_size)");
}

TEST_CASE("rl: the storage's tree lives in the scratch dir, written in place") {
  TempDir dir;
  const std::string scratch = (dir / "scratch").string();
  rl::ReplayBuffer rb(rl::LazyMemmapStorage(8, {.scratch_dir = scratch}));
  rb.extend(transitions(0, 3));
  rb.extend(transitions(3, 2));
  // Another reader of the directory sees every row written, with no save in
  // between: the leaves are its files, of max_size rows.
  const TensorDict on_disk = TensorDict::load_memmap(scratch);
  CHECK(on_disk.batch_size().vec() == std::vector<int64_t>{8});
  CHECK(at::equal(ids_of(on_disk).slice(0, 0, 5), at::arange(5, at::kLong)));
  // Slots not written yet are zero-filled, as TorchRL's memmap_like leaves them.
  CHECK(at::equal(on_disk.get("obs").slice(0, 5), at::zeros({3, 3})));
  CHECK(std::filesystem::file_size(std::filesystem::path(scratch) / "obs.memmap") == 8 * 3 * sizeof(float));
}

TEST_CASE("rl: rows of another structure are refused by key") {
  rl::ReplayBuffer rb(rl::LazyMemmapStorage(4));
  rb.extend(transitions(0, 2));
  TensorDict extra = transitions(2, 1);
  extra.set("value", at::zeros({1}));
  CHECK(TD_MESSAGE(rb.extend(extra)) ==
        "LazyMemmapStorage.set: the rows hold the key 'value', which the storage, created by the first write, does not");
  TensorDict missing = transitions(2, 1);
  missing.del_({"next", "reward"});
  CHECK(TD_MESSAGE(rb.extend(missing)) ==
        "LazyMemmapStorage.set: the rows lack the key ('next', 'reward') that the storage holds (every row holds the "
        "storage's keys)");
  // A refused write leaves the writer where it was.
  CHECK((rb.size() == 2 && rb.cursor() == 2 && rb.write_count() == 2));
}

TEST_CASE("rl: what cannot be written or sampled is refused with its reason") {
  CHECK(TD_MESSAGE(rl::LazyMemmapStorage(0)) == "LazyMemmapStorage: max_size must be positive, got 0");
  rl::ReplayBuffer rb(rl::LazyMemmapStorage(4));
  CHECK(TD_MESSAGE(rb.sample(2)) == "ReplayBuffer.sample: cannot sample from an empty storage");
  CHECK(TD_MESSAGE(rb.extend(transitions(0, 1).index({0}))) ==
        "ReplayBuffer.extend: the data has batch size [] (extend writes the rows of its first batch dim); add() "
        "writes one element");
  CHECK(TD_MESSAGE(rb.extend(transitions(0, 0))) ==
        "ReplayBuffer.extend: expected at least one element, got a batch of 0 rows");
  rb.extend(transitions(0, 2));
  CHECK(TD_MESSAGE(rb.sample(0)) == "ReplayBuffer.sample: batch_size must be positive, got 0");
  CHECK(TD_MESSAGE(rl::LazyMemmapStorage(3).tensordict()) ==
        "LazyMemmapStorage: the storage is created by the first write; nothing was written yet");
}
