// Crafted memmap trees: batch shapes that lie, deep JSON, special files,
// deep directories, huge key counts. Each case runs in its own child.
#include <sys/stat.h>
#include <nlohmann/json.hpp>
#include <sys/sysmacros.h>

#include "hostile.h"

using namespace tensordict;
using namespace hostile;
using td_test::TempDir;

namespace {

const char* kStackType = "<class 'tensordict.tensorclass.NonTensorStack'>";

// t/: batch [2, 3] with a NonTensorStack 's' of `data`.
fs::path stack_tree(const TempDir& tmp, const std::string& data) {
  const fs::path dir = tmp / "t";
  write_text(dir / "meta.json", level_meta(R"("s": {"type": "NonTensorStack"})", "[2, 3]"));
  write_text(dir / "s" / "meta.json",
             std::string(R"({"_type": ")") + kStackType + R"(", "stack_dim": 0, "device": null, "data": )" + data + "}");
  return dir;
}

}  // namespace

TEST_CASE("hostile tree: a NonTensorStack with fewer dims than the batch is refused at load") {
  TempDir tmp;
  const fs::path dir = stack_tree(tmp, "[1, 2]");
  const std::string message = HOSTILE_THROWS(load_memmap(dir.string()).reshape({-1}));
  REQUIRE_THAT(message, Contains((dir / "meta.json").string()) && Contains("NonTensorStack of key 's'") &&
                            Contains("has shape [2], not the level's batch [2, 3]"));
}

TEST_CASE("hostile tree: a NonTensorStack spanning the batch loads and reshapes") {
  TempDir tmp;
  const fs::path dir = stack_tree(tmp, R"([["a", "b", "c"], ["d", "e", "f"]])");
  const std::string flat = HOSTILE_RETURNS({
    auto td = load_memmap(dir.string()).reshape({-1});
    return td.get_non_tensor("s").dump();
  });
  REQUIRE(flat == R"(["a","b","c","d","e","f"])");
}

TEST_CASE("hostile tree: meta.json nested 30k levels deep is a named error") {
  TempDir tmp;
  const fs::path dir = tmp / "t";
  write_text(dir / "meta.json", std::string(30000, '[') + std::string(30000, ']'));
  const std::string message = HOSTILE_THROWS(load_memmap(dir.string()));
  REQUIRE_THAT(message, Contains((dir / "meta.json").string()) && Contains("JSON nested more than 512 levels deep"));
}

TEST_CASE("hostile tree: NonTensorData nested moderately deep still loads") {
  TempDir tmp;
  const fs::path dir = tmp / "t";
  write_text(dir / "meta.json", level_meta(R"("n": {"type": "NonTensorData"})", "[]"));
  const std::string deep = std::string(200, '[') + "1" + std::string(200, ']');
  write_text(dir / "n" / "meta.json",
             R"({"_type": "<class 'tensordict.tensorclass.NonTensorData'>", "data": )" + deep + "}");
  const std::string got = HOSTILE_RETURNS(return load_memmap(dir.string()).get_non_tensor("n").dump());
  REQUIRE(got == deep);
}

TEST_CASE("hostile tree: a FIFO as meta.json or as a leaf is refused without waiting") {
  TempDir tmp;
  const fs::path dir = tmp / "t";
  fs::create_directories(dir);
  REQUIRE(::mkfifo((dir / "meta.json").c_str(), 0600) == 0);
  REQUIRE_THAT(HOSTILE_THROWS(load_memmap(dir.string())),
               Contains((dir / "meta.json").string()) && Contains("is not a regular file"));

  const fs::path leafy = tmp / "u";
  write_text(leafy / "meta.json",
             level_meta(R"("x": {"device": "cpu", "shape": [4], "dtype": "torch.float32", "is_nested": false})", "[4]"));
  REQUIRE(::mkfifo((leafy / "x.memmap").c_str(), 0600) == 0);
  REQUIRE_THAT(HOSTILE_THROWS(load_memmap(leafy.string())),
               Contains("the data file of key 'x'") && Contains((leafy / "x.memmap").string()) &&
                   Contains("is not a regular file"));
}

TEST_CASE("hostile tree: a character device as leaf is refused") {
  TempDir tmp;
  const fs::path dir = tmp / "t";
  write_text(dir / "meta.json",
             level_meta(R"("x": {"device": "cpu", "shape": [4], "dtype": "torch.float32", "is_nested": false})", "[4]"));
  if (::mknod((dir / "x.memmap").c_str(), S_IFCHR | 0600, makedev(1, 5)) != 0) {  // /dev/zero
    WARN("cannot create a device node here (not root): case skipped");
    return;
  }
  REQUIRE_THAT(HOSTILE_THROWS(load_memmap(dir.string())), Contains("is not a regular file"));
}

TEST_CASE("hostile tree: an oversized meta.json is refused before it is read") {
  TempDir tmp;
  const fs::path dir = tmp / "t";
  fs::create_directories(dir);
  {
    std::ofstream out(dir / "meta.json");
  }
  fs::resize_file(dir / "meta.json", (std::uintmax_t{256} << 20) + 1);  // sparse
  REQUIRE_THAT(HOSTILE_THROWS(load_memmap(dir.string())),
               Contains((dir / "meta.json").string()) && Contains("more than the 268435456 a meta.json may have"));
}

TEST_CASE("hostile tree: directories nested past the bound are a named error") {
  TempDir tmp;
  fs::path level = tmp / "t";
  const fs::path top = level;
  for (int i = 0; i < 300; ++i) {
    write_text(level / "meta.json", level_meta(R"("a": {"type": "TensorDict"})", "[]"));
    level /= "a";
  }
  write_text(level / "meta.json", level_meta("", "[]"));
  REQUIRE_THAT(HOSTILE_THROWS(load_memmap(top.string())),
               Contains("load_memmap: tensordicts nested more than 256 levels deep are not supported"));
}

TEST_CASE("hostile tree: meta.json key counts load in linear time") {
  TempDir tmp;
  // A level of n zero-size leaves (no data files needed).
  auto level_of = [&](int n) {
    const fs::path dir = tmp / ("t" + std::to_string(n));
    std::string entries;
    for (int i = 0; i < n; ++i) {
      if (i) entries += ", ";
      entries += "\"k" + std::to_string(i) + R"(": {"device": "cpu", "shape": [0], "dtype": "torch.float32", "is_nested": false})";
    }
    write_text(dir / "meta.json", level_meta(entries, "[0]"));
    return dir;
  };
  const fs::path small = level_of(10000), large = level_of(40000);
  // 4x the keys: about 4x the time when linear, 16x when quadratic (100k keys
  // took 10 s, 1.3M over 5 minutes). A ratio stays meaningful on a busy machine.
  const std::string got = HOSTILE_RETURNS({
    std::size_t keys = 0;
    const double t_small = seconds_of([&] { keys += load_memmap(small.string()).num_keys(); });
    const double t_large = seconds_of([&] { keys += load_memmap(large.string()).num_keys(); });
    const double ratio = t_large / std::max(t_small, 1e-3);
    return std::to_string(keys) + (ratio < 9 ? " linear" : " ratio " + std::to_string(ratio));
  });
  REQUIRE(got == "50000 linear");
}

TEST_CASE("hostile tree: a repeated key keeps its first place and its last value, as JSON parsers do") {
  TempDir tmp;
  const fs::path dir = tmp / "t";
  write_text(dir / "meta.json",
             R"({"a": {"device": "cpu", "shape": [9], "dtype": "torch.float32", "is_nested": false}, "b": {"device": "cpu", "shape": [0], "dtype": "torch.float32", "is_nested": false}, "a": {"device": "cpu", "shape": [0], "dtype": "torch.int64", "is_nested": false}, "shape": [0], "device": "cpu", "_type": ")" +
                 std::string(kTdType) + "\"}");
  const std::string got = HOSTILE_RETURNS({
    auto td = load_memmap(dir.string());
    return td.keys()[0].repr() + td.keys()[1].repr() + std::string(c10::toString(td.get("a").scalar_type()));
  });
  REQUIRE(got == "'a''b'Long");
}

TEST_CASE("hostile tree: clear() and memmap_refresh_ on 20k keys are linear") {
  const std::string got = HOSTILE_RETURNS({
    TempDir tmp;
    TensorDict td({}, {0});
    for (int i = 0; i < 20000; ++i) td.set("k" + std::to_string(i), at::zeros({0}));
    auto saved = td.memmap((tmp / "t").string());
    // The quadratic versions took about 25 s each (past the child's time limit).
    const double refresh = seconds_of([&] { saved.memmap_refresh_(); });
    const std::size_t refreshed = saved.num_keys();
    const double clear = seconds_of([&] { td.clear(); });
    return std::to_string(refreshed) + " " + std::to_string(td.num_keys()) +
           (refresh < 10 && clear < 2 ? " fast" : " slow: " + std::to_string(refresh) + " s, " + std::to_string(clear) + " s");
  });
  REQUIRE(got == "20000 0 fast");
}

TEST_CASE("hostile tree: a meta.json entry that is a list, a string or a number is refused, not dropped") {
  TempDir tmp;
  const fs::path dir = tmp / "t";
  // (Plain pair members: clang 14 refuses lambdas that capture structured bindings.)
  for (const auto& entry_type : std::vector<std::pair<std::string, std::string>>{
           {R"("x": [1, 2])", "array"}, {R"("x": "data")", "string"}, {R"("x": 3)", "number"}, {R"("x": null)", "null"}}) {
    write_text(dir / "meta.json", level_meta(entry_type.first, "[]"));
    REQUIRE_THAT(HOSTILE_THROWS(load_memmap(dir.string())),
                 Contains("malformed " + (dir / "meta.json").string() + ": key 'x' holds a JSON " + entry_type.second +
                          ", not an entry's description (an object)"));
  }
  // Level metadata (what tensordict writes, and "_"-prefixed keys) loads.
  write_text(dir / "meta.json", level_meta(R"("_class": "tensordict:TensorDict", "_future": [1])", "[]"));
  REQUIRE(HOSTILE_RETURNS(return std::to_string(load_memmap(dir.string()).keys().size())) == "0");
}

TEST_CASE("hostile tree: a key with both an encoded and an older unencoded file is refused, not resolved by lookup order") {
  TempDir tmp;
  const fs::path dir = tmp / "t";
  TensorDict({{"a b", at::ones({2})}}, {2}).memmap(dir.string());
  REQUIRE(fs::exists(dir / "a%20b.memmap"));
  fs::copy_file(dir / "a%20b.memmap", dir / "a b.memmap");
  REQUIRE_THAT(HOSTILE_THROWS(load_memmap(dir.string())),
               Contains((dir / "meta.json").string() + ": key 'a b' has two entries, a%20b.memmap and the older "
                                                       "unencoded a b.memmap; remove one"));
  fs::remove(dir / "a%20b.memmap");  // the older name alone still loads
  REQUIRE(HOSTILE_RETURNS(return c10::str(load_memmap(dir.string()).get("a b").sum().item<float>())) == "2");
  // The same for a nested level's directory.
  const fs::path nested = tmp / "n";
  TensorDict({{"c d", TensorDict({{"x", at::ones({1})}}, {})}}, {}).memmap(nested.string());
  fs::create_directory(nested / "c d");
  REQUIRE_THAT(HOSTILE_THROWS(load_memmap(nested.string())),
               Contains("key 'c d' has two entries, c%20d and the older unencoded c d"));
}
