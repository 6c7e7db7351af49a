// Trees that change under a load or a handle: leaves hard-linked out of the
// tree, directories swapped for links mid-load, readers during rewrites,
// handles older than the tree they write back to, writers kept waiting.
#include <sys/file.h>
#include <nlohmann/json.hpp>
#include <unistd.h>

#include <atomic>
#include <mutex>
#include <thread>

#include "hostile.h"

using namespace tensordict;
using namespace hostile;
using td_test::TempDir;
using Catch::Matchers::StartsWith;

TEST_CASE("hostile races: a leaf hard-linked to a file outside the tree is refused, the file untouched") {
  TempDir tmp;
  const fs::path dir = tmp / "t";
  TensorDict({{"x", at::zeros({4}, at::kByte)}}, {4}).memmap(dir.string());
  const fs::path outside = tmp / "outside.bin";
  write_text(outside, "SECR");
  fs::remove(dir / "x.memmap");
  fs::create_hard_link(outside, dir / "x.memmap");
  REQUIRE_THAT(HOSTILE_THROWS({
                 auto td = load_memmap(dir.string());
                 td.get("x").fill_(0);
               }),
               Contains("the data file " + (dir / "x.memmap").string() + " of key 'x' has 2 hard links") &&
                   Contains("loading refuses it (copy the file to break the link)"));
  REQUIRE(read_text(outside) == "SECR");
}

TEST_CASE("hostile races: a nested directory swapped for a link during loads never yields outside data") {
  TempDir tmp;
  const fs::path dir = tmp / "t";
  TensorDict inside({}, {});
  inside.set({"n", "x"}, at::full({2}, 1));
  inside.memmap(dir.string());
  TensorDict({{"x", at::full({2}, 666)}}, {}).memmap((tmp / "evil").string());
  const std::string got = HOSTILE_RETURNS({
    std::atomic<bool> stop{false};
    std::thread swapper([&] {
      while (!stop) {
        fs::rename(dir / "n", dir / "n.saved");
        fs::create_directory_symlink(tmp / "evil", dir / "n");
        fs::remove(dir / "n");
        fs::rename(dir / "n.saved", dir / "n");
        // The tree whole for a moment: on a busy machine a swapper that never
        // pauses can leave no load a chance to see it.
        std::this_thread::sleep_for(std::chrono::microseconds(200));
      }
    });
    int inside_loads = 0, outside_loads = 0;
    // 2 s of loads, and on until one has read the tree whole (at most 10 s,
    // within the child's 20 s limit).
    const auto start = std::chrono::steady_clock::now();
    while (std::chrono::steady_clock::now() < start + std::chrono::seconds(2) ||
           (inside_loads == 0 && std::chrono::steady_clock::now() < start + std::chrono::seconds(10))) {
      try {
        const int64_t x = load_memmap(dir.string()).get({"n", "x"})[0].item<int64_t>();
        (x == 666 ? outside_loads : inside_loads) += 1;
      } catch (const tensordict::Error&) {
        // the link itself, or the moment the directory is away: refused
      }
    }
    stop = true;
    swapper.join();
    return std::to_string(outside_loads) + " outside, inside " + (inside_loads > 0 ? "some" : "none");
  });
  REQUIRE(got == "0 outside, inside some");
}

namespace {

// Version v of the stress tree: "x" and "y" hold v, v % 5 + 1 elements each.
TensorDict version(int64_t v) {
  return TensorDict({{"x", at::full({v % 5 + 1}, v)}, {"y", at::full({v % 5 + 1}, v)}}, {});
}

// Whether `td` is one whole version.
bool whole(const TensorDict& td) {
  const at::Tensor x = td.get("x"), y = td.get("y");
  const int64_t v = x[0].item<int64_t>();
  return x.numel() == v % 5 + 1 && at::equal(x, at::full_like(x, v)) && at::equal(y, x);
}

}  // namespace

TEST_CASE("hostile races: readers loading while writers rewrite see one whole version each") {
  // 2 writers rewrite the tree with versions of other shapes while 2 readers
  // load it, for 3 s. Before the loads read through one descriptor of the
  // tree, some mixed one version's meta.json with another's data, and some
  // failed with a spurious "truncated".
  TempDir tmp;
  const fs::path dir = tmp / "t";
  version(0).memmap(dir.string(), {.sync = false});
  const auto outcome = hostile::in_child(
      [&] {
        std::atomic<bool> stop{false};
        std::atomic<int64_t> loads{0}, mixed{0}, failed{0}, writes{0};
        std::string first_failure;
        std::mutex failure_mutex;
        std::vector<std::thread> threads;
        for (int w = 0; w < 2; ++w) {
          threads.emplace_back([&, w] {
            for (int64_t v = 1 + w; !stop; v += 2) {
              version(v).memmap(dir.string(), {.sync = false});
              ++writes;
            }
          });
        }
        for (int r = 0; r < 2; ++r) {
          threads.emplace_back([&] {
            while (!stop) {
              try {
                (whole(load_memmap(dir.string())) ? loads : mixed) += 1;
              } catch (const std::exception& e) {
                ++failed;
                std::lock_guard lock(failure_mutex);
                if (first_failure.empty()) first_failure = e.what();
              }
            }
          });
        }
        std::this_thread::sleep_for(std::chrono::seconds(3));
        stop = true;
        for (auto& t : threads) t.join();
        return "mixed " + std::to_string(mixed) + ", failed " + std::to_string(failed) + ", whole " +
               std::to_string(loads) + ", writes " + std::to_string(writes) + " " + first_failure;
      },
      hostile::Limits{.seconds = 60});
  INFO(outcome.describe());
  REQUIRE(outcome.status == hostile::Outcome::Status::Returned);
  REQUIRE_THAT(outcome.text, StartsWith("mixed 0, failed 0,"));
}

TEST_CASE("hostile races: a handle loaded before a rewrite writes its own data back") {
  TempDir tmp;
  const fs::path dir = tmp / "t";
  TensorDict({{"x", at::full({3}, 1)}}, {3}).memmap(dir.string());
  const std::string got = HOSTILE_RETURNS({
    TensorDict first = load_memmap(dir.string());
    TensorDict({{"x", at::full({5}, 2)}}, {5}).memmap(dir.string());  // another writer
    first.memmap(dir.string());
    return c10::str(load_memmap(dir.string()).get("x"));
  });
  REQUIRE_THAT(got, Contains(" 1\n 1\n 1\n[ CPULongType{3} ]"));
}

TEST_CASE("hostile races: a writer waits for another one's lock at most lock_timeout, then names the lock file") {
  TempDir tmp;
  const fs::path dir = tmp / "t";
  const fs::path lock = tmp / ".t.tc-lock";
  const int fd = ::open(lock.c_str(), O_RDWR | O_CREAT, 0600);
  REQUIRE(fd >= 0);
  REQUIRE(::flock(fd, LOCK_EX) == 0);  // another writer, alive
  REQUIRE_THAT(HOSTILE_THROWS(TensorDict({{"x", at::zeros({2})}}, {2}).memmap(dir.string(), {.lock_timeout = 0.3})),
               Contains("cannot write " + dir.string() + ": another writer has held its lock file " + lock.string() +
                        " for 0.3 s (MemmapOptions::lock_timeout)"));
  ::close(fd);
  REQUIRE(HOSTILE_RETURNS({
            TensorDict({{"x", at::zeros({2})}}, {2}).memmap(dir.string(), {.lock_timeout = 0.3});
            return std::string("written");
          }) == "written");
}

TEST_CASE("hostile races: a rewrite drops the files of removed keys and keeps other programs' files") {
  TempDir tmp;
  const fs::path dir = tmp / "t";
  TensorDict old({{"gone", at::zeros({2})}, {"kept", at::zeros({2})}}, {2});
  old.set({"level", "y"}, at::zeros({2}));
  old.memmap(dir.string());
  write_text(dir / "notes.txt", "mine");
  write_text(dir / "level" / "notes.txt", "mine too");
  TensorDict({{"kept", at::ones({2})}}, {2}).memmap(dir.string());
  CHECK_FALSE(fs::exists(dir / "gone.memmap"));
  CHECK_FALSE(fs::exists(dir / "level" / "y.memmap"));
  CHECK_FALSE(fs::exists(dir / "level" / "meta.json"));
  CHECK(read_text(dir / "notes.txt") == "mine");
  CHECK(read_text(dir / "level" / "notes.txt") == "mine too");
  TensorDict({{"kept", at::ones({2})}}, {2}).memmap((tmp / "u").string());
  TensorDict({{"other", at::ones({2})}}, {2}).memmap((tmp / "u").string());
  CHECK(fs::exists(tmp / "u" / "other.memmap"));
  CHECK_FALSE(fs::exists(tmp / "u" / "kept.memmap"));
}

TEST_CASE("hostile races: a user who may not remove the old tree is refused before it is replaced") {
  if (::geteuid() != 0) {
    SUCCEED("switching to another user needs root");
    return;
  }
  TempDir tmp;
  fs::permissions(tmp.path(), fs::perms::all);  // anyone may write beside the tree
  const fs::path dir = tmp / "t";
  TensorDict old({}, {});
  old.set({"n", "x"}, at::zeros({2}));
  old.memmap(dir.string());  // root's, directories 0755
  REQUIRE_THAT(HOSTILE_THROWS({
                 if (::setgid(65534) != 0 || ::setuid(65534) != 0) throw std::runtime_error("cannot become nobody");
                 TensorDict({{"y", at::ones({2})}}, {}).memmap(dir.string());
               }),
               Contains("this user may not remove the entries of its directory " + dir.string()) &&
                   Contains("so the old tree could not be removed once the new one is published"));
  for (const auto& entry : fs::directory_iterator(tmp.path())) {
    CHECK(entry.path().filename().string().find("tc-staging") == std::string::npos);
  }
  CHECK(load_memmap(dir.string()).contains({"n", "x"}));
}
