// Saving and loading generated tensorclasses: tensordict's tensorclass memmap
// layout (meta.json with _type and the non-tensor fields, tensors under
// _tensordict/, nested tensorclasses in their own directories there) and h5.
#include <ATen/ATen.h>
#include <nlohmann/json.hpp>
#include <catch2/catch.hpp>
#include <tensordict/tensordict.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <iterator>

#include "../builders.h"
#include "../message_of.h"
#include "../temp_dir.h"
#include "../text_files.h"
#include "sequence.tc.h"
#include "tc_obs.tc.h"

using Catch::Matchers::Contains;
using tct::Observation;
using tct::common::Agent;
namespace fs = std::filesystem;

namespace {

using td_test::iota;
using td_test::read_text;
using td_test::same;
using td_test::write_text;

using td_test::message_of;
using td_test::TempDir;


// Replaces the one occurrence of `from` in `file` (a test that edits a written file).
void edit(const fs::path& file, const std::string& from, const std::string& to) {
  std::string text = read_text(file);
  const auto at = text.find(from);
  REQUIRE(at != std::string::npos);
  text.replace(at, from.size(), to);
  write_text(file, text);
}

// Batch {2}, H=1, W=2, non-default non-tensor fields.
Observation small_obs(bool with_depth) {
  Observation::Fields f;
  f.pixels = iota({2, 3, 1, 2}, at::kByte);
  if (with_depth) f.depth = iota({2, 1, 2}) - 1;
  f.reward = iota({2}) + 0.5;
  f.agent = Agent({.pos = iota({2, 2}), .vel = -iota({2, 2})}, {2});
  f.task = "run";
  f.tags = {"x", "y", "z"};
  f.scale = 2.5;
  return Observation(std::move(f), {2});
}

void require_same(const Observation& a, const Observation& b) {
  REQUIRE(a.batch_size() == b.batch_size());
  REQUIRE(same(a.pixels, b.pixels));
  REQUIRE(same(a.depth, b.depth));
  REQUIRE(same(a.reward, b.reward));
  REQUIRE(a.agent.batch_size() == b.agent.batch_size());
  REQUIRE(same(a.agent.pos, b.agent.pos));
  REQUIRE(same(a.agent.vel, b.agent.vel));
  REQUIRE(a.task == b.task);
  REQUIRE(a.tags == b.tags);
  REQUIRE(a.scale == b.scale);
}

}  // namespace

TEST_CASE("memmap writes tensordict's tensorclass layout and load_memmap reads it back") {
  TempDir tmp;
  const fs::path dir = tmp / "obs";
  const Observation obs = small_obs(false);
  const Observation mm = obs.memmap(dir.string());
  REQUIRE(mm.is_locked());
  require_same(mm, obs);

  // Python keeps None fields (the unset optional `depth`) among the non-tensor ones.
  REQUIRE(read_text(dir / "meta.json") ==
          R"({"_type":"<class 'tct.Observation'>","depth":null,"task":"run","tags":["x","y","z"],"scale":2.5})");
  REQUIRE(read_text(dir / "_tensordict" / "meta.json") ==
          R"({"pixels":{"device":"cpu","shape":[2,3,1,2],"dtype":"torch.uint8","is_nested":false},)"
          R"("reward":{"device":"cpu","shape":[2],"dtype":"torch.float32","is_nested":false},)"
          R"("agent":{"type":"Agent"},"shape":[2],"device":"cpu","_type":"<class 'tensordict._td.TensorDict'>"})");
  REQUIRE(read_text(dir / "_tensordict" / "agent" / "meta.json") == R"({"_type":"<class 'tct.common.Agent'>"})");
  REQUIRE(fs::exists(dir / "_tensordict" / "agent" / "_tensordict" / "pos.memmap"));
  REQUIRE(fs::file_size(dir / "_tensordict" / "pixels.memmap") == 12);

  const Observation back = Observation::load_memmap(dir.string());
  require_same(back, obs);
  REQUIRE_FALSE(back.depth.defined());

  // With the optional field set, and non-tensor fields left at their defaults.
  Observation full = small_obs(true);
  full.task = "walk";
  full.tags = {"a", "b"};
  full.scale = 1.0;
  full.memmap((tmp / "full").string());
  REQUIRE(read_text(tmp / "full" / "meta.json") ==
          R"({"_type":"<class 'tct.Observation'>","task":"walk","tags":["a","b"],"scale":1.0})");
  require_same(Observation::load_memmap((tmp / "full").string()), full);
}

TEST_CASE("append_memmap grows a tensorclass tree by rows of its class, nested classes included", "[append]") {
  TempDir tmp;
  const std::string dir = (tmp / "obs").string();
  small_obs(false).memmap(dir);
  Observation more = small_obs(false);
  more.pixels = more.pixels + 100;
  more.agent.vel = more.agent.vel * 2;
  tensordict::append_memmap(dir, more);
  const Observation back = Observation::load_memmap(dir);
  REQUIRE(back.batch_size() == at::IntArrayRef{4});
  REQUIRE(same(back.pixels, at::cat({iota({2, 3, 1, 2}, at::kByte), iota({2, 3, 1, 2}, at::kByte) + 100})));
  REQUIRE(same(back.agent.vel, at::cat({-iota({2, 2}), -iota({2, 2}) * 2})));
  REQUIRE(back.agent.batch_size() == at::IntArrayRef{4});
  REQUIRE(back.task == "run");
  REQUIRE(read_text(tmp / "obs" / "meta.json") ==
          R"({"_type":"<class 'tct.Observation'>","depth":null,"task":"run","tags":["x","y","z"],"scale":2.5})");

  // tensordict's messages: a non-tensor field stays as saved; an optional
  // field set in the rows only is a key the saved tree lacks.
  more.task = "walk";
  REQUIRE(message_of([&] { tensordict::append_memmap(dir, more); }) ==
          "Cannot append to the entry 'task': the saved non-tensor value 'run' stays as it is, so the rows must "
          "hold the same value, not 'walk'.");
  REQUIRE(message_of([&] { tensordict::append_memmap(dir, small_obs(true)); }) ==
          "Cannot append rows with the keys ['agent', 'depth', 'pixels', 'reward', 'scale', 'tags', 'task'] to the "
          "saved tensordict, which has the keys ['agent', 'pixels', 'reward', 'scale', 'tags', 'task'].");
  REQUIRE(message_of([&] { tensordict::append_memmap(dir, more.agent); }) ==
          "Cannot append a Agent to the saved tensordict, a Observation.");
  REQUIRE(Observation::load_memmap(dir).batch_size() == at::IntArrayRef{4});
}

TEST_CASE("memmap_ maps the members in place, loaded tensors are views of the files") {
  TempDir tmp;
  const fs::path dir = tmp / "obs";
  Observation obs = small_obs(true);
  obs.memmap_(dir.string());
  REQUIRE(obs.is_locked());
  REQUIRE(obs.task == "run");
  obs.reward.fill_(9);
  obs.agent.vel.fill_(-1);
  const Observation back = Observation::load_memmap(dir.string());
  REQUIRE(same(back.reward, at::full({2}, 9.0)));
  REQUIRE(same(back.agent.vel, at::full({2, 2}, -1.0)));
  back.pixels.fill_(4);  // zero-copy: reaches the file
  REQUIRE(same(Observation::load_memmap(dir.string()).pixels, at::full({2, 3, 1, 2}, 4, at::kByte)));
}

TEST_CASE("the dynamic loader knows registered tensorclasses") {
  TempDir tmp;
  const fs::path dir = tmp / "obs";
  small_obs(false).memmap(dir.string());
  Observation::register_memmap();  // (load_memmap does this too)
  tensordict::TensorDict td = tensordict::TensorDict::load_memmap(dir.string());
  REQUIRE(td.batch_size() == at::IntArrayRef{2});
  REQUIRE(same(td.get("reward"), iota({2}) + 0.5));
  REQUIRE(same(td.get({"agent", "pos"}), iota({2, 2})));
  REQUIRE(td.get_non_tensor("task") == "run");
  REQUIRE_FALSE(td.contains("depth"));
  // The tensordict form converts back to the class, non-tensor fields included.
  const Observation back = Observation::from_tensordict(td);
  REQUIRE(same(back.pixels, small_obs(false).pixels));
  REQUIRE(back.task == "run");
}

TEST_CASE("load_memmap validates against the schema and names the directory") {
  TempDir tmp;
  const fs::path dir = tmp / "obs";
  const fs::path td_meta = dir / "_tensordict" / "meta.json";
  auto fresh = [&] {
    tensordict::remove_tree(dir);
    small_obs(true).memmap(dir.string());
  };
  auto load = [&] { return message_of([&] { Observation::load_memmap(dir.string()); }); };

  fresh();  // wrong dtype (same item size, so the file still fits)
  edit(td_meta, R"("shape":[2],"dtype":"torch.float32")", R"("shape":[2],"dtype":"torch.int32")");
  CHECK(load() == dir.string() + ": Observation.reward: dtype must be float32 (got int32)");

  fresh();  // wrong feature shape in a nested tensorclass
  edit(dir / "_tensordict" / "agent" / "_tensordict" / "meta.json", R"("pos":{"device":"cpu","shape":[2,2])",
       R"("pos":{"device":"cpu","shape":[2,1])");
  CHECK(load() == dir.string() + ": Observation.agent.pos: dim 1 must be 2 (got 1)");

  fresh();  // a required field missing
  edit(td_meta, R"("reward":{"device":"cpu","shape":[2],"dtype":"torch.float32","is_nested":false},)", "");
  CHECK(load() == dir.string() + ": Observation.reward: required field is not set");

  fresh();  // a non-tensor field of the wrong type
  edit(dir / "meta.json", R"("task":"run")", R"("task":3)");
  CHECK(load() == dir.string() + ": Observation.task: non-tensor field must be a string, got 3");

  fresh();  // a key the class does not have
  edit(dir / "meta.json", R"("task":"run")", R"("task":"run","speed":1)");
  CHECK_THAT(load(), Contains(dir.string()) && Contains("speed") && Contains("is not a field of Observation"));

  fresh();  // another class
  edit(dir / "meta.json", "<class 'tct.Observation'>", "<class 'tct.Named'>");
  CHECK(load() == (dir / "meta.json").string() + " holds a <class 'tct.Named'>, not a tct::Observation " +
                      "(<class 'tct.Observation'>)");

  // Python modules elsewhere: the bare class name is enough.
  fresh();
  edit(dir / "meta.json", "<class 'tct.Observation'>", "<class '__main__.Observation'>");
  require_same(Observation::load_memmap(dir.string()), small_obs(true));
}

TEST_CASE("to_h5 / from_h5 round-trip the tensor and string fields, validated on load") {
  TempDir tmp;
  const std::string path = (tmp / "obs.h5").string();
  Observation obs = small_obs(true);
  obs.task = "pendulum";  // a string field: a string dataset, as tensordict writes it
  obs.tags = {"a", "b"};  // other non-tensor fields at their schema defaults are left out
  obs.scale = 1.0;
  obs.to_h5(path).close();
  const auto file = tensordict::PersistentTensorDict::from_h5(path);
  CHECK(file.get_non_tensor("task") == "pendulum");
  CHECK(!file.contains("tags"));
  // Every field has the same leading dims but h5 keeps no batch size: the
  // schema's shapes say it is [2].
  const Observation back = Observation::from_h5(path);
  require_same(back, obs);
  CHECK(back.task == "pendulum");

  // A non-string field away from its default cannot be stored: refused, not lost.
  Observation unset = small_obs(false);
  CHECK(message_of([&] { unset.to_h5(path); }) ==
        "to_h5: Observation.tags holds ['x', 'y', 'z'], not its default: h5 stores string non-tensor data only (memmap() "
        "stores every field)");
  unset.tags = {"a", "b"};
  unset.scale = 1.0;
  unset.to_h5(path).close();
  REQUIRE_FALSE(Observation::from_h5(path).depth.defined());
  CHECK(Observation::from_h5(path).task == "run");

  tensordict::TensorDict wrong(unset.to_tensordict().exclude({"tags", "scale"}));
  wrong.set("reward", iota({2}, at::kLong));
  wrong.to_h5(path).close();
  CHECK(message_of([&] { Observation::from_h5(path); }) ==
        path + ": Observation.reward: dtype must be float32 (got int64)");
}

TEST_CASE("save / load and is_memmap / saved_path") {
  TempDir tmp;
  const std::string dir = (tmp / "obs").string();
  const Observation obs = small_obs(true);
  CHECK(!obs.is_memmap());
  CHECK(!obs.saved_path());
  const Observation saved = obs.save(dir);
  CHECK(saved.is_memmap());
  CHECK(saved.saved_path() == dir);
  CHECK(saved.is_locked());
  const Observation loaded = Observation::load(dir);
  require_same(loaded, obs);
  CHECK(loaded.is_memmap());
  CHECK(loaded.saved_path() == dir);
  // What ops derive is not memory-mapped there (as for a TensorDict).
  CHECK(!loaded.index({0}).is_memmap());
  CHECK(!loaded.clone().is_memmap());
  Observation in_place = small_obs(true);
  in_place.memmap_((tmp / "in_place").string());
  CHECK(in_place.saved_path() == (tmp / "in_place").string());
}

TEST_CASE("load_memmap refuses an int field whose meta.json value is no int64") {
  // nlohmann's conversion cast 1e30 to INT64_MIN, 2^64-1 to -1 and 5.5 to 5.
  TempDir tmp;
  const fs::path dir = tmp / "seq";
  const tc::seq::SequenceBatch batch({.tokens = at::zeros({2, 3}, at::kLong),
                                      .mask = at::ones({2, 3}, at::kBool),
                                      .lengths = at::full({2}, 3, at::kLong),
                                      .pad_id = 7},
                                     {2});
  const std::string written = R"("pad_id":7)";
  for (const std::string bad : {"1e30", "18446744073709551615", "9223372036854775808", "5.5", "true", "\"7\""}) {
    tensordict::remove_tree(dir);
    batch.memmap(dir.string());
    edit(dir / "meta.json", written, R"("pad_id":)" + bad);
    const std::string shown = bad == "1e30" ? "1e+30" : bad;
    CHECK(message_of([&] { tc::seq::SequenceBatch::load_memmap(dir.string()); }) ==
          dir.string() + ": SequenceBatch.pad_id: non-tensor field must be an int in int64's range, got " + shown);
  }
  // The extremes of int64 load as written.
  for (const std::string good : {"9223372036854775807", "-9223372036854775808"}) {
    tensordict::remove_tree(dir);
    batch.memmap(dir.string());
    edit(dir / "meta.json", written, R"("pad_id":)" + good);
    CHECK(std::to_string(tc::seq::SequenceBatch::load_memmap(dir.string()).pad_id) == good);
  }
}

TEST_CASE("tensorclass: save and load a .tdz archive, as tensordict's tensorclass does",
          "[persist][archive][test_methods.py::TestMemmapArchive::test_archive_explicit_flag]") {
  TempDir tmp;
  const Observation obs = small_obs(true);
  const std::string archive = (tmp.path() / "obs.tdz").string();
  const Observation saved = obs.save(archive);
  CHECK(fs::is_regular_file(archive));
  CHECK(tensordict::is_memmap_archive(archive));
  require_same(saved, obs);
  // Neither memory-mapped nor locked, as tensordict's tensorclass from an archive.
  CHECK(!saved.is_memmap());
  const Observation loaded = Observation::load(archive);
  CHECK(!loaded.is_memmap());
  require_same(loaded, obs);
  // The dynamic reader sees the same tree; deflated, too.
  obs.memmap((tmp.path() / "obs_z.tdz").string(), {.compression = tensordict::ArchiveCompression::Deflate});
  require_same(Observation::load_memmap((tmp.path() / "obs_z.tdz").string()), obs);
  CHECK(same(tensordict::TensorDict::load_memmap(archive).get("reward"), obs.reward));
}
