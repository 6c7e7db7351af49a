// Crash safety of memmap and h5 writes: a child process writes complete
// trees over the same place again and again while this process kills it
// (SIGKILL) at random moments. After every kill, loading must give exactly
// one of the complete versions written, or throw a clear error; never a
// tree with wrong (mixed or partial) data.
//
// Kills per format: TC_CRASH_KILLS (default 110, so 220 in all, well under
// a minute). Long mode: TC_CRASH_KILLS=5000 ctest -R crash.
#include <ATen/ATen.h>
#include <nlohmann/json.hpp>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <functional>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "../suite_paths.h"
#include "tensordict/memmap.h"
#include "tensordict/persistent.h"
#include "tensordict/tensordict.h"

namespace fs = std::filesystem;
using tensordict::TensorDict;

namespace {

int kills_per_format() {
  if (const char* env = std::getenv("TC_CRASH_KILLS")) return std::max(1, std::atoi(env));
  return 110;
}

fs::path scratch(const std::string& name) {
  fs::path p = fs::path(td_test::paths::test_tmp) / (name + "." + std::to_string(::getpid()));
  tensordict::remove_tree(p);
  fs::create_directories(p);
  return p;
}

// Versions differ in values everywhere (a partial overwrite shows), and
// version 2 also in shapes and keys.
std::vector<TensorDict> versions() {
  std::vector<TensorDict> out;
  for (int v = 0; v < 3; ++v) {
    const int64_t b = v == 2 ? 12 : 16;
    auto ramp = [&](std::vector<int64_t> shape, at::ScalarType dtype) {
      const int64_t n = c10::multiply_integers(shape);
      return (at::arange(n, at::kLong).remainder(997) + 1000 * v).reshape(shape).to(dtype);
    };
    TensorDict nested({{"b", ramp({b, 2000}, at::kLong)}, {"mask", ramp({b, 7}, at::kLong).remainder(2).to(at::kBool)}},
                      {b});
    TensorDict td({{"a", ramp({b, 128, 256}, at::kFloat)}, {"nested", nested}}, {b});
    if (v == 2) td.set("c", ramp({b, 3}, at::kDouble));
    out.push_back(td);
  }
  return out;
}

bool same(const TensorDict& a, const TensorDict& b) {
  if (a.batch_size() != b.batch_size()) return false;
  auto ka = a.keys({.include_nested = true, .leaves_only = true}), kb = b.keys({.include_nested = true, .leaves_only = true});
  if (ka.size() != kb.size()) return false;
  for (const auto& k : ka) {
    if (!b.contains(k)) return false;
    const at::Tensor x = a.get(k), y = b.get(k);
    if (x.sizes() != y.sizes() || x.scalar_type() != y.scalar_type() || !at::equal(x, y)) return false;
  }
  return true;
}

struct Outcome {
  std::vector<int> loaded = std::vector<int>(3, 0);
  int errors = 0;
  int wrong = 0;
  std::vector<std::string> error_messages;
};

// Forks a child that runs `writes` (which loops for ever) and SIGKILLs it
// after `delay`; the child must die from the kill, not from a failed write.
void kill_writer_after(const std::function<void()>& writes, std::chrono::microseconds delay) {
  const pid_t pid = ::fork();
  REQUIRE(pid >= 0);
  if (pid == 0) {
    try {
      writes();
    } catch (...) {
      ::_exit(3);
    }
    ::_exit(4);
  }
  std::this_thread::sleep_for(delay);
  ::kill(pid, SIGKILL);
  int status = 0;
  ::waitpid(pid, &status, 0);
  REQUIRE(WIFSIGNALED(status));
}

// Runs `kills` rounds: fork a child that calls write(i) for i = 1, 2, 1, 2, ...
// forever; kill it after a random delay in [0, window); then load().
Outcome torture(int kills, const std::function<void(int)>& write, const std::function<TensorDict()>& load,
                const std::vector<TensorDict>& vs, std::chrono::microseconds window) {
  Outcome out;
  std::mt19937 rng(12345);
  std::uniform_int_distribution<int64_t> delay(0, window.count());
  for (int k = 0; k < kills; ++k) {
    kill_writer_after(
        [&] {
          for (int i = 0;; ++i) write(1 + (i + k) % 2);
        },
        std::chrono::microseconds(delay(rng)));
    try {
      TensorDict td = load();
      int which = -1;
      for (int v = 0; v < 3; ++v)
        if (same(td, vs[static_cast<std::size_t>(v)])) which = v;
      if (which < 0) {
        ++out.wrong;
      } else {
        ++out.loaded[static_cast<std::size_t>(which)];
      }
    } catch (const std::exception& e) {
      ++out.errors;
      if (out.error_messages.size() < 5) out.error_messages.emplace_back(e.what());
    }
  }
  return out;
}

std::chrono::microseconds time_one(const std::function<void()>& f) {
  const auto t0 = std::chrono::steady_clock::now();
  f();
  return std::chrono::duration_cast<std::chrono::microseconds>(std::chrono::steady_clock::now() - t0);
}

void report(const char* what, const Outcome& o, int kills) {
  WARN(what << ": " << kills << " kills: loaded v0 " << o.loaded[0] << ", v1 " << o.loaded[1] << ", v2 "
            << o.loaded[2] << "; clear errors " << o.errors << "; wrong data " << o.wrong);
  for (const auto& m : o.error_messages) WARN("error: " << m);
}

}  // namespace

TEST_CASE("memmap writes killed midway leave a complete tree [crash]", "[crash]") {
  const auto vs = versions();
  const fs::path dir = scratch("crash_memmap");
  const std::string prefix = (dir / "tree").string();
  vs[0].memmap(prefix);  // the state on disk before the torture
  const auto one = time_one([&] { vs[1].memmap((dir / "timing").string()); });
  const int kills = kills_per_format();
  const Outcome o = torture(
      kills, [&](int v) { vs[static_cast<std::size_t>(v)].memmap(prefix); },
      [&] { return TensorDict::load_memmap(prefix); }, vs, 5 * one);
  report("memmap", o, kills);
  CHECK(o.wrong == 0);
  CHECK(o.errors == 0);  // the atomic directory exchange never shows a missing tree
  // Staging directories of killed writers are removed by the next write.
  vs[1].memmap(prefix);
  int leftovers = 0;
  for (const auto& e : fs::directory_iterator(dir))
    if (e.path().filename().string().find(".tc-staging.") != std::string::npos) ++leftovers;
  CHECK(leftovers == 0);
  CHECK(same(TensorDict::load_memmap(prefix), vs[1]));
  tensordict::remove_tree(dir);
}

// Rows [begin, begin + n) of an endless buffer: values follow the global row,
// so a tree holds exactly rows [0, size) or it is wrong.
TensorDict buffer_rows(int64_t begin, int64_t n) {
  auto ramp = [&](int64_t width, at::ScalarType dtype) {
    return (at::arange(begin * width, (begin + n) * width, at::kLong).remainder(100003)).reshape({n, width}).to(dtype);
  };
  TensorDict nested({{"b", ramp(300, at::kLong)}, {"flag", ramp(3, at::kLong).remainder(2).to(at::kBool)}}, {n});
  return TensorDict({{"a", ramp(2048, at::kFloat)}, {"nested", nested}}, {n});
}

TEST_CASE("append_memmap killed midway leaves a complete tree of whole appends [crash]", "[crash]") {
  constexpr int64_t kBase = 8, kRows = 4;
  const fs::path dir = scratch("crash_append");
  const std::string prefix = (dir / "tree").string();
  buffer_rows(0, kBase).memmap(prefix);
  const auto one = time_one([&] {
    buffer_rows(0, kBase).memmap((dir / "timing").string());
    tensordict::append_memmap((dir / "timing").string(), buffer_rows(kBase, kRows));
  });
  const int kills = kills_per_format();
  std::mt19937 rng(54321);
  std::uniform_int_distribution<int64_t> delay(0, 5 * one.count());
  int whole = 0, wrong = 0, errors = 0;
  int64_t rows = kBase;
  for (int k = 0; k < kills; ++k) {
    // Appends for ever, each right after what the tree holds.
    kill_writer_after(
        [&] {
          for (int64_t at = rows;; at += kRows) tensordict::append_memmap(prefix, buffer_rows(at, kRows));
        },
        std::chrono::microseconds(delay(rng)));
    try {
      const TensorDict td = TensorDict::load_memmap(prefix);
      const int64_t size = td.batch_size()[0];
      const bool ok = size >= rows && (size - kBase) % kRows == 0 &&
                      td.get_td("nested").batch_size() == at::IntArrayRef{size} && same(td, buffer_rows(0, size));
      ok ? ++whole : ++wrong;
      rows = size;
    } catch (const std::exception& e) {
      ++errors;
      WARN("error: " << e.what());
    }
  }
  WARN("append_memmap: " << kills << " kills: whole trees " << whole << " (" << (rows - kBase) / kRows
                         << " appends kept); clear errors " << errors << "; wrong data " << wrong);
  CHECK(wrong == 0);
  CHECK(errors == 0);
  // The next append removes killed writers' staging directories and writes
  // over the bytes they added past the tree's rows.
  tensordict::append_memmap(prefix, buffer_rows(rows, kRows));
  CHECK(same(TensorDict::load_memmap(prefix), buffer_rows(0, rows + kRows)));
  int leftovers = 0;
  for (const auto& e : fs::directory_iterator(dir))
    if (e.path().filename().string().find(".tc-staging.") != std::string::npos) ++leftovers;
  CHECK(leftovers == 0);
  tensordict::remove_tree(dir);
}

TEST_CASE("h5 writes killed midway leave a complete file [crash]", "[crash]") {
  const auto vs = versions();
  const fs::path dir = scratch("crash_h5");
  const std::string path = (dir / "data.h5").string();
  vs[0].to_h5(path).close();
  const auto one = time_one([&] { vs[1].to_h5((dir / "timing.h5").string()).close(); });
  const int kills = kills_per_format();
  const Outcome o = torture(
      kills, [&](int v) { vs[static_cast<std::size_t>(v)].to_h5(path).close(); },
      [&] { return tensordict::PersistentTensorDict::from_h5(path).to_tensordict(); }, vs, 3 * one);
  report("h5", o, kills);
  CHECK(o.wrong == 0);
  CHECK(o.errors == 0);
  vs[1].to_h5(path).close();
  int leftovers = 0;
  for (const auto& e : fs::directory_iterator(dir))
    if (e.path().filename().string().find(".tc-staging.") != std::string::npos) ++leftovers;
  CHECK(leftovers == 0);
  tensordict::remove_tree(dir);
}

TEST_CASE("a half-written memmap tree gives a clear error naming the file", "[crash]") {
  const auto vs = versions();
  const fs::path dir = scratch("half_memmap");
  const std::string prefix = (dir / "tree").string();
  vs[1].memmap(prefix);
  // What an old-style in-place writer killed midway leaves: a data file cut short.
  fs::resize_file(fs::path(prefix) / "nested" / "b.memmap", 1000);
  try {
    (void)TensorDict::load_memmap(prefix);
    FAIL("a truncated data file loaded");
  } catch (const std::runtime_error& e) {
    const std::string m = e.what();
    CHECK(m.find("b.memmap") != std::string::npos);
    CHECK(m.find("truncated") != std::string::npos);
  }
  // A level whose meta.json never got written.
  fs::remove(fs::path(prefix) / "nested" / "meta.json");
  try {
    (void)TensorDict::load_memmap(prefix);
    FAIL("a level without meta.json loaded");
  } catch (const std::exception& e) {
    CHECK(std::string(e.what()).find("meta.json") != std::string::npos);
  }
  tensordict::remove_tree(dir);
}
