// remove_tree: the runtime's tree removal, which replaces
// std::filesystem::remove_all (libtorch 2.x exports a copy of std::filesystem
// whose remove_all crashes). These run in both builds; the 2.x build is the
// regression guard for the crash.
#include <unistd.h>

#include <fstream>

#include "persist_helpers.h"

using namespace tensordict;
using namespace td_test;
using Catch::Matchers::Contains;

namespace {

void touch(const fs::path& p) { std::ofstream(p) << "x"; }

}  // namespace

TEST_CASE("remove_tree removes a nested tree and leaves its parent") {
  TempDir tmp;
  const fs::path root = tmp / "tree";
  fs::create_directories(root / "a" / "b" / "c");
  touch(root / "top.memmap");
  touch(root / "a" / "b" / "c" / "deep.memmap");
  fs::create_directories(root / "empty");
  remove_tree(root);
  CHECK_FALSE(fs::exists(root));
  CHECK(fs::exists(tmp.path()));
}

TEST_CASE("remove_tree removes links, never what they point to") {
  TempDir tmp;
  const fs::path outside = tmp / "outside";
  fs::create_directories(outside);
  touch(outside / "keep.txt");
  const fs::path root = tmp / "tree";
  fs::create_directories(root);
  fs::create_directory_symlink(outside, root / "dir_link");
  fs::create_symlink(outside / "keep.txt", root / "file_link");
  remove_tree(root);
  CHECK_FALSE(fs::exists(root));
  CHECK(fs::exists(outside / "keep.txt"));

  // A link given as the root is removed itself.
  fs::create_directory_symlink(outside, tmp / "root_link");
  remove_tree(tmp / "root_link");
  CHECK_FALSE(fs::exists(fs::symlink_status(tmp / "root_link")));
  CHECK(fs::exists(outside / "keep.txt"));
}

TEST_CASE("remove_tree of a missing path or a single file") {
  TempDir tmp;
  std::error_code ec;
  CHECK(remove_tree(tmp / "missing", ec));
  CHECK_FALSE(ec);
  touch(tmp / "file");
  remove_tree(tmp / "file");
  CHECK_FALSE(fs::exists(tmp / "file"));
}

TEST_CASE("remove_tree errors name the path") {
  TempDir tmp;
  touch(tmp / "file");
  // A path through a regular file: lstat fails with ENOTDIR.
  const fs::path bad = tmp / "file" / "below";
  std::error_code ec;
  CHECK_FALSE(remove_tree(bad, ec));
  CHECK(ec == std::errc::not_a_directory);
  REQUIRE_THAT(TD_MESSAGE(remove_tree(bad)), Contains("cannot remove the tree") && Contains(bad.string()));
}

TEST_CASE("memmap over an existing tree replaces it, the swapped-out tree is removed") {
  TempDir tmp;
  const fs::path prefix = tmp / "td";
  TensorDict first({{"a", at::zeros({2, 3})}, {"old_only", at::ones({2})}}, {2});
  first.memmap(prefix);
  TensorDict second({{"a", at::arange(6).view({2, 3}).to(at::kFloat)}}, {2});
  second.memmap(prefix);
  const TensorDict back = TensorDict::load_memmap(prefix);
  CHECK(back.keys() == std::vector<NestedKey>{"a"});
  CHECK(at::equal(back.get("a"), second.get("a")));
  // Nothing of the old tree or the staging directory is left beside it.
  std::vector<std::string> names;
  for (const auto& e : fs::directory_iterator(tmp.path())) names.push_back(e.path().filename().string());
  CHECK(names == std::vector<std::string>{"td"});
}
