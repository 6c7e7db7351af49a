// Host <-> GPU moves of a tensordict against the hand-written per-leaf libtorch
// loop, in the same run (issue 16's table). Three sizes of float32 leaves:
// 10 x [64, 8], 100 x [256, 64] (6.5 MB) and 16 x [1024, 1024] (64 MiB).
//
//   BM_to_cuda_pageable_<size>/loop        t.to(cuda) per leaf, pageable sources
//                             /tensordict  td.to(cuda)
//   BM_to_cuda_pinned_nb_<size>/loop       t.to(cuda, non_blocking) per pinned leaf, one sync
//                              /tensordict td.pin_memory() (outside the timing), to(cuda, true), one sync
//   BM_to_cuda_consolidated_<size>/loop    the pinned loop again (the baseline of the consolidated move)
//                                 /tensordict  td.consolidate({.pin_memory = true}) (outside), to(cuda, true), sync
//   BM_to_cpu_<size>/loop                  t.to(cpu) per leaf
//                  /loop_nb                t.to(cpu, non_blocking) per leaf, one sync (Python's recipe)
//                  /tensordict             td_on_gpu.to(cpu)
//   BM_bus_h2d_<size>/memcpy               one copy_ of one flat pinned uint8 tensor of the same
//   BM_bus_d2h_<size>/memcpy               bytes to (from) the GPU, then sync: the bus bandwidth
//
// Every iteration ends with the data on its destination (a synchronisation
// inside the iteration); times are wall-clock (UseRealTime). Without a GPU the
// program says so and exits 0.
#include <ATen/ATen.h>
#include <tensordict/tensordict.h>

#include <cstdio>
#include <functional>
#include <string>
#include <vector>

#include "bench_common.h"

using tensordict::TensorDict;

namespace {

const at::Device kGpu(at::kCUDA, 0);
const at::Device kCpu(at::kCPU);

struct Size {
  std::string name;
  int leaves;
  int64_t rows, cols;
};

// The operands of one size, built once and alive for the whole run.
struct Data {
  std::vector<at::Tensor> pageable, pinned, on_gpu;
  TensorDict td, td_pinned, td_consolidated, td_on_gpu;
  at::Tensor flat_pinned, flat_gpu;
  int64_t bytes = 0;
};

Data* make_data(const Size& s) {
  auto* d = new Data;  // never freed
  std::vector<TensorDict::Entry> entries;
  for (int i = 0; i < s.leaves; ++i) {
    at::Tensor t = at::randn({s.rows, s.cols});
    d->pageable.push_back(t);
    d->pinned.push_back(t.pin_memory());
    d->on_gpu.push_back(t.to(kGpu));
    entries.emplace_back("l" + std::to_string(i), t);
    d->bytes += t.numel() * static_cast<int64_t>(t.element_size());
  }
  d->td = TensorDict(std::move(entries), {s.rows});
  d->td_pinned = d->td.pin_memory();
  d->td_consolidated = d->td.consolidate({.device = std::nullopt, .pin_memory = true, .non_blocking = false});
  d->td_on_gpu = TensorDict(d->td.to(kGpu));
  d->flat_pinned = at::empty({d->bytes}, at::TensorOptions().dtype(at::kByte).pinned_memory(true));
  d->flat_gpu = at::empty({d->bytes}, at::TensorOptions().dtype(at::kByte).device(kGpu));
  return d;
}

void add(const std::string& name, const Data* d, std::function<void()> body) {
  const int64_t bytes = d->bytes;
  benchmark::RegisterBenchmark(name.c_str(), [body, bytes](benchmark::State& state) {
    for (auto _ : state) body();
    state.SetBytesProcessed(state.iterations() * bytes);
  })->UseRealTime();
}

template <class Fn>
std::vector<at::Tensor> each(const std::vector<at::Tensor>& leaves, Fn&& fn) {
  std::vector<at::Tensor> out;
  out.reserve(leaves.size());
  for (const auto& t : leaves) out.push_back(fn(t));
  return out;
}

void add_size(const Size& s) {
  const Data* d = make_data(s);
  const std::string n = "_" + s.name;
  auto sync = [] { tensordict::synchronize(kGpu); };

  add("BM_to_cuda_pageable" + n + "/loop", d, [=] {
    auto out = each(d->pageable, [](const at::Tensor& t) { return t.to(kGpu); });
    sync();
    benchmark::DoNotOptimize(out);
  });
  add("BM_to_cuda_pageable" + n + "/tensordict", d, [=] { benchmark::DoNotOptimize(d->td.to(kGpu)); });

  auto pinned_loop = [=] {
    auto out = each(d->pinned, [](const at::Tensor& t) { return t.to(kGpu, /*non_blocking=*/true); });
    sync();
    benchmark::DoNotOptimize(out);
  };
  add("BM_to_cuda_pinned_nb" + n + "/loop", d, pinned_loop);
  add("BM_to_cuda_pinned_nb" + n + "/tensordict", d, [=] {
    auto out = d->td_pinned.to(kGpu, {.non_blocking = true});
    sync();
    benchmark::DoNotOptimize(out);
  });

  add("BM_to_cuda_consolidated" + n + "/loop", d, pinned_loop);
  add("BM_to_cuda_consolidated" + n + "/tensordict", d, [=] {
    auto out = d->td_consolidated.to(kGpu, {.non_blocking = true});
    sync();
    benchmark::DoNotOptimize(out);
  });

  add("BM_to_cpu" + n + "/loop", d, [=] { benchmark::DoNotOptimize(each(d->on_gpu, [](const at::Tensor& t) { return t.to(kCpu); })); });
  add("BM_to_cpu" + n + "/loop_nb", d, [=] {
    auto out = each(d->on_gpu, [](const at::Tensor& t) { return t.to(kCpu, /*non_blocking=*/true); });
    sync();
    benchmark::DoNotOptimize(out);
  });
  add("BM_to_cpu" + n + "/tensordict", d, [=] { benchmark::DoNotOptimize(d->td_on_gpu.to(kCpu)); });

  // The bus: what one cudaMemcpyAsync of the same bytes reaches.
  add("BM_bus_h2d" + n + "/memcpy", d, [=] {
    d->flat_gpu.copy_(d->flat_pinned, /*non_blocking=*/true);
    sync();
  });
  add("BM_bus_d2h" + n + "/memcpy", d, [=] {
    d->flat_pinned.copy_(d->flat_gpu, /*non_blocking=*/true);
    sync();
  });
}

}  // namespace

int main(int argc, char** argv) {
  if (!at::hasCUDA()) {
    std::printf("bench_device: skipped, no CUDA device (this libtorch has no CUDA support, or sees no GPU)\n");
    return 0;
  }
  bench::steady_malloc();
  for (const Size& s : {Size{"10x64x8", 10, 64, 8}, Size{"100x256x64", 100, 256, 64}, Size{"16x1024x1024", 16, 1024, 1024}}) add_size(s);
  return bench::run(argc, argv);
}
