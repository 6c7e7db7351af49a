// consolidate({.filename}) / from_consolidated: tensordict's consolidated
// file, written and read here, read from a file Python tensordict wrote, and
// refused with a clear message when it is damaged or hostile;
// consolidate({.share_memory}).
#include <ATen/ATen.h>
#include <nlohmann/json.hpp>
#include <ATen/MapAllocator.h>
#include <catch2/catch.hpp>
#include <sys/mman.h>
#include <tensordict/tensordict.h>

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <fstream>
#include <string>

#include "helpers.h"
#include "persist_helpers.h"

using Catch::Matchers::Contains;
using tensordict::ConsolidateOptions;
using tensordict::Json;
using tensordict::NestedKey;
using tensordict::NonTensorData;
using tensordict::TensorDict;
using namespace td_test;

namespace {

std::string read_bytes(const fs::path& file) {
  std::ifstream in(file, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
}

void write_bytes(const fs::path& file, const std::string& bytes) {
  std::ofstream(file, std::ios::binary | std::ios::trunc).write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
}

std::string length_field(uint64_t n) {
  std::string out(8, '\0');
  for (auto& byte : out) {
    byte = static_cast<char>(n & 0xff);
    n >>= 8;
  }
  return out;
}

// A consolidated file: `data`, then `metadata`, then its length.
void write_consolidated(const fs::path& file, const std::string& data, const std::string& metadata) {
  write_bytes(file, data + metadata + length_field(metadata.size()));
}

// The parts of a consolidated file: its data bytes and its metadata.
struct Parts {
  std::string data;
  Json metadata;
};
Parts parts_of(const fs::path& file) {
  const std::string bytes = read_bytes(file);
  REQUIRE(bytes.size() >= 8);
  uint64_t n = 0;
  for (int i = 7; i >= 0; --i) n = (n << 8) | static_cast<unsigned char>(bytes[bytes.size() - 8 + static_cast<std::size_t>(i)]);
  REQUIRE(n <= bytes.size() - 8);
  const std::size_t data = bytes.size() - 8 - n;
  return {bytes.substr(0, data), Json::parse(bytes.substr(data, n))};
}

// The tensordict of the fixture consolidated/td.bin, which Python tensordict
// 0.15.3 wrote with:
//   td = TensorDict(a=torch.arange(6, dtype=torch.float32).reshape(3, 2),
//                   b={"c": torch.tensor([1, 2, 3], dtype=torch.uint8),
//                      "d": {"e": torch.tensor([[0.5], [1.5], [2.5]], dtype=torch.float64)}},
//                   batch_size=[3], names=["t"])
//   td["txt"] = "hello"; td["b", "num"] = NonTensorData(42, batch_size=[3])
//   td["s"] = NonTensorStack("x", "y", "z")
//   td.consolidate(filename="td.bin")
TensorDict fixture_td() {
  TensorDict td({{"a", at::arange(6, at::kFloat).reshape({3, 2})}}, {3});
  td.set({"b", "c"}, at::tensor({1, 2, 3}, at::kByte));
  td.set({"b", "d", "e"}, at::tensor({0.5, 1.5, 2.5}, at::kDouble).reshape({3, 1}));
  td.set_non_tensor("txt", "hello");
  td.set_non_tensor({"b", "num"}, 42);
  td.set("s", tensordict::Value(NonTensorData::stack({"x", "y", "z"}, {3})));
  td.rename_(tensordict::Names{"t"});
  return td;
}

// The same entries, whatever their order: tensordict's reader puts a level's
// non-tensor data first, then its leaves, then its nested levels.
void require_same_content(const TensorDict& a, const TensorDict& b) {
  auto keys = a.keys({.include_nested = true});
  auto others = b.keys({.include_nested = true});
  const auto by_repr = [](const NestedKey& x, const NestedKey& y) { return x.repr() < y.repr(); };
  std::sort(keys.begin(), keys.end(), by_repr);
  std::sort(others.begin(), others.end(), by_repr);
  REQUIRE(keys == others);
  REQUIRE(a.batch_size() == b.batch_size());
  for (const auto& key : keys) {
    INFO("key " << key.repr());
    require_same_entry(*a.get_value(key), *b.get_value(key));
  }
}

fs::path fixture_file() { return fixtures_dir() / "consolidated" / "td.bin"; }

// A one-leaf file: x = float32 [4] (16 bytes), and its metadata.
const std::string kData(16, '\0');
Json one_leaf_meta() {
  return Json::parse(R"({"cls": "TensorDict", "non_tensors": {}, "leaves": {"x": ["torch.float32", [4], 0, 16, 0]},
                         "cls_metadata": {"device": null, "names": [null], "batch_size": [4], "is_locked": false}})");
}

std::string read_error(const fs::path& file) { return TD_MESSAGE(TensorDict::from_consolidated(file.string())); }

// The error of reading a one-leaf file whose metadata is `meta`.
std::string error_with(const TempDir& tmp, const Json& meta) {
  const fs::path file = tmp / "bad.bin";
  write_consolidated(file, kData, meta.dump());
  return read_error(file);
}

}  // namespace

TEST_CASE("consolidate to a file: views of a shared mapping, read back by from_consolidated",
          "[consolidate][test_tensordict.py::TestGeneric::test_consolidate]") {
  TempDir tmp;
  const fs::path file = tmp / "file.mmap";
  TensorDict td({{"a", at::arange(4, at::kLong).reshape({2, 2})}}, {2}, at::Device(at::kCPU));
  td.set({"b", "c"}, at::arange(2, at::kDouble) + 0.25);
  td.set_non_tensor("d", "a string!");
  const TensorDict td_c = td.consolidate({.filename = file.string()});
  REQUIRE(td_c.device() == at::Device(at::kCPU));
  REQUIRE(td_c.is_consolidated());
  REQUIRE(td_c.is_locked());
  REQUIRE(td_c.get_non_tensor("d") == "a string!");
  require_same_entries(td_c, td);

  const TensorDict loaded = TensorDict::from_consolidated(file.string());
  require_same_content(loaded, td_c);
  REQUIRE(loaded.is_consolidated());
  REQUIRE_FALSE(loaded.is_locked());  // tensordict: the file records the source's lock state
  REQUIRE(loaded.device() == at::Device(at::kCPU));
  REQUIRE(tensordict::from_consolidated(file.string()).get_non_tensor("d") == "a string!");

  // The storage is the file: writes into it reach the file.
  td_c.consolidated_storage()->mul_(0);
  REQUIRE(at::equal(tensordict::from_consolidated(file.string()).get("a"), at::zeros({2, 2}, at::kLong)));
  REQUIRE_FALSE(at::equal(td_c.get("a"), td.get("a")));
  // The leaves of from_consolidated are copy-on-write: writes stay in memory.
  TensorDict again = TensorDict::from_consolidated(file.string());
  again.get("a").fill_(7);
  REQUIRE(at::equal(TensorDict::from_consolidated(file.string()).get("a"), at::zeros({2, 2}, at::kLong)));
}

TEST_CASE("a consolidated file holds the data, the metadata, then its length, as tensordict writes them",
          "[consolidate][test_tensordict.py::TestGeneric::test_consolidate]") {
  TempDir tmp;
  const fs::path file = tmp / "td.bin";
  fixture_td().consolidate({.filename = file.string()});
  const Parts written = parts_of(file);
  const Parts python = parts_of(fixture_file());
  REQUIRE(written.data == python.data);  // every leaf at tensordict's offset, padded with zeros
  REQUIRE(written.metadata == python.metadata);
  // Nothing but the file: the temporary it was written under is gone.
  REQUIRE(tree_of(tmp.path()) == std::vector<std::string>{"td.bin"});
}

TEST_CASE("from_consolidated reads a file Python tensordict wrote",
          "[consolidate][test_tensordict.py::TestGeneric::test_consolidate]") {
  const TensorDict loaded = TensorDict::from_consolidated(fixture_file().string());
  const TensorDict expected = fixture_td();
  require_same_content(loaded, expected);
  // In tensordict's order (list(TensorDict.from_consolidated(...).keys(True)) in tensordict 0.15.3):
  REQUIRE(loaded.keys({.include_nested = true}) ==
          std::vector<NestedKey>{"txt", "a", {"b", "num"}, {"b", "c"}, {"b", "d", "e"}, {"b", "d"}, "b", "s"});
  REQUIRE((loaded.names() == expected.names()));
  REQUIRE((loaded.get_td("b").names() == tensordict::Names{"t"}));
  REQUIRE(loaded.get_non_tensor({"b", "num"}) == 42);
  REQUIRE(loaded.get_value("s")->non_tensor().data() == Json::array({"x", "y", "z"}));
  REQUIRE(loaded.is_consolidated());
  // Every leaf a view of the one storage, at the offset the file gives.
  const at::Tensor storage = *loaded.consolidated_storage();
  REQUIRE(storage.numel() == 56);
  REQUIRE(loaded.get({"b", "d", "e"}).storage_offset() * 8 == 32);
}

TEST_CASE("consolidate to a file of a lazy stack, nested levels and zero-element leaves round trips",
          "[consolidate][test_tensordict.py::TestLazyStackedTensorDict::test_consolidate]") {
  TempDir tmp;
  TensorDict base({{"a", at::arange(3, at::kLong).expand({1, 3}).clone()}}, {1, 3});
  base.set({"b", "c"}, at::arange(3, at::kDouble).expand({1, 3}).clone());
  base.set("empty", at::zeros({1, 3, 0}, at::kHalf));
  const auto lazy = tensordict::lazy_stack(base.unbind(1), 1);
  const TensorDict td_c = lazy.consolidate({.filename = (tmp / "file.mmap").string()});
  require_same_entries(td_c, TensorDict(lazy.contiguous()));
  require_same_content(TensorDict::from_consolidated((tmp / "file.mmap").string()), td_c);

  // A lazy stack kept as one (nested in a dense tensordict) comes back as one.
  TensorDict outer({{"x", at::ones({2})}}, {2});
  outer.set("lazy", tensordict::lazy_stack({TensorDict({{"y", at::ones({3})}}, {3}),
                                            TensorDict({{"y", at::zeros({3})}, {"z", at::ones({3, 2})}}, {3})},
                                           0));
  const fs::path file = tmp / "outer.bin";
  const TensorDict written = outer.consolidate({.filename = file.string()});
  const TensorDict loaded = TensorDict::from_consolidated(file.string());
  REQUIRE(loaded.get_td("lazy").kind() == written.get_td("lazy").kind());
  REQUIRE(at::equal(loaded.get({"lazy", "y"}), outer.get({"lazy", "y"})));
}

TEST_CASE("consolidate to a file replaces the file whole, and the old mapping keeps its data", "[consolidate]") {
  TempDir tmp;
  const fs::path file = tmp / "td.bin";
  const TensorDict first = TensorDict({{"x", at::ones({4})}}, {4}).consolidate({.filename = file.string()});
  // Already consolidated: a filename is honoured (a new file), here the same path.
  const TensorDict second = TensorDict({{"x", at::full({2}, 3.0)}}, {2}).consolidate({.filename = file.string()});
  REQUIRE(at::equal(first.get("x"), at::ones({4})));
  REQUIRE(at::equal(TensorDict::from_consolidated(file.string()).get("x"), at::full({2}, 3.0)));
  const TensorDict copy = second.consolidate({.filename = (tmp / "copy.bin").string()});
  REQUIRE(copy.consolidated_storage()->data_ptr() != second.consolidated_storage()->data_ptr());
  REQUIRE(at::equal(TensorDict::from_consolidated((tmp / "copy.bin").string()).get("x"), at::full({2}, 3.0)));
}

TEST_CASE("memmap of a tensordict over a consolidated file writes an ordinary tree", "[consolidate]") {
  TempDir tmp;
  const TensorDict td = sample({3});
  const TensorDict written = td.consolidate({.filename = (tmp / "td.bin").string()});
  const TensorDict read = TensorDict::from_consolidated((tmp / "td.bin").string());
  for (const auto& [name, source] : {std::pair{"written", written}, std::pair{"read", read}}) {
    INFO(name);
    const fs::path dir = tmp / name;
    source.memmap(dir.string());
    require_same_entries(TensorDict::load_memmap(dir.string()), td);
    REQUIRE(fs::file_size(dir / "a.memmap") == 3 * 4 * 4);
  }
  // memmap_() without a place moves the leaves into shared memory of their own.
  TensorDict moved = TensorDict::from_consolidated((tmp / "td.bin").string());
  moved.memmap_();
  REQUIRE_FALSE(moved.is_consolidated());
  require_same_entries(moved, td);
}

TEST_CASE("an empty tensordict consolidates to a file of metadata only", "[consolidate]") {
  TempDir tmp;
  const fs::path file = tmp / "empty.bin";
  TensorDict({}, {2}).consolidate({.filename = file.string()});
  const Parts parts = parts_of(file);
  REQUIRE(parts.data.empty());
  // tensordict 0.15.3 writes for TensorDict(batch_size=[2]).consolidate(filename=...):
  REQUIRE(parts.metadata == Json::parse(R"({"cls": "TensorDict", "non_tensors": {}, "leaves": {}, "cls_metadata":
      {"device": null, "names": [null], "batch_size": [2], "is_locked": false}})"));
  const TensorDict loaded = TensorDict::from_consolidated(file.string());
  REQUIRE(loaded.batch_size() == at::IntArrayRef{2});
  REQUIRE(loaded.num_keys() == 0);
}

TEST_CASE("consolidate to a file refuses what it cannot write, and leaves no file behind", "[consolidate]") {
  TempDir tmp;
  const fs::path file = tmp / "td.bin";
  SECTION("a device other than the CPU") {
    REQUIRE_THAT(TD_MESSAGE(sample({2}).consolidate({.device = at::Device(at::kCUDA, 0), .filename = file.string()})),
                 Contains("device and filename are mutually exclusive arguments") && Contains("cuda:0"));
  }
  SECTION("pinned memory") {
    REQUIRE_THAT(TD_MESSAGE(sample({2}).consolidate({.pin_memory = true, .filename = file.string()})),
                 Contains("pin_memory=true and a filename are exclusive"));
  }
  SECTION("a nested level named as a field of the metadata") {
    TensorDict td = sample({2});
    td.set({"n", "leaves", "x"}, at::ones({2}));
    const auto message = TD_MESSAGE(td.consolidate({.filename = file.string()}));
    REQUIRE_THAT(message, Contains("key ('n', 'leaves') cannot be written to a consolidated file") &&
                              Contains("\"leaves\" field"));
    REQUIRE_THROWS_AS(td.consolidate({.filename = file.string()}), tensordict::ValueError);
  }
  SECTION("a directory that does not exist") {
    const fs::path missing = tmp / "missing" / "td.bin";
    REQUIRE_THAT(TD_MESSAGE(sample({2}).consolidate({.filename = missing.string()})),
                 Contains("cannot write " + missing.string()) && Contains("No such file or directory"));
  }
  SECTION("a symbolic link") {
    write_text(tmp / "target", "keep");
    fs::create_symlink(tmp / "target", file);
    REQUIRE_THAT(TD_MESSAGE(sample({2}).consolidate({.filename = file.string()})),
                 Contains("refusing to write through the symbolic link " + file.string()));
    REQUIRE(read_text(tmp / "target") == "keep");
    fs::remove(file);
  }
  REQUIRE(tree_of(tmp.path()).size() <= 1);  // at most the symlink's target: no temporary, no partial file
  REQUIRE_FALSE(fs::exists(fs::symlink_status(file)));
}

TEST_CASE("consolidate with share_memory puts the storage in shared memory another mapping sees", "[consolidate]") {
  const TensorDict td = sample({3});
  const TensorDict shared = td.consolidate({.share_memory = true});
  REQUIRE(shared.is_consolidated());
  require_same_entries(shared, td);
  const at::Tensor storage = *shared.consolidated_storage();
  auto* allocator = at::MapAllocator::fromDataPtr(storage.storage().data_ptr());
  REQUIRE(allocator != nullptr);
  REQUIRE(allocator->fd() >= 0);
  // A second mapping of its descriptor (what another process gets) is the same memory.
  const auto bytes = static_cast<std::size_t>(storage.numel());
  void* other = ::mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_SHARED, allocator->fd(), 0);
  REQUIRE(other != MAP_FAILED);
  std::memset(other, 0, bytes);
  REQUIRE(at::equal(shared.get("a"), at::zeros_like(td.get("a"))));
  ::munmap(other, bytes);
  // Already in shared memory: itself; a storage in ordinary memory is copied into shared memory.
  REQUIRE(shared.consolidate({.share_memory = true}).impl() == shared.impl());
  const TensorDict plain = td.consolidate();
  const TensorDict moved = plain.consolidate({.share_memory = true});
  REQUIRE(at::MapAllocator::fromDataPtr(moved.consolidated_storage()->storage().data_ptr()) != nullptr);
  require_same_entries(moved, td);
  REQUIRE_THAT(TD_MESSAGE(td.consolidate({.pin_memory = true, .share_memory = true})),
               Contains("pin_memory=true and share_memory=true are exclusive"));
}

// ---- damaged and hostile files ---------------------------------------------------

TEST_CASE("from_consolidated: a file too short for its length field", "[consolidate][hostile]") {
  TempDir tmp;
  write_bytes(tmp / "short.bin", "abc");
  const auto message = read_error(tmp / "short.bin");
  REQUIRE_THAT(message, Contains("cannot read the consolidated file " + (tmp / "short.bin").string()) &&
                            Contains("it has 3 bytes, fewer than the 8 of the metadata length"));
  REQUIRE_THROWS_AS(TensorDict::from_consolidated((tmp / "short.bin").string()), tensordict::RuntimeError);
}

TEST_CASE("from_consolidated: a metadata length beyond the file", "[consolidate][hostile]") {
  TempDir tmp;
  const fs::path file = tmp / "td.bin";
  TensorDict({{"x", at::ones({4})}}, {4}).consolidate({.filename = file.string()});
  // Cut the file: the length field now counts more bytes than precede it.
  std::string bytes = read_bytes(file);
  write_bytes(file, bytes.substr(0, 4) + bytes.substr(bytes.size() - 8));
  REQUIRE_THAT(read_error(file), Contains(file.string()) && Contains("a metadata length of") &&
                                     Contains("but only 4 bytes precede them"));
  // A negative length (the top bit set) is as far beyond the file.
  write_bytes(file, "{}" + std::string(7, '\0') + '\x80');
  REQUIRE_THAT(read_error(file), Contains("but only 2 bytes precede them"));
}

TEST_CASE("from_consolidated: not a consolidated file at all", "[consolidate][hostile]") {
  TempDir tmp;
  SECTION("garbage JSON") {
    const fs::path file = tmp / "bad.bin";
    write_consolidated(file, kData, "{\"cls\": ");
    REQUIRE_THAT(read_error(file), Contains("malformed JSON in " + file.string()));
  }
  SECTION("JSON that is not an object") {
    const fs::path file = tmp / "bad.bin";
    write_consolidated(file, kData, "[1, 2]");
    REQUIRE_THAT(read_error(file), Contains(file.string()) && Contains("its metadata must be a JSON object, got array"));
  }
  SECTION("a missing file") {
    REQUIRE_THAT(read_error(tmp / "nope.bin"),
                 Contains("cannot read the consolidated file " + (tmp / "nope.bin").string()) &&
                     Contains("No such file or directory"));
  }
  SECTION("a directory") {
    REQUIRE_THAT(read_error(tmp.path()), Contains(tmp.path().string()) && Contains("not a regular file"));
  }
  SECTION("JSON nested without end") {
    std::string deep;
    for (int i = 0; i < 600; ++i) deep += "{\"a\": ";
    deep += "1";
    for (int i = 0; i < 600; ++i) deep += "}";
    const fs::path file = tmp / "deep.bin";
    write_consolidated(file, kData, deep);
    REQUIRE_THAT(read_error(file), Contains(file.string()) && Contains("nested more than 512 levels deep"));
  }
}

TEST_CASE("from_consolidated: leaves outside the data, of a wrong size or misaligned", "[consolidate][hostile]") {
  TempDir tmp;
  const fs::path file = (tmp / "bad.bin");
  Json meta = one_leaf_meta();
  REQUIRE(at::equal(TensorDict::from_consolidated((write_consolidated(file, kData, meta.dump()), file).string()).get("x"),
                    at::zeros({4})));
  // (leaf, a batch size of [] instead of [4], what the message says)
  struct Case {
    const char* what;
    const char* leaf;
    bool unbatched;
    std::string message;
  };
  const Case cases[] = {
      {"beyond the data", R"(["torch.float32", [4], 8, 24, 0])", false,
       "leaf 'x' spans bytes 8..24, outside the file's 16 bytes of data"},
      {"a negative start", R"(["torch.float32", [4], -16, 0, 0])", false, "leaf 'x' spans bytes -16..0"},
      {"an offset past int64", R"(["torch.float32", [4], 18446744073709551615, 16, 0])", false,
       "the start of leaf 'x' must be an integer, got 18446744073709551615"},
      {"a range that does not fit the shape", R"(["torch.float32", [3], 0, 16, 0])", true,
       "leaf 'x' spans bytes 0..16 with padding 0, but shape [3] of Float needs 12 bytes"},
      {"a shape too large for any file", R"(["torch.float32", [4, 9223372036854775807], 0, 16, 0])", false,
       "shape [4, 9223372036854775807] is too large"},
      {"a start that is not a multiple of the element size", R"(["torch.float32", [2], 2, 10, 0])", true,
       "leaf 'x' starts at byte 2, not a multiple of the 4 bytes of Float"},
      {"a negative dim", R"(["torch.float32", [4, -1], 0, 16, 0])", false,
       "the shape of leaf 'x' must be a list of non-negative sizes"},
      {"an unknown dtype", R"(["torch.float33", [4], 0, 16, 0])", false,
       "leaf 'x' has unknown dtype \"torch.float33\" (expected one of"},
      {"a leaf that is not a list of five", R"(["torch.float32", [4], 0, 16])", false,
       "leaf 'x' must be [dtype, shape, start, stop, pad]"},
      {"a shape that does not start with the batch size", R"(["torch.float32", [2, 2], 0, 16, 0])", false,
       "leaf 'x' has shape [2, 2], which does not start with the batch size [4]"},
  };
  for (const auto& c : cases) {
    DYNAMIC_SECTION(c.what) {
      if (c.unbatched) {
        meta["cls_metadata"]["batch_size"] = Json::array();
        meta["cls_metadata"]["names"] = Json::array();
      }
      meta["leaves"]["x"] = Json::parse(c.leaf);
      REQUIRE_THAT(error_with(tmp, meta), Contains(file.string()) && Contains(c.message));
    }
  }
  SECTION("part of a jagged nested tensor") {
    meta["leaves"] = Json::parse(R"({"<NJT_VALUES>x": ["torch.float32", [4], 0, 16, 0]})");
    const auto message = error_with(tmp, meta);
    REQUIRE_THAT(message, Contains(file.string()) && Contains("leaf '<NJT_VALUES>x' is part of a jagged nested tensor"));
    REQUIRE_THROWS_AS(TensorDict::from_consolidated(file.string()), tensordict::NotImplementedError);
  }
}

TEST_CASE("from_consolidated: levels without their fields, or with wrong ones", "[consolidate][hostile]") {
  TempDir tmp;
  Json meta = one_leaf_meta();
  SECTION("no leaves") {
    meta.erase("leaves");
    REQUIRE_THAT(error_with(tmp, meta), Contains("the top level: no \"leaves\" field"));
  }
  SECTION("an unknown class") {
    meta["cls"] = "Pickle";
    REQUIRE_THAT(error_with(tmp, meta), Contains("unknown \"cls\" \"Pickle\""));
  }
  SECTION("a wrong number of names") {
    meta["cls_metadata"]["names"] = Json::array({"a", "b"});
    REQUIRE_THAT(error_with(tmp, meta),
                 Contains("the top level's \"names\" must list one name (a string or null) per batch dim (1)"));
  }
  SECTION("a negative batch size") {
    meta["cls_metadata"]["batch_size"] = Json::array({-4});
    REQUIRE_THAT(error_with(tmp, meta), Contains("the top level's \"batch_size\" must be a list of non-negative sizes"));
  }
  SECTION("an unknown device") {
    meta["cls_metadata"]["device"] = "abacus";
    REQUIRE_THAT(error_with(tmp, meta), Contains("\"device\" must be null or a device such as \"cpu\", got \"abacus\""));
  }
  SECTION("a level on an accelerator: read on the CPU, then moved there in one block") {
    meta["cls_metadata"]["device"] = "cuda:0";
    const fs::path file = tmp / "bad.bin";
    write_consolidated(file, kData, meta.dump());
    if (!at::hasCUDA()) {
      REQUIRE_THAT(read_error(file), Contains("consolidated file " + file.string()) &&
                                         Contains("to failed for the storage its leaves share"));
      return;
    }
    const TensorDict loaded = TensorDict::from_consolidated(file.string());
    REQUIRE(loaded.device() == at::Device(at::kCUDA, 0));
    REQUIRE(loaded.is_consolidated());
    REQUIRE(at::equal(loaded.get("x").cpu(), at::zeros({4})));
  }
  SECTION("a locked tensorclass: read as a locked TensorDict naming its class") {
    meta["cls"] = "<class '__main__.Obs'>";
    meta["cls_metadata"]["is_locked"] = true;
    const fs::path file = tmp / "tc.bin";
    write_consolidated(file, kData, meta.dump());
    const TensorDict loaded = TensorDict::from_consolidated(file.string());
    REQUIRE(loaded.is_locked());
    REQUIRE(loaded.get_non_tensor(std::string(tensordict::kLoadedClassKey)) == "<class '__main__.Obs'>");
    meta["non_tensors"]["__class__"] = Json::array({"x", Json::array({4}), nullptr});
    REQUIRE_THAT(error_with(tmp, meta), Contains("the tensorclass <class '__main__.Obs'> has a field named '__class__'"));
  }
  SECTION("a nested level that is not an object") {
    meta["child"] = 3;
    REQUIRE_THAT(error_with(tmp, meta), Contains("level 'child': expected a level (a JSON object), got number"));
  }
  SECTION("a nested level whose batch size does not start with its parent's") {
    meta["child"] = one_leaf_meta();
    meta["child"]["cls_metadata"]["batch_size"] = Json::array({3});
    meta["child"]["cls_metadata"]["names"] = Json::array({nullptr});
    meta["child"]["leaves"] = Json::object();
    REQUIRE_THAT(error_with(tmp, meta), Contains("the batch size [3] of key 'child' does not start with the level's [4]"));
  }
  SECTION("a key twice") {
    meta["non_tensors"]["x"] = Json::array({"text", Json::array({4}), nullptr});
    REQUIRE_THAT(error_with(tmp, meta), Contains("key 'x' appears twice"));
  }
  SECTION("a lazy stack without members") {
    meta = Json::parse(R"({"cls": "LazyStackedTensorDict", "non_tensors": {}, "leaves": {},
                           "cls_metadata": {"stack_dim": 0, "stack_dim_name": null, "is_locked": false}})");
    REQUIRE_THAT(error_with(tmp, meta), Contains("a LazyStackedTensorDict needs members"));
  }
  SECTION("a lazy stack whose stack_dim is out of range") {
    meta = Json::parse(R"({"cls": "LazyStackedTensorDict", "non_tensors": {}, "leaves": {},
                           "cls_metadata": {"stack_dim": 5, "stack_dim_name": null, "is_locked": false}})");
    meta["0"] = one_leaf_meta();
    REQUIRE_THAT(error_with(tmp, meta), Contains("\"stack_dim\" 5 is out of range for members with 1 batch dims"));
  }
  SECTION("a NonTensorStack of irregular members") {
    meta["s"] = Json::parse(R"({"cls": "NonTensorStack", "non_tensors": {"0": ["a", [], null]}, "leaves": {},
                                "cls_metadata": {"stack_dim": 0}})");
    meta["s"]["1"] = meta["s"];
    REQUIRE_THAT(error_with(tmp, meta), Contains("level 's'") && Contains("all values or all NonTensorStacks"));
  }
  SECTION("nested levels without end") {
    Json deep = one_leaf_meta();
    deep["leaves"] = Json::object();
    for (int i = 0; i < 300; ++i) {
      Json up = one_leaf_meta();
      up["leaves"] = Json::object();
      up["n"] = std::move(deep);
      deep = std::move(up);
    }
    REQUIRE_THAT(error_with(tmp, deep), Contains("consolidated file " + (tmp / "bad.bin").string()) &&
                                            Contains("nested more than 256 levels deep"));
  }
}
