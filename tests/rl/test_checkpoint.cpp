// dumps/loads in TorchRL's checkpoint layout (torchrl/data/replay_buffers:
// replay_buffers/base.py dumps/loads, checkpointers.py
// TensorStorageCheckpointer, writers/round_robin.py dumps/loads), and the
// hostile forms of a checkpoint: each refused with the file and the reason,
// the buffer unchanged. (The round trips with real TorchRL: run_torchrl.py.)
#include <fstream>
#include <nlohmann/json.hpp>

#include "rl_helpers.h"

using namespace tensordict;
using td_test::ids_of;
using td_test::TempDir;
using td_test::transitions;
namespace fs = std::filesystem;

namespace {

std::string read_file(const fs::path& path) {
  std::ifstream in(path);
  return std::string(std::istreambuf_iterator<char>(in), {});
}

void write_file(const fs::path& path, const std::string& text) {
  std::ofstream out(path, std::ios::trunc);
  out << text;
}

// A checkpoint of a 6-slot buffer after 8 writes (it wrapped): len 6,
// cursor 2, write_count 8.
void dump_wrapped(const fs::path& path) {
  rl::ReplayBuffer rb(rl::LazyMemmapStorage(6), {.seed = 1, .batch_size = 4});
  rb.extend(transitions(0, 5));
  rb.extend(transitions(5, 3));
  rb.dumps(path.string());
}

}  // namespace

TEST_CASE("rl: dumps writes TorchRL's layout: storage, storage_metadata, writer and buffer metadata, rng_state") {
  TempDir dir;
  dump_wrapped(dir / "ckpt");
  const fs::path ckpt = dir / "ckpt";
  CHECK(read_file(ckpt / "storage" / "storage_metadata.json") == R"({"metadata":{},"is_pytree":false,"len":6})");
  CHECK(read_file(ckpt / "writer" / "metadata.json") == R"({"cursor":2,"write_count":8})");
  CHECK(read_file(ckpt / "buffer_metadata.json") == R"({"batch_size":4,"consume_after_n_samples":null})");
  const TensorDict storage = TensorDict::load_memmap((ckpt / "storage").string());
  CHECK(at::equal(ids_of(storage), at::tensor({6, 7, 2, 3, 4, 5}, at::kLong)));
  // The generator's state, as torch.Generator.get_state() gives it.
  const at::Tensor state = TensorDict::load_memmap((ckpt / "rng_state").string()).get("rng_state");
  CHECK(state.scalar_type() == at::kByte);
  CHECK(at::equal(state, at::detail::createCPUGenerator(1).get_state()));
}

TEST_CASE("rl: loads restores rows, len, cursor, write_count, batch size and the generator") {
  TempDir dir;
  dump_wrapped(dir / "ckpt");
  rl::ReplayBuffer rb(rl::LazyMemmapStorage(6, {.scratch_dir = (dir / "mine").string()}));
  rb.loads((dir / "ckpt").string());
  CHECK((rb.size() == 6 && rb.cursor() == 2 && rb.write_count() == 8));
  CHECK(at::equal(ids_of(rb.storage().tensordict()), at::tensor({6, 7, 2, 3, 4, 5}, at::kLong)));
  // The rows were copied into this storage's own scratch dir.
  CHECK(at::equal(ids_of(TensorDict::load_memmap((dir / "mine").string())), at::tensor({6, 7, 2, 3, 4, 5}, at::kLong)));
  // The batch size (4) and the generator (seed 1) came with it.
  at::Generator g = at::detail::createCPUGenerator(1);
  auto [batch, index] = rb.sample_with_index();
  CHECK(at::equal(index, at::randint(0, 6, {4}, g, at::kLong)));
  // Writing goes on where the checkpoint stopped: slot 2, then 3.
  CHECK(at::equal(rb.extend(transitions(8, 2)), at::tensor({2, 3}, at::kLong)));
  CHECK(rb.write_count() == 10);
}

TEST_CASE("rl: a storage whose scratch dir is the checkpoint's storage/ saves and loads without copying") {
  TempDir dir;
  const fs::path storage = dir / "ckpt" / "storage";
  rl::ReplayBuffer rb(rl::LazyMemmapStorage(4, {.scratch_dir = storage.string()}));
  rb.extend(transitions(0, 3));
  rb.dumps((dir / "ckpt").string());
  // The buffer goes on writing into the files dumps left there.
  rb.extend(transitions(3, 1));
  CHECK(at::equal(ids_of(TensorDict::load_memmap(storage.string())), at::arange(4, at::kLong)));
  rl::ReplayBuffer other(rl::LazyMemmapStorage(4, {.scratch_dir = storage.string()}));
  other.loads((dir / "ckpt").string());
  CHECK(other.size() == 3);
  CHECK(at::equal(ids_of(other.storage().tensordict()), at::arange(4, at::kLong)));
}

TEST_CASE("hostile: a replay-buffer checkpoint that lies is refused, naming the file, the buffer unchanged") {
  TempDir dir;
  const fs::path ckpt = dir / "ckpt";
  rl::ReplayBuffer rb(rl::LazyMemmapStorage(6));
  rb.extend(transitions(100, 1));
  auto refused = [&](const std::string& expected) {
    CHECK(TD_MESSAGE(rb.loads(ckpt.string())) == expected);
    CHECK((rb.size() == 1 && rb.cursor() == 1 && rb.write_count() == 1));
    CHECK(at::equal(ids_of(rb.storage().tensordict()).slice(0, 0, 1), at::tensor({100}, at::kLong)));
  };
  const std::string storage_meta = (ckpt / "storage" / "storage_metadata.json").string();
  const std::string writer_meta = (ckpt / "writer" / "metadata.json").string();

  SECTION("a len past max_size") {
    dump_wrapped(ckpt);
    write_file(storage_meta, R"({"metadata":{},"is_pytree":false,"len":7})");
    refused("malformed " + storage_meta + ": \"len\" is 7, expected an integer in [0, 6]");
  }
  SECTION("a len that write_count contradicts") {
    dump_wrapped(ckpt);
    write_file(storage_meta, R"({"metadata":{},"is_pytree":false,"len":3})");
    refused(ckpt.string() +
            ": the checkpoint contradicts itself: 8 rows written (write_count) into 6 slots give len 6 and cursor 2, "
            "but " + storage_meta + " says len 3 and " + writer_meta + " says cursor 2");
  }
  SECTION("a cursor past the storage") {
    dump_wrapped(ckpt);
    write_file(writer_meta, R"({"cursor":6,"write_count":8})");
    refused("malformed " + writer_meta + ": \"cursor\" is 6, expected an integer in [0, 5]");
  }
  SECTION("a cursor that write_count contradicts") {
    dump_wrapped(ckpt);
    write_file(writer_meta, R"({"cursor":4,"write_count":8})");
    refused(ckpt.string() +
            ": the checkpoint contradicts itself: 8 rows written (write_count) into 6 slots give len 6 and cursor 2, "
            "but " + storage_meta + " says len 6 and " + writer_meta + " says cursor 4");
  }
  SECTION("a cursor and len without write_count that disagree") {
    rl::ReplayBuffer small(rl::LazyMemmapStorage(6));
    small.extend(transitions(0, 3));
    small.dumps(ckpt.string());
    write_file(writer_meta, R"({"cursor":1})");
    refused(ckpt.string() + ": the checkpoint contradicts itself: " + storage_meta + " says len 3, so the cursor is 3, but " +
            writer_meta + " says 1");
  }
  SECTION("a negative, fractional or textual count") {
    dump_wrapped(ckpt);
    write_file(writer_meta, R"({"cursor":2,"write_count":-8})");
    refused("malformed " + writer_meta + ": \"write_count\" is -8, expected an integer in [0, 9223372036854775807]");
    write_file(writer_meta, R"({"cursor":2.5,"write_count":8})");
    refused("malformed " + writer_meta + ": \"cursor\" is 2.5, expected an integer in [0, 5]");
    write_file(storage_meta, R"({"metadata":{},"is_pytree":false,"len":"6"})");
    write_file(writer_meta, R"({"cursor":2,"write_count":8})");
    refused("malformed " + storage_meta + ": \"len\" is \"6\", expected an integer in [0, 6]");
  }
  SECTION("a storage shorter than max_size") {
    rl::ReplayBuffer small(rl::LazyMemmapStorage(5));
    small.extend(transitions(0, 5));
    small.dumps(ckpt.string());
    write_file(storage_meta, R"({"metadata":{},"is_pytree":false,"len":5})");
    write_file(writer_meta, R"({"cursor":5,"write_count":5})");
    refused((ckpt / "storage").string() +
            ": the storage holds 5 rows, but this buffer's LazyMemmapStorage has max_size 6 (TorchRL's loads needs "
            "the same max_size)");
  }
  SECTION("a missing file") {
    dump_wrapped(ckpt);
    fs::remove(ckpt / "writer" / "metadata.json");
    const std::string message = TD_MESSAGE(rb.loads(ckpt.string()));
    CHECK_THAT(message, Catch::StartsWith("cannot load a replay buffer checkpoint: " + writer_meta + " ("));
    CHECK_THAT(message, Catch::Contains("is missing or unreadable"));
    fs::remove(ckpt / "buffer_metadata.json");
    CHECK_THAT(TD_MESSAGE(rb.loads(ckpt.string())),
               Catch::StartsWith("cannot load a replay buffer checkpoint: " + (ckpt / "buffer_metadata.json").string()));
  }
  SECTION("a missing leaf file") {
    dump_wrapped(ckpt);
    fs::remove(ckpt / "storage" / "obs.memmap");
    CHECK_THAT(TD_MESSAGE(rb.loads(ckpt.string())), Catch::Contains("obs.memmap"));
    CHECK(rb.size() == 1);
  }
  SECTION("rows of another structure") {
    rl::ReplayBuffer other(rl::LazyMemmapStorage(6));
    TensorDict rows = transitions(0, 2);
    rows.set("value", at::zeros({2}));
    other.extend(rows);
    other.dumps(ckpt.string());
    refused("LazyMemmapStorage.loads(" + (ckpt / "storage").string() +
            "): the saved rows hold the key 'value', which the storage, created by the first write, does not");
  }
  SECTION("not JSON, or not an object") {
    dump_wrapped(ckpt);
    write_file(writer_meta, "{\"cursor\": 2,");
    CHECK_THAT(TD_MESSAGE(rb.loads(ckpt.string())), Catch::Contains(writer_meta));
    write_file(writer_meta, "[2, 8]");
    refused("malformed " + writer_meta + ": expected a JSON object, got array");
  }
  SECTION("a pytree storage, a sampler's state, a transform's state") {
    dump_wrapped(ckpt);
    write_file(storage_meta, R"({"metadata":{},"is_pytree":true,"len":6})");
    refused(storage_meta + ": a pytree storage (is_pytree: true); only tensordict storages are read here");
    write_file(storage_meta, R"({"metadata":{},"is_pytree":false,"len":6})");
    fs::create_directories(ckpt / "sampler");
    write_file(ckpt / "sampler" / "sampler_metadata.json", "{}");
    refused(ckpt.string() + ": the checkpoint holds a sampler's state (" + (ckpt / "sampler").string() +
            "); only TorchRL's RandomSampler, which keeps none, is read here");
    fs::remove_all(ckpt / "sampler");
    write_file(ckpt / "transform.t", "");
    refused(ckpt.string() + ": the checkpoint holds a transform's state (transform.t); buffers with transforms are not "
            "read here");
  }
  SECTION("an rng_state that is no generator's state") {
    dump_wrapped(ckpt);
    TensorDict({{"rng_state", at::zeros({7}, at::kByte)}}, {}).memmap((ckpt / "rng_state").string());
    CHECK_THAT(TD_MESSAGE(rb.loads(ckpt.string())),
               Catch::StartsWith((ckpt / "rng_state").string() + ": rng_state is not a CPU generator's state ("));
    CHECK(rb.size() == 1);
  }
}

TEST_CASE("rl: dumps of an empty buffer, or to a path it cannot create, says why") {
  TempDir dir;
  std::ofstream(dir / "file") << "not a directory";
  rl::ReplayBuffer rb(rl::LazyMemmapStorage(4));
  CHECK(TD_MESSAGE(rb.dumps((dir / "ckpt").string())) ==
        "LazyMemmapStorage.dumps(" + (dir / "ckpt" / "storage").string() + "): cannot save a storage nothing was written to");
  rb.extend(transitions(0, 1));
  CHECK_THAT(TD_MESSAGE(rb.dumps((dir / "file" / "ckpt").string())),
             Catch::StartsWith("cannot write a replay buffer checkpoint: cannot create " + (dir / "file" / "ckpt").string()));
}
