// AOTIModule's cost per call over the AOTInductor loader it wraps: the same
// package (aoti_package.py: ten [64, 8] inputs summed into y) called through
// the loader with a ready std::vector<at::Tensor> (`/loader`) and through
// AOTIModule on a TensorDict holding the ten inputs (`/module`: gathers by
// key, checks dtype and shape, writes y back). Target: the difference is at
// most 2 us. The package's path comes from $TENSORCLASS_BENCH_AOTI_PACKAGE.
//
// Live weights (BM_weights): to_module of a policy of about 1M float32
// parameters ($TENSORCLASS_BENCH_AOTI_MLP) against a memcpy of the same bytes
// (target: within 3x) and against what it replaces, export + compile + load
// of the same policy ($TENSORCLASS_BENCH_PYTHON runs aoti_package.py --mlp
// once). BM_mlp_call: a call of that policy exported with swappable weights
// (runtime constant folding) and without ($TENSORCLASS_BENCH_AOTI_FOLDED).
#include <ATen/ATen.h>
#include <benchmark/benchmark.h>

#include <tensordict/nn/aoti.h>
#include <tensordict/nn/params.h>
#include <tensordict/tensordict.h>

#include <chrono>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <cstdlib>
#include <memory>
#include <string>
#include <vector>

namespace {

std::shared_ptr<tensordict::nn::AOTIModuleImpl> module() {
  static const auto instance = [] {
    const char* path = std::getenv("TENSORCLASS_BENCH_AOTI_PACKAGE");
    if (!path) {
      std::fprintf(stderr, "bench_aoti: set TENSORCLASS_BENCH_AOTI_PACKAGE (tests/benchmarks/aoti_package.py)\n");
      std::exit(2);
    }
    return std::make_shared<tensordict::nn::AOTIModuleImpl>(path);
  }();
  return instance;
}

std::vector<at::Tensor> inputs() {
  std::vector<at::Tensor> out;
  for (int i = 0; i < 10; ++i) out.push_back(at::randn({64, 8}));
  return out;
}

void BM_aoti_call_loader(benchmark::State& state) {
  auto m = module();
  const std::vector<at::Tensor> in = inputs();
  for (auto _ : state) benchmark::DoNotOptimize(m->run_tensors(in));
}

void BM_aoti_call_module(benchmark::State& state) {
  auto m = module();
  const std::vector<at::Tensor> in = inputs();
  tensordict::TensorDict td(std::vector<tensordict::TensorDict::Entry>{}, {64});
  for (int i = 0; i < 10; ++i) td.set("x" + std::to_string(i), in[i]);
  for (auto _ : state) benchmark::DoNotOptimize(m->forward(td));
}

std::string env(const char* name) {
  const char* value = std::getenv(name);
  if (!value) {
    std::fprintf(stderr, "bench_aoti: set %s (see ./dev bench-aoti)\n", name);
    std::exit(2);
  }
  return value;
}

tensordict::nn::AOTIModule& mlp() {
  static tensordict::nn::AOTIModule instance(env("TENSORCLASS_BENCH_AOTI_MLP"));
  return instance;
}

// New weights for the policy, as a learner sends them.
tensordict::TensorDict new_weights() {
  return tensordict::nn::from_module(mlp()).apply([](const at::Tensor& t) { return t + 0.01; });
}

void BM_weights_to_module(benchmark::State& state) {
  const tensordict::TensorDict params = new_weights();
  for (auto _ : state) params.to_module(mlp()).release();
  int64_t bytes = 0;
  for (const auto& key : params.keys({.include_nested = true, .leaves_only = true})) bytes += params.get(key).nbytes();
  state.SetBytesProcessed(state.iterations() * bytes);
  state.counters["parameters"] = static_cast<double>(bytes / 4);
}

// The floor: the same bytes copied with memcpy, tensor by tensor, into
// buffers of their own.
void BM_weights_memcpy(benchmark::State& state) {
  const tensordict::TensorDict params = new_weights();
  std::vector<at::Tensor> from, to;
  for (const auto& key : params.keys({.include_nested = true, .leaves_only = true})) {
    from.push_back(params.get(key));
    to.push_back(at::empty_like(from.back()));
  }
  int64_t bytes = 0;
  for (auto _ : state) {
    bytes = 0;
    for (std::size_t i = 0; i < from.size(); ++i) {
      std::memcpy(to[i].data_ptr(), from[i].data_ptr(), from[i].nbytes());
      bytes += from[i].nbytes();
    }
    benchmark::ClobberMemory();
  }
  state.SetBytesProcessed(state.iterations() * bytes);
}

// What an update costs without to_module: export, compile and load the
// policy again (one run: it takes seconds).
void BM_weights_export_compile_load(benchmark::State& state) {
  const std::string python = env("TENSORCLASS_BENCH_PYTHON");
  const std::string script = env("TENSORCLASS_BENCH_AOTI_SCRIPT");
  const auto path = std::filesystem::temp_directory_path() / "bench_aoti_reexport.pt2";
  for (auto _ : state) {
    const auto start = std::chrono::steady_clock::now();
    const std::string command = "'" + python + "' '" + script + "' --mlp '" + path.string() + "'";
    if (std::system(command.c_str()) != 0) {
      state.SkipWithError("the export failed");
      break;
    }
    tensordict::nn::AOTIModule reloaded(path.string());
    benchmark::DoNotOptimize(reloaded);
    state.SetIterationTime(std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count());
  }
  std::filesystem::remove(path);
}

// A call of the policy at batch 16, with swappable weights (runtime
// constant folding) or folded at compile time.
void BM_mlp_call(benchmark::State& state, const char* package_variable) {
  tensordict::nn::AOTIModule policy(env(package_variable));
  const std::vector<at::Tensor> obs{at::randn({16, 32})};
  for (auto _ : state) benchmark::DoNotOptimize(policy->run_tensors(obs));
}

}  // namespace

BENCHMARK(BM_weights_to_module)->Name("BM_weights/to_module")->Unit(benchmark::kMicrosecond);
BENCHMARK(BM_weights_memcpy)->Name("BM_weights/memcpy")->Unit(benchmark::kMicrosecond);
BENCHMARK(BM_weights_export_compile_load)
    ->Name("BM_weights/export_compile_load")
    ->Iterations(1)
    ->UseManualTime()
    ->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(BM_mlp_call, swappable, "TENSORCLASS_BENCH_AOTI_MLP")->Name("BM_mlp_call/swappable");
BENCHMARK_CAPTURE(BM_mlp_call, folded, "TENSORCLASS_BENCH_AOTI_FOLDED")->Name("BM_mlp_call/folded");
BENCHMARK(BM_aoti_call_loader)->Name("BM_aoti_call/loader");
BENCHMARK(BM_aoti_call_module)->Name("BM_aoti_call/module");
BENCHMARK_MAIN();
