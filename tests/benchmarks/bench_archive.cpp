// Loading a .tdz archive against tensordict's TensorDict.load of the same
// file (archive_tensordict.py, run once with $TENSORCLASS_BENCH_PYTHON, the
// .venv's tensordict 0.15.3): vs_tensordict is tensordict's time per load
// over this one's. A stored archive's leaves view one mapping of the file,
// so loading 64 MiB costs what loading 1 MiB costs.
//
// Each archive has 100 float32 leaves (10 of them in a nested level) and the
// same structure at every size; they are written once, before the timed
// loops, under the build tree (or $TENSORCLASS_BENCH_DIR).
#include <ATen/ATen.h>
#include <ATen/Parallel.h>
#include <benchmark/benchmark.h>
#include <tensordict/tensordict.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <map>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>

namespace fs = std::filesystem;
using tensordict::TensorDict;

namespace {

constexpr int kLeaves = 100;
constexpr int64_t kMiB = int64_t{1} << 20;
const int64_t kSizes[] = {1 * kMiB, 64 * kMiB};

fs::path bench_dir() {
  const char* env = std::getenv("TENSORCLASS_BENCH_DIR");
  return fs::path(env ? env : TENSORCLASS_BENCH_TMP);
}

// The archive of `total_bytes` bytes of float32 leaves, written once per size.
std::string archive_of(int64_t total_bytes) {
  const fs::path path = bench_dir() / ("archive_" + std::to_string(total_bytes) + ".tdz");
  if (fs::exists(path)) return path.string();
  const int64_t rows = total_bytes / kLeaves / 4 / 64;
  TensorDict nested({}, {rows});
  TensorDict td({}, {rows});
  for (int i = 0; i < kLeaves; ++i) {
    at::Tensor leaf = at::full({rows, 64}, static_cast<float>(i));
    (i < 10 ? nested : td).set("leaf" + std::to_string(i), leaf);
  }
  td.set("nested", nested);
  td.save(path.string());
  return path.string();
}

// tensordict's microseconds per load of each archive, measured once.
const std::map<std::string, double>& tensordict_figures() {
  static const std::map<std::string, double> figures = [] {
    std::map<std::string, double> out;
    const char* python = std::getenv("TENSORCLASS_BENCH_PYTHON");
    if (python == nullptr || *python == '\0') {
      std::fprintf(stderr, "bench_archive: TENSORCLASS_BENCH_PYTHON is not set: no comparison with tensordict\n");
      return out;
    }
    std::string command = "'" + std::string(python) + "' '" TENSORCLASS_BENCH_ARCHIVE_SCRIPT "'";
    for (int64_t bytes : kSizes) command += " '" + archive_of(bytes) + "'";
    std::unique_ptr<FILE, int (*)(FILE*)> pipe(::popen((command + " 2>/dev/null").c_str(), "r"), ::pclose);
    std::string text;
    char buffer[512];
    while (pipe && std::fgets(buffer, sizeof buffer, pipe.get()) != nullptr) text += buffer;
    try {
      const nlohmann::json json = nlohmann::json::parse(text);
      for (const auto& [path, us] : json.items()) out[path] = us.get<double>();
    } catch (const std::exception&) {
      std::fprintf(stderr, "bench_archive: archive_tensordict.py printed no figures (%s)\n", text.c_str());
    }
    return out;
  }();
  return figures;
}

void BM_ArchiveLoad(benchmark::State& state, int64_t bytes) {
  at::set_num_threads(1);
  const std::string path = archive_of(bytes);
  const auto& python = tensordict_figures();
  const auto start = std::chrono::steady_clock::now();
  for (auto _ : state) {
    TensorDict loaded = TensorDict::load_memmap(path);
    benchmark::DoNotOptimize(loaded);
  }
  const double us = std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - start).count() /
                    double(state.iterations());
  if (const auto it = python.find(path); it != python.end()) state.counters["vs_tensordict"] = it->second / us;
}

}  // namespace

BENCHMARK_CAPTURE(BM_ArchiveLoad, 1MiB, 1 * kMiB)->Unit(benchmark::kMicrosecond);
BENCHMARK_CAPTURE(BM_ArchiveLoad, 64MiB, 64 * kMiB)->Unit(benchmark::kMicrosecond);

BENCHMARK_MAIN();
