// Symbolic links inside trees: loading follows none (a link could lead out of
// the tree: reading /etc/passwd, or writing through a shared mapping), while
// the prefix itself and its parents are the caller's to choose.
#include "hostile.h"

#include <nlohmann/json.hpp>

using namespace tensordict;
using namespace hostile;
using td_test::TempDir;

namespace {

const char* kLeaf = R"("x": {"device": "cpu", "shape": [4], "dtype": "torch.uint8", "is_nested": false})";

// A file outside the tree, which nothing may read or change.
fs::path outside_file(const TempDir& tmp) {
  write_text(tmp / "outside.bin", "SECRET-DATA");
  return tmp / "outside.bin";
}

}  // namespace

TEST_CASE("hostile links: a leaf file linked outside the tree is refused, and fill_ cannot write through it") {
  TempDir tmp;
  const fs::path secret = outside_file(tmp);
  const fs::path dir = tmp / "t";
  write_text(dir / "meta.json", level_meta(kLeaf, "[4]"));
  fs::create_symlink(secret, dir / "x.memmap");
  const std::string message = HOSTILE_THROWS({
    auto td = load_memmap(dir.string());
    td.get("x").fill_(0);
  });
  REQUIRE_THAT(message, Contains((dir / "x.memmap").string()) && Contains("is a symbolic link inside the tree"));
  REQUIRE(read_text(secret) == "SECRET-DATA");
}

TEST_CASE("hostile links: a linked meta.json, nested level or lazy member is refused") {
  TempDir tmp;
  const fs::path elsewhere = tmp / "elsewhere";
  write_text(elsewhere / "meta.json", level_meta("", "[]"));

  const fs::path a = tmp / "a";
  fs::create_directories(a);
  fs::create_symlink(elsewhere / "meta.json", a / "meta.json");
  REQUIRE_THAT(HOSTILE_THROWS(load_memmap(a.string())),
               Contains((a / "meta.json").string()) && Contains("symbolic link inside the tree"));

  const fs::path b = tmp / "b";
  write_text(b / "meta.json", level_meta(R"("n": {"type": "TensorDict"})", "[]"));
  fs::create_directory_symlink(elsewhere, b / "n");
  REQUIRE_THAT(HOSTILE_THROWS(load_memmap(b.string())),
               Contains((b / "n").string()) && Contains("symbolic link inside the tree"));

  const fs::path c = tmp / "c";
  write_text(c / "meta.json", R"({"_type": "<class 'tensordict._lazy.LazyStackedTensorDict'>", "stack_dim": 0})");
  write_text(c / "0" / "meta.json", level_meta("", "[]"));
  fs::create_directory_symlink(elsewhere, c / "1");
  REQUIRE_THAT(HOSTILE_THROWS(load_memmap(c.string())),
               Contains((c / "1").string()) && Contains("symbolic link inside the tree"));
}

TEST_CASE("hostile links: 31 levels whose entries link to the next level fail at once") {
  TempDir tmp;
  // Level i has keys a and b, both links to level i+1: following them would
  // load 2^31 levels.
  for (int i = 0; i < 31; ++i) {
    const fs::path level = tmp / ("l" + std::to_string(i));
    write_text(level / "meta.json", level_meta(R"("a": {"type": "TensorDict"}, "b": {"type": "TensorDict"})", "[]"));
    fs::create_directory_symlink(tmp / ("l" + std::to_string(i + 1)), level / "a");
    fs::create_directory_symlink(tmp / ("l" + std::to_string(i + 1)), level / "b");
  }
  write_text(tmp / "l31" / "meta.json", level_meta("", "[]"));
  REQUIRE_THAT(HOSTILE_THROWS(load_memmap((tmp / "l0").string())), Contains("symbolic link inside the tree"));
}

TEST_CASE("hostile links: the prefix itself may be a link (the caller chose it)") {
  TempDir tmp;
  TensorDict({{"x", at::arange(4)}}, {4}).memmap((tmp / "real").string());
  fs::create_directory_symlink(tmp / "real", tmp / "alias");
  const std::string got = HOSTILE_RETURNS(return std::to_string(load_memmap((tmp / "alias").string()).get("x").sum().item<int64_t>()));
  REQUIRE(got == "6");
}

TEST_CASE("hostile links: writing under a linked parent works, writing to a linked prefix is refused") {
  TempDir tmp;
  fs::create_directories(tmp / "real_parent");
  fs::create_directory_symlink(tmp / "real_parent", tmp / "parent");
  const std::string got = HOSTILE_RETURNS({
    TensorDict({{"x", at::arange(3)}}, {3}).memmap((tmp / "parent" / "t").string());
    return std::to_string(load_memmap((tmp / "real_parent" / "t").string()).get("x").sum().item<int64_t>());
  });
  REQUIRE(got == "3");

  fs::create_directory_symlink(tmp / "real_parent" / "t", tmp / "linked");
  REQUIRE_THAT(HOSTILE_THROWS(TensorDict({{"x", at::arange(3)}}, {3}).memmap((tmp / "linked").string())),
               Contains("refusing to write through the symbolic link") && Contains((tmp / "linked").string()));
}
