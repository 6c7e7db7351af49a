// AOTIModule's cost per call over the AOTInductor loader it wraps: the same
// package (aoti_package.py: ten [64, 8] inputs summed into y) called through
// the loader with a ready std::vector<at::Tensor> (`/loader`) and through
// AOTIModule on a TensorDict holding the ten inputs (`/module`: gathers by
// key, checks dtype and shape, writes y back). Target: the difference is at
// most 2 us. The package's path comes from $TENSORCLASS_BENCH_AOTI_PACKAGE.
#include <ATen/ATen.h>
#include <benchmark/benchmark.h>

#include <tensordict/nn/aoti.h>
#include <tensordict/tensordict.h>

#include <cstdio>
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

}  // namespace

BENCHMARK(BM_aoti_call_loader)->Name("BM_aoti_call/loader");
BENCHMARK(BM_aoti_call_module)->Name("BM_aoti_call/module");
BENCHMARK_MAIN();
