// Memmap persistence: tensordict's on-disk layout, both ways.
#include <fmt/ranges.h>
#include <nlohmann/json.hpp>

#include "persist_helpers.h"

using namespace tensordict;
using namespace td_test;
using Catch::Matchers::Contains;

namespace {

// Same keys in the same order, batch sizes, dtypes, shapes and values.
// Nested, non-tensor (one value and a stack), zero-element, bool, bfloat16 and
// keys that need encoding.
TensorDict rich() {
  TensorDict td({{"obs", iota({3, 4})},
                 {"done", mask({1, 0, 1})},
                 {"half", iota({3, 2}, at::kBFloat16)},
                 {"empty", at::zeros({3, 0}, at::kLong)},
                 {"a/b c%", iota({3}, at::kDouble)},
                 {"..", iota({3}, at::kInt)},
                 {"nested", TensorDict({{"x", iota({3, 2, 2}, at::kShort)}, {"", iota({3, 2}, at::kByte)}}, {3, 2})}},
                {3});
  td.set_non_tensor("name", "hello");
  td.set(".", TensorDict({{"c", iota({3}, at::kComplexFloat)}}, {3}));
  td.set("stack", Value(NonTensorData::stack({"a", "b", "c"}, {3})));
  return td;
}

int64_t bytes_of(const fs::path& p) { return static_cast<int64_t>(fs::file_size(p)); }

}  // namespace

TEST_CASE("the repr of a loaded memmap tree matches tensordict's, MemoryMappedTensor in the detailed form") {
  // tensordict 0.15.3 printing TensorDict.load_memmap of the same fixture (run in the test venv)
  const TensorDict td = TensorDict::load_memmap((fixtures_dir() / "mmap_example").string());
  CHECK(repr(td) ==
        "TensorDict(batch_size=[2,1], device=cpu, fields={\n"
        "    nested: {bfloat16: bf16[], int64: i64[], string: list}})");
  set_printoptions detailed({.compact = false});
  CHECK(repr(td) ==
        "TensorDict(\n"
        "    fields={\n"
        "        nested: TensorDict(\n"
        "            fields={\n"
        "                bfloat16: MemoryMappedTensor(shape=torch.Size([2, 1]), device=cpu, dtype=torch.bfloat16, is_shared=True),\n"
        "                int64: MemoryMappedTensor(shape=torch.Size([2, 1]), device=cpu, dtype=torch.int64, is_shared=True),\n"
        "                string: NonTensorData(data=['a string!'], batch_size=torch.Size([2, 1]), device=cpu)},\n"
        "            batch_size=torch.Size([2, 1]),\n"
        "            device=cpu,\n"
        "            is_shared=False)},\n"
        "    batch_size=torch.Size([2, 1]),\n"
        "    device=cpu,\n"
        "    is_shared=False)");
  // an index of it is no longer memory-mapped here (docs/differences.md, "The runtime")
  CHECK_THAT(repr(td.index({0})), Contains("bfloat16: Tensor(shape=torch.Size([1]), device=cpu, dtype=torch.bfloat16, is_shared=False)"));
}

TEST_CASE("the Python tensordict fixture loads with its keys, dtypes, shapes and values") {
  const fs::path dir = fixtures_dir() / "mmap_example";
  TensorDict td = TensorDict::load_memmap(dir.string());
  REQUIRE(td.batch_size() == at::IntArrayRef{2, 1});
  REQUIRE(td.device() == at::Device(at::kCPU));
  REQUIRE(td.keys({.include_nested = true}) ==
          std::vector<NestedKey>{{"nested", "int64"}, {"nested", "string"}, {"nested", "bfloat16"}, "nested"});
  REQUIRE(td.get_td("nested").batch_size() == at::IntArrayRef{2, 1});
  at::Tensor i64 = td.get({"nested", "int64"});
  REQUIRE(i64.scalar_type() == at::kLong);
  REQUIRE(i64.sizes() == at::IntArrayRef{2, 1});
  REQUIRE(at::equal(i64, at::tensor({1, 2}, at::kLong).reshape({2, 1})));
  at::Tensor bf = td.get({"nested", "bfloat16"});
  REQUIRE(bf.scalar_type() == at::kBFloat16);
  REQUIRE(bf.sizes() == at::IntArrayRef{2, 1});
  REQUIRE(at::equal(bf, at::ones({2, 1}, at::kBFloat16)));
  // Python wrote the value as a one-element list; it loads as that value.
  REQUIRE(td.get_non_tensor({"nested", "string"}) == Json::array({"a string!"}));
  REQUIRE(td.is_memmap());
  REQUIRE(fs::path(*td.saved_path()) == fs::absolute(dir));

  // Any level loads alone.
  TensorDict nested = TensorDict::load_memmap((dir / "nested").string());
  REQUIRE(nested.batch_size() == at::IntArrayRef{2, 1});
  REQUIRE(at::equal(nested.get("int64"), i64));
}

TEST_CASE("a read-only tree maps copy-on-write: writes stay in memory") {
  TempDir tmp;
  TensorDict({{"x", iota({4})}}, {4}).memmap(tmp / "ro");
  const fs::path file = tmp.path() / "ro" / "x.memmap";
  fs::permissions(file, fs::perms::owner_read | fs::perms::group_read | fs::perms::others_read);
  TensorDict loaded = TensorDict::load_memmap(tmp / "ro");
  loaded.get("x").fill_(7);
  REQUIRE(at::equal(loaded.get("x"), at::full({4}, 7.0f)));
  REQUIRE(at::equal(TensorDict::load_memmap(tmp / "ro").get("x"), iota({4})));
}

TEST_CASE("memmap round trip keeps nested, non-tensor, zero-element, bool, bfloat16 and encoded keys") {
  TempDir tmp;
  TensorDict td = rich();
  TensorDict mm(td.memmap(tmp / "td"));
  require_same_entries(td, mm);
  REQUIRE(mm.is_memmap());
  REQUIRE(mm.is_locked());
  REQUIRE_FALSE(td.is_memmap());
  REQUIRE_FALSE(td.is_locked());
  REQUIRE(mm.device() == at::Device(at::kCPU));
  TensorDict back = TensorDict::load_memmap(tmp / "td");
  require_same_entries(td, back);
  REQUIRE(back.get_non_tensor("stack") == Json::array({"a", "b", "c"}));
  // File names are encoded; nothing escapes the directory.
  const auto files = tree_of(tmp.path() / "td");
  REQUIRE(std::find(files.begin(), files.end(), "a%2Fb%20c%25.memmap") != files.end());
  REQUIRE(std::find(files.begin(), files.end(), "%2E%2E.memmap") != files.end());
  REQUIRE(std::find(files.begin(), files.end(), "%2E/meta.json") != files.end());
  REQUIRE(std::find(files.begin(), files.end(), "nested/%.memmap") != files.end());
  REQUIRE(std::find(files.begin(), files.end(), "empty.memmap") == files.end());  // zero elements: no file
  REQUIRE(tree_of(tmp.path()).size() == files.size() + 1);
  // Sizes are exactly numel * itemsize.
  REQUIRE(bytes_of(tmp.path() / "td" / "half.memmap") == 3 * 2 * 2);
  REQUIRE(bytes_of(tmp.path() / "td" / "done.memmap") == 3);
}

TEST_CASE("memmap writes tensordict's exact meta.json and raw data bytes") {
  TempDir tmp;
  TensorDict td({{"x", at::tensor({1.0f, 2.0f})},
                 {"flag", mask({0, 1})},
                 {"sub", TensorDict({{"i", at::tensor({7, 8}, at::kShort)}}, {2})}},
                {2});
  td.set_non_tensor("note", "hi");
  td.memmap(tmp / "out");
  const fs::path out = tmp.path() / "out";
  REQUIRE(read_text(out / "meta.json") ==
          R"({"x":{"device":"cpu","shape":[2],"dtype":"torch.float32","is_nested":false},)"
          R"("flag":{"device":"cpu","shape":[2],"dtype":"torch.bool","is_nested":false},)"
          R"("sub":{"type":"TensorDict"},"note":{"type":"NonTensorData"},)"
          R"("shape":[2],"device":"cpu","_type":"<class 'tensordict._td.TensorDict'>"})");
  REQUIRE(read_text(out / "sub" / "meta.json") ==
          R"({"i":{"device":"cpu","shape":[2],"dtype":"torch.int16","is_nested":false},)"
          R"("shape":[2],"device":"cpu","_type":"<class 'tensordict._td.TensorDict'>"})");
  REQUIRE(read_text(out / "note" / "meta.json") ==
          R"({"_type":"<class 'tensordict.tensorclass.NonTensorData'>","data":"hi","_metadata":null})");
  REQUIRE(read_text(out / "x.memmap") == std::string("\x00\x00\x80\x3f\x00\x00\x00\x40", 8));
  REQUIRE(read_text(out / "flag.memmap") == std::string("\x00\x01", 2));
  REQUIRE(read_text(out / "sub" / "i.memmap") == std::string("\x07\x00\x08\x00", 4));
  REQUIRE(tree_of(out) == std::vector<std::string>{"flag.memmap", "meta.json", "note", "note/meta.json", "sub",
                                                   "sub/i.memmap", "sub/meta.json", "x.memmap"});

  TensorDict stacked({{"x", at::zeros({2})}}, {2});
  stacked.set("s", Value(NonTensorData::stack({"a", 1}, {2})));
  stacked.memmap(tmp / "stack");
  REQUIRE(read_text(tmp.path() / "stack" / "s" / "meta.json") ==
          R"({"_type":"<class 'tensordict.tensorclass.NonTensorStack'>","stack_dim":0,"device":null,"data":["a",1]})");
}

TEST_CASE("memmap_ maps the leaves in place and writes reach the files") {
  TempDir tmp;
  TensorDict td = sample({2});
  TensorDict nested = TensorDict(td.get_td("nested"));
  td.memmap_(tmp / "td");
  REQUIRE(td.is_memmap());
  REQUIRE(td.is_locked());
  REQUIRE(nested.is_locked());
  REQUIRE_THAT(TD_MESSAGE(td.set("new", at::zeros({2}))), Contains("locked"));
  REQUIRE(nested.is_memmap());  // the same nested object
  REQUIRE(fs::path(*td.saved_path()) == fs::absolute(tmp.path() / "td"));
  REQUIRE(fs::path(*nested.saved_path()) == fs::absolute(tmp.path() / "td" / "nested"));
  td.get("a").fill_(5);
  td.get({"nested", "c"}).index_put_({0}, -1.0);
  TensorDict loaded = TensorDict::load_memmap(tmp / "td");
  REQUIRE(at::equal(loaded.get("a"), at::full({2, 4}, 5.0f)));
  REQUIRE(loaded.get({"nested", "c"}).index({0}).eq(-1).all().item<bool>());
  // A loaded, writable tree writes through as well.
  loaded.get("b").fill_(42);
  REQUIRE(at::equal(TensorDict::load_memmap(tmp / "td").get("b"), at::full({2}, 42, at::kLong)));
  REQUIRE(at::equal(td.get("b"), at::full({2}, 42, at::kLong)));  // same file, shared mapping
  // memmap_ again at the same place keeps the mappings (nothing is copied).
  td.memmap_(tmp / "td");
  REQUIRE(at::equal(td.get("b"), at::full({2}, 42, at::kLong)));
}

TEST_CASE("memmap_like writes full-size files without copying data") {
  TempDir tmp;
  TensorDict td = sample({3});
  TensorDict like(td.memmap_like(tmp / "like"));
  REQUIRE(like.keys({.include_nested = true}) == td.keys({.include_nested = true}));
  REQUIRE(like.get({"nested", "c"}).sizes() == td.get({"nested", "c"}).sizes());
  REQUIRE(like.get("a").eq(0).all().item<bool>());
  REQUIRE(bytes_of(tmp.path() / "like" / "a.memmap") == 3 * 4 * 4);
  REQUIRE(at::equal(TensorDict::load_memmap(tmp / "like").get("b"), at::zeros({3}, at::kLong)));
}

TEST_CASE("copy_existing, existsok and num_threads follow tensordict") {
  TempDir tmp;
  TensorDict td = sample({2});
  TensorDict first(td.memmap(tmp / "one"));
  REQUIRE_THAT(TD_MESSAGE(first.memmap(tmp / "two")),
               Contains("already memory-mapped to") && Contains("copy_existing=true"));
  MemmapOptions copy;
  copy.copy_existing = true;
  require_same_entries(first.memmap(tmp / "two", copy), td);

  MemmapOptions strict;
  strict.existsok = false;
  REQUIRE_THAT(TD_MESSAGE(td.memmap(tmp / "one", strict)), Contains("already exists") && Contains("a.memmap"));

  std::vector<TensorDict::Entry> entries;
  for (int i = 0; i < 64; ++i) entries.emplace_back("k" + std::to_string(i), iota({4, 8}) + i);
  TensorDict many(entries, {4});
  MemmapOptions threads;
  threads.num_threads = 4;
  many.memmap(tmp / "many", threads);
  require_same_entries(TensorDict::load_memmap(tmp / "many"), many);
}

TEST_CASE("memmap without sync writes the same tree, byte for byte") {
  TempDir tmp;
  TensorDict td = sample({3});
  td.set_non_tensor("label", Json("run"));
  td.memmap(tmp / "synced");
  MemmapOptions unsynced;
  unsynced.sync = false;
  require_same_entries(td.memmap(tmp / "unsynced", unsynced), td);
  const auto files = tree_of(tmp / "synced");
  REQUIRE(tree_of(tmp / "unsynced") == files);
  REQUIRE_THAT(fmt::format("{}", fmt::join(files, " ")), Contains("a.memmap") && Contains("label/meta.json"));
  for (const auto& file : files) {
    if (fs::is_directory(tmp / "synced" / file)) continue;
    INFO(file);
    REQUIRE(read_text(tmp / "synced" / file) == read_text(tmp / "unsynced" / file));
  }
}

TEST_CASE("save/load are memmap/load_memmap, memmap_refresh_ reloads what was written") {
  TempDir tmp;
  TensorDict td = sample({2});
  TensorDict saved(td.save(tmp / "s"));
  require_same_entries(TensorDict::load(tmp / "s"), td);
  // Another writer replaces the tree at the same place.
  TensorDict other({{"z", at::ones({2, 3})}}, {2});
  MemmapOptions copy;
  other.memmap(tmp / "s", copy);
  saved.memmap_refresh_();
  REQUIRE(saved.is_locked());
  REQUIRE(saved.keys() == std::vector<NestedKey>{"z"});
  REQUIRE(at::equal(saved.get("z"), at::ones({2, 3})));
  REQUIRE_THAT(TD_MESSAGE(td.memmap_refresh_()), Contains("not memory-mapped"));
}

TEST_CASE("memmap refuses symlinks and reserved keys, keys never escape the directory") {
  TempDir tmp;
  fs::create_directories(tmp.path() / "elsewhere");
  fs::create_directory_symlink(tmp.path() / "elsewhere", tmp.path() / "link");
  REQUIRE_THAT(TD_MESSAGE(sample({2}).memmap(tmp / "link")), Contains("symbolic link") && Contains("link"));
  fs::create_directories(tmp.path() / "t");
  fs::create_symlink(tmp.path() / "elsewhere" / "a.memmap", tmp.path() / "t" / "a.memmap");
  REQUIRE_THAT(TD_MESSAGE(sample({2}).memmap(tmp / "t")), Contains("symbolic link") && Contains("a.memmap"));
  REQUIRE(fs::is_empty(tmp.path() / "elsewhere"));

  TensorDict reserved({{"shape", at::zeros({2})}}, {2});
  REQUIRE_THAT(TD_MESSAGE(reserved.memmap(tmp / "r")), Contains("'shape'") && Contains("reserved"));

  TensorDict sneaky({{"../../escape", at::zeros({2})}, {"..", TensorDict({{"x", at::zeros({2})}}, {2})}}, {2});
  sneaky.memmap(tmp / "sneaky");
  REQUIRE(tree_of(tmp.path() / "sneaky") == std::vector<std::string>{"%2E%2E", "%2E%2E/meta.json", "%2E%2E/x.memmap",
                                                                     "..%2F..%2Fescape.memmap", "meta.json"});
  require_same_entries(TensorDict::load_memmap(tmp / "sneaky"), sneaky);
}

TEST_CASE("raw (unencoded) file names of older writers are accepted") {
  TempDir tmp;
  TensorDict td({{"a b", iota({2})}, {"sub dir", TensorDict({{"x", iota({2})}}, {2})}}, {2});
  td.memmap(tmp / "old");
  fs::rename(tmp.path() / "old" / "a%20b.memmap", tmp.path() / "old" / "a b.memmap");
  fs::rename(tmp.path() / "old" / "sub%20dir", tmp.path() / "old" / "sub dir");
  require_same_entries(TensorDict::load_memmap(tmp / "old"), td);
}

TEST_CASE("classes the reader does not know load through register_memmap_class") {
  TempDir tmp;
  const fs::path dir = tmp.path() / "obs";
  // A tensorclass level as Python writes it: non-tensor fields in meta.json,
  // tensor fields in _tensordict/.
  TensorDict({{"pixels", iota({2, 3})}}, {2}).memmap((dir / "_tensordict").string());
  write_text(dir / "meta.json", R"({"_type": "<class 'my_module.Obs'>", "task": "walk"})");
  // Unregistered: a TensorDict of the fields, and the class name.
  TensorDict dynamic = TensorDict::load_memmap(dir.string());
  REQUIRE(dynamic.get_non_tensor("__class__") == "<class 'my_module.Obs'>");
  register_memmap_class("Obs", [](const std::string& d, const Json& meta, std::optional<at::Device> device) {
    TensorDict fields = TensorDict::load_memmap(d + "/_tensordict", device);
    fields.unlock_();
    fields.set_non_tensor("task", meta["task"]);
    return Value(fields);
  });
  TensorDict obs = TensorDict::load_memmap(dir.string());  // found by the bare class name
  REQUIRE(obs.get_non_tensor("task") == "walk");
  REQUIRE(at::equal(obs.get("pixels"), iota({2, 3})));
}

TEST_CASE("a tensorclass of a class nobody registered loads as a TensorDict of its fields and its class name") {
  TempDir tmp;
  // As Python tensordict 0.15 writes an @tensorclass Point (x: Tensor,
  // label: str, scale: float): tensor and non-tensor fields in _tensordict/,
  // and here also a non-tensor field in meta.json, as older versions wrote.
  const fs::path dir = tmp.path() / "point";
  TensorDict fields({{"x", iota({3, 2})}}, {3});
  fields.set_non_tensor("label", "origin");
  fields.memmap((dir / "_tensordict").string());
  write_text(dir / "meta.json", R"({"_type": "<class '__main__.Point'>", "scale": 0.5, "unset": null})");

  TensorDict any = load_memmap(dir.string());
  REQUIRE(any.kind() == Kind::Dense);
  TensorDict point = TensorDict::load_memmap(dir.string());
  REQUIRE(std::string(kLoadedClassKey) == "__class__");
  REQUIRE(point.keys() == std::vector<NestedKey>{"x", "label", "scale", "__class__"});
  REQUIRE(point.batch_size() == at::IntArrayRef{3});
  REQUIRE(at::equal(point.get("x"), iota({3, 2})));
  REQUIRE(point.get_non_tensor("label") == "origin");
  REQUIRE(point.get_non_tensor("scale") == 0.5);
  REQUIRE(point.get_non_tensor("__class__") == "<class '__main__.Point'>");
  // Memory-mapped, saved at the class's directory (it had no saved path before).
  REQUIRE(point.is_memmap());
  REQUIRE((point.saved_path() == fs::absolute(dir).string()));
  // The class name follows the fields through batch ops.
  REQUIRE(point.index({1}).get_non_tensor("__class__") == "<class '__main__.Point'>");

  // Nested in a tensordict, found through the parent's {"type": "Point"}.
  const fs::path parent = tmp.path() / "parent";
  TensorDict({{"y", iota({3})}}, {3}).memmap(parent.string());
  fs::rename(dir, parent / "point");
  write_text(parent / "meta.json",
             R"({"y": {"device": "cpu", "shape": [3], "dtype": "torch.float32", "is_nested": false}, )"
             R"("point": {"type": "Point"}, "shape": [3], "device": "cpu", )"
             R"("_type": "<class 'tensordict._td.TensorDict'>"})");
  TensorDict loaded = TensorDict::load_memmap(parent.string());
  REQUIRE(loaded.get_non_tensor({"point", "__class__"}) == "<class '__main__.Point'>");
  REQUIRE(at::equal(loaded.get({"point", "x"}), iota({3, 2})));
}

TEST_CASE("a tensorclass of an unregistered class with a field named __class__ is refused") {
  TempDir tmp;
  const fs::path dir = tmp.path() / "odd";
  TensorDict({{"x", iota({2})}}, {2}).memmap((dir / "_tensordict").string());
  write_text(dir / "meta.json", R"({"_type": "<class 'lib.Odd'>", "__class__": "mine"})");
  REQUIRE_THAT(TD_MESSAGE(TensorDict::load_memmap(dir.string())),
               Contains((dir / "meta.json").string()) && Contains("the tensorclass <class 'lib.Odd'>") &&
                   Contains("has a field named '__class__'"));
}

TEST_CASE("dim names are written and read as tensordict's \"_names\"") {
  TempDir tmp;
  TensorDict td({{"x", iota({2, 3})}, {"child", TensorDict({{"y", iota({2, 3, 4})}}, {2, 3})}}, {2}, std::nullopt,
                {"env"});
  td.get_td("child").rename_(Names{"env", "time"});
  td.memmap(tmp / "named");
  const fs::path out = tmp.path() / "named";
  REQUIRE_THAT(read_text(out / "meta.json"), Contains(R"("_type":"<class 'tensordict._td.TensorDict'>","_names":["env"]})"));
  REQUIRE_THAT(read_text(out / "child" / "meta.json"), Contains(R"("_names":["env","time"]})"));
  TensorDict back = TensorDict::load_memmap(out.string());
  REQUIRE((back.names() == Names{"env"}));
  REQUIRE((back.get_td("child").names() == Names{"env", "time"}));
  // Without names, no "_names" is written.
  TensorDict({{"x", iota({2})}}, {2}).memmap(tmp / "plain");
  REQUIRE_THAT(read_text(tmp.path() / "plain" / "meta.json"), !Contains("_names"));

  // As Python tensordict 0.15 writes them: one per dim, null where unnamed.
  write_text(out / "child" / "meta.json",
             R"({"y": {"device": "cpu", "shape": [2, 3, 4], "dtype": "torch.float32", "is_nested": false}, )"
             R"("shape": [2, 3], "device": "cpu", "_type": "<class 'tensordict._td.TensorDict'>", )"
             R"("_format_version": 1, "_class": "tensordict:TensorDict", "_names": ["env", null]})");
  REQUIRE((TensorDict::load_memmap(out.string()).get_td("child").names() == Names{"env", std::nullopt}));
}

TEST_CASE("a key named _names keeps its entry, and the names are then not written (as tensordict)") {
  TempDir tmp;
  TensorDict td({{"_names", iota({2})}}, {2}, std::nullopt, {"env"});
  td.memmap(tmp / "t");
  TensorDict back = TensorDict::load_memmap(tmp / "t");
  REQUIRE(at::equal(back.get("_names"), iota({2})));
  REQUIRE_FALSE(back.has_names());
}

TEST_CASE("malformed dim names and newer format versions are clear errors") {
  TempDir tmp;
  TensorDict({{"x", iota({2, 3})}, {"child", TensorDict({{"y", iota({2, 3})}}, {2, 3})}}, {2}).memmap(tmp / "t");
  const fs::path dir = tmp.path() / "t";
  const std::string leaf = R"({"x": {"device": "cpu", "shape": [2, 3], "dtype": "torch.float32", "is_nested": false}, )"
                           R"("child": {"type": "TensorDict"}, "shape": [2], "device": "cpu", )"
                           R"("_type": "<class 'tensordict._td.TensorDict'>")";
  const std::string file = (dir / "meta.json").string();
  auto load_with = [&](const std::string& tail) {
    write_text(dir / "meta.json", leaf + tail + "}");
    return TD_MESSAGE(TensorDict::load_memmap(dir.string()));
  };
  REQUIRE_THAT(load_with(R"(, "_names": ["a", "b"])"),
               Contains("malformed " + file) && Contains("\"_names\" must list one name (a string or null) per batch "
                                                         "dim (1), got [\"a\",\"b\"]"));
  REQUIRE_THAT(load_with(R"(, "_names": [3])"), Contains("malformed " + file) && Contains("got [3]"));
  REQUIRE_THAT(load_with(R"(, "_names": "env")"), Contains("malformed " + file) && Contains("got \"env\""));
  // The child's names must start with the parent's.
  write_text(dir / "child" / "meta.json",
             R"({"y": {"device": "cpu", "shape": [2, 3], "dtype": "torch.float32", "is_nested": false}, )"
             R"("shape": [2, 3], "device": "cpu", "_type": "<class 'tensordict._td.TensorDict'>", )"
             R"("_names": ["a", "a"]})");
  REQUIRE_THAT(load_with(""), Contains("malformed " + (dir / "child" / "meta.json").string()) &&
                                  Contains("Some dimension names are non-unique: ['a', 'a']."));
  write_text(dir / "child" / "meta.json",
             R"({"y": {"device": "cpu", "shape": [2, 3], "dtype": "torch.float32", "is_nested": false}, )"
             R"("shape": [2, 3], "device": "cpu", "_type": "<class 'tensordict._td.TensorDict'>", )"
             R"("_names": ["other", null]})");
  REQUIRE_THAT(load_with(R"(, "_names": ["env"])"),
               Contains(file) && Contains("the dim names of key 'child' do not start with the level's names"));
  REQUIRE_THAT(load_with(R"(, "_format_version": 2)"),
               Contains(file + " was saved in the tensordict format version 2; this reader reads versions up to 1"));
}
