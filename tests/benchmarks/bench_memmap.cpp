// Memmap load time against data size: load_memmap maps files and reads no
// data, so loading a 1 GiB tree costs what loading a 1 MiB tree costs.
//
// Each tree has the same structure (16 float32 leaves, 4 of them in a nested
// level) and only the leaf sizes differ. Trees are written once, before the
// timed loops, under the build tree (or $TENSORCLASS_BENCH_DIR).
#include <ATen/ATen.h>
#include <nlohmann/json.hpp>
#include <benchmark/benchmark.h>
#include <tensordict/tensordict.h>

#include <cstdlib>
#include <filesystem>
#include <string>

namespace fs = std::filesystem;
using tensordict::TensorDict;

namespace {

constexpr int kLeaves = 16;

fs::path bench_dir() {
  const char* env = std::getenv("TENSORCLASS_BENCH_DIR");
  return fs::path(env ? env : TENSORCLASS_BENCH_TMP);
}

// A tree of `total_bytes` bytes of float32 leaves, written once per size.
std::string tree_of(int64_t total_bytes) {
  const fs::path dir = bench_dir() / ("tree_" + std::to_string(total_bytes));
  if (fs::exists(dir / "meta.json")) return dir.string();
  const int64_t rows = total_bytes / kLeaves / 4 / 256;
  TensorDict nested({}, {rows});
  TensorDict td({}, {rows});
  for (int i = 0; i < kLeaves; ++i) {
    at::Tensor leaf = at::full({rows, 256}, static_cast<float>(i));
    if (i < 4) {
      nested.set("leaf" + std::to_string(i), leaf);
    } else {
      td.set("leaf" + std::to_string(i), leaf);
    }
  }
  td.set("nested", nested);
  td.memmap(dir.string());
  return dir.string();
}

void BM_LoadMemmap(benchmark::State& state, int64_t bytes) {
  const std::string dir = tree_of(bytes);
  for (auto _ : state) {
    TensorDict loaded = TensorDict::load_memmap(dir);
    benchmark::DoNotOptimize(loaded);
  }
  state.counters["tree_bytes"] = static_cast<double>(bytes);
  state.counters["leaves"] = kLeaves;
}

// Load plus reading one element of every leaf: only the touched pages are read.
void BM_LoadMemmapTouchOne(benchmark::State& state, int64_t bytes) {
  const std::string dir = tree_of(bytes);
  for (auto _ : state) {
    TensorDict loaded = TensorDict::load_memmap(dir);
    float sum = 0;
    for (const auto& key : loaded.keys({.include_nested = true, .leaves_only = true})) sum += loaded.get(key).data_ptr<float>()[0];
    benchmark::DoNotOptimize(sum);
  }
}

// For contrast: reading every byte (what a copying loader would do).
void BM_LoadMemmapReadAll(benchmark::State& state, int64_t bytes) {
  const std::string dir = tree_of(bytes);
  for (auto _ : state) {
    TensorDict loaded = TensorDict::load_memmap(dir);
    double sum = 0;
    for (const auto& key : loaded.keys({.include_nested = true, .leaves_only = true})) sum += loaded.get(key).sum().item<double>();
    benchmark::DoNotOptimize(sum);
  }
  state.SetBytesProcessed(state.iterations() * bytes);
}

constexpr int64_t kMiB = int64_t{1} << 20;
constexpr int64_t kGiB = int64_t{1} << 30;

// Cases are named BM_<op>/<tree size> for report.py, which checks the 1 GiB
// load against the 1 MiB one.
void register_sizes(const std::string& op, void (*fn)(benchmark::State&, int64_t), benchmark::TimeUnit unit) {
  benchmark::RegisterBenchmark(("BM_" + op + "/1mib").c_str(), fn, kMiB)->Unit(unit);
  benchmark::RegisterBenchmark(("BM_" + op + "/1gib").c_str(), fn, kGiB)->Unit(unit);
}

}  // namespace

int main(int argc, char** argv) {
  register_sizes("memmap_load", BM_LoadMemmap, benchmark::kMicrosecond);
  register_sizes("memmap_load_touch_one", BM_LoadMemmapTouchOne, benchmark::kMicrosecond);
  register_sizes("memmap_load_read_all", BM_LoadMemmapReadAll, benchmark::kMillisecond);
  benchmark::Initialize(&argc, argv);
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
}
