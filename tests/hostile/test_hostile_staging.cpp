// Writers and readers of a tree against another user at the exact moment a
// race needs (through the library's test hooks, detail/test_hooks.h): a
// staging directory swapped for a link, a data file flipped to a hard link
// between an append's check and its write, a reader during an append's
// cleanup; and mapped files truncated by another process.
#include <signal.h>
#include <nlohmann/json.hpp>
#include <sys/stat.h>
#include <unistd.h>

#include "../message_of.h"
#include "hostile.h"
#include "tensordict/detail/test_hooks.h"

using namespace tensordict;
using namespace hostile;
using td_test::TempDir;
using td_test::message_of;

namespace {

// What the hooks below act on (set before the case's child is forked).
fs::path g_parent, g_outside, g_file;
std::string g_staging;

// Another user of the parent directory, once the writer has created its
// staging directory: moves it away and puts a link to g_outside at its name.
void swap_staging(std::string_view point) {
  if (point != "memmap: staging created" || !g_staging.empty()) return;
  for (const auto& entry : fs::directory_iterator(g_parent)) {
    const std::string name = entry.path().filename().string();
    if (name.rfind(".t.tc-staging.", 0) != 0) continue;
    g_staging = entry.path().string();
    fs::rename(entry.path(), g_parent / "moved");
    fs::create_directory_symlink(g_outside, entry.path());
    return;
  }
}

// A user who may write inside the tree, once the append has checked it:
// flips g_file to a hard link to g_outside.
void flip_to_link(std::string_view point) {
  if (point != "append: checked") return;
  fs::rename(g_file, g_file.string() + ".saved");
  fs::create_hard_link(g_outside, g_file);
}

// The writer publishing the tree, as the reader counts the links of its data
// file: the writer removes its old tree (the staging directory g_staging).
void finish_writer(std::string_view point) {
  if (point != "load: linked data file") return;
  std::error_code ec;
  remove_tree(g_staging, ec);
}

struct HookGuard {
  explicit HookGuard(tensordict::detail::TestHook hook) { tensordict::detail::set_test_hook(hook); }
  ~HookGuard() { tensordict::detail::set_test_hook(nullptr); }
};

}  // namespace

TEST_CASE("hostile staging: a staging directory swapped for a link to another directory receives nothing") {
  // The writer wrote its files into the directory linked, replaced its
  // meta.json, copied the old tree's mode onto it and left the tree as a link
  // to it.
  TempDir tmp;
  g_parent = tmp.path();
  g_outside = tmp / "outside";
  g_staging.clear();
  const fs::path dir = tmp / "t";
  TensorDict({{"x", at::full({4}, 1)}}, {4}).memmap(dir.string());
  fs::permissions(dir, fs::perms::owner_all, fs::perm_options::replace);
  fs::create_directory(g_outside);
  fs::permissions(g_outside, fs::perms::owner_all | fs::perms::group_read, fs::perm_options::replace);
  const std::string got = HOSTILE_RETURNS({
    HookGuard hook(&swap_staging);
    TensorDict next({{"x", at::full({4}, 2)}, {"y", at::zeros({4, 1000})}}, {4});
    next.set_non_tensor("note", "n");
    const std::string message = message_of([&] { next.memmap(dir.string()); });
    const std::string expected = "cannot write the tensordict to " + dir.string() + ": its staging directory " +
                                 g_staging + " was moved or replaced during the write (by another user of " +
                                 tmp.path().string() + "); the tree is left as it was";
    return message == expected ? std::string("refused") : message;
  });
  REQUIRE(got == "refused");
  CHECK(fs::is_empty(g_outside));
  CHECK(fs::status(g_outside).permissions() == (fs::perms::owner_all | fs::perms::group_read));
  CHECK_FALSE(fs::is_symlink(dir));
  CHECK(fs::status(dir).permissions() == fs::perms::owner_all);
  CHECK(at::equal(load_memmap(dir.string()).get("x"), at::full({4}, 1)));
}

TEST_CASE("hostile staging: an append whose data file is flipped to a hard link after its check writes nothing there") {
  // The append linked and grew the file by its name after the check: the
  // outside file received the rows.
  TempDir tmp;
  const fs::path dir = tmp / "t";
  TensorDict({{"obs", at::full({2, 4}, 1, at::kFloat)}}, {2}).memmap(dir.string());
  g_outside = tmp / "outside.bin";
  g_file = dir / "obs.memmap";
  write_text(g_outside, std::string(32, 'S'));
  const std::string got = HOSTILE_RETURNS({
    HookGuard hook(&flip_to_link);
    return message_of([&] { append_memmap(dir.string(), TensorDict({{"obs", at::full({3, 4}, 7, at::kFloat)}}, {3})); });
  });
  REQUIRE(got == "cannot append to the tensordict: its data file " + g_file.string() +
                     " was replaced by another file during the append; nothing was written");
  CHECK(read_text(g_outside) == std::string(32, 'S'));
  CHECK(fs::file_size(g_file.string() + ".saved") == 32);  // the real file, not grown
}

TEST_CASE("hostile staging: a load racing with a writer's removal of its old tree retries the link count") {
  // 3 of 399,485 loads during appends failed with "has 2 hard links": the
  // link count was read while the writer's old tree still linked the file,
  // the staging directories listed after the writer had removed it.
  TempDir tmp;
  const fs::path dir = tmp / "t";
  TensorDict({{"x", at::full({4}, 3)}}, {4}).memmap(dir.string());
  const fs::path old_tree = tmp / ".t.tc-staging.99999.0";
  fs::create_directory(old_tree);
  fs::create_hard_link(dir / "x.memmap", old_tree / "x.memmap");
  g_staging = old_tree.string();
  const std::string got = HOSTILE_RETURNS({
    HookGuard hook(&finish_writer);
    return c10::str(load_memmap(dir.string()).get("x").sum().item<int64_t>());
  });
  REQUIRE(got == "12");
}

TEST_CASE("hostile staging: a file truncated under a mapped load kills the reader with SIGBUS (documented)") {
  // The documented decision (docs/differences.md): mapping is tensordict's behaviour, and a mapped
  // file another process truncates raises SIGBUS, as numpy.memmap and LMDB
  // do; LoadOptions::copy is for trees that others may write.
  TempDir tmp;
  const fs::path dir = tmp / "t";
  TensorDict({{"x", at::ones({1 << 16})}}, {}).memmap(dir.string());
  const auto outcome = in_child([&]() -> std::string {
    const TensorDict td = load_memmap(dir.string());
    fs::resize_file(dir / "x.memmap", 0);
    return c10::str(td.get("x").sum().item<float>());
  });
  INFO(outcome.describe());
  REQUIRE(outcome.status == Outcome::Status::Crashed);
}

TEST_CASE("hostile staging: after a copying load, truncating the files leaves the reads working") {
  TempDir tmp;
  const fs::path dir = tmp / "t";
  const fs::path file = tmp / "c.td";
  // Small enough that no op runs in parallel: the child cannot use an
  // OpenMP pool its parent started (libgomp is not fork-safe).
  TensorDict td({{"x", at::ones({1 << 12})}}, {});
  td.memmap(dir.string());
  td.consolidate({.filename = file.string()});
  const std::string got = HOSTILE_RETURNS({
    const TensorDict loaded = load_memmap(dir.string(), std::nullopt, {.copy = true});
    const TensorDict consolidated = from_consolidated(file.string(), {.copy = true});
    fs::resize_file(dir / "x.memmap", 0);
    fs::resize_file(file, 0);
    return c10::str(loaded.get("x").sum().item<int64_t>()) + " " +
           c10::str(consolidated.get("x").sum().item<int64_t>());
  });
  REQUIRE(got == "4096 4096");
  // A file already truncated is refused by a copying load as by a mapped one.
  REQUIRE(message_of([&] { load_memmap(dir.string(), std::nullopt, {.copy = true}); }) ==
          "the data file " + (dir / "x.memmap").string() +
              " of key 'x' is truncated: it has 0 bytes, shape [4096] of Float needs 16384 bytes");
}
