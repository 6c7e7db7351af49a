// Shared data and baselines of the benchmarks (see docs/benchmarks.md).
//
// Every op is registered as a group: `BM_<op>/loop`, the same work written by
// hand as a loop over the ten at::Tensors, then our variants
// (`/tensordict`, `/tensordict_nested`, `/tensorclass`, ...). The loop runs in
// the same process as what it is compared with, so report.py's ratios are
// taken within one run.
#pragma once

#include <ATen/ATen.h>
#include <ATen/Parallel.h>
#include <benchmark/benchmark.h>
#include <malloc.h>
#if __has_include(<valgrind/callgrind.h>)
#include <valgrind/callgrind.h>
#endif

#include <algorithm>
#include <cstdlib>
#include <functional>
#include <string>
#include <utility>
#include <vector>

namespace bench {

using namespace at::indexing;

inline constexpr int64_t kBatch = 64;
inline constexpr int64_t kFeature = 8;
inline constexpr int kLeaves = 10;

using Leaves = std::vector<at::Tensor>;

// Ten fresh [batch, 8] float32 leaves.
inline Leaves make_leaves(int64_t batch = kBatch) {
  Leaves out;
  for (int i = 0; i < kLeaves; ++i) out.push_back(at::randn({batch, kFeature}));
  return out;
}

// The index operands, built once (their cost is not part of any op).
struct Indices {
  at::Tensor long_index = at::randperm(kBatch).slice(0, 0, kBatch / 2);
  at::Tensor mask = at::rand({kBatch}) > 0.5;
};
inline const Indices& indices() {
  static const Indices idx;
  return idx;
}

// Starts callgrind's count, or stops it and dumps it as `name`; nothing
// outside callgrind.
inline void count_instructions(bool start, const std::string& name) {
#if __has_include(<valgrind/callgrind.h>)
  CALLGRIND_TOGGLE_COLLECT;
  if (!start) CALLGRIND_DUMP_STATS_AT(name.c_str());
#else
  (void)start;
  (void)name;
#endif
}

// The cases, kept until register_all(): a group's loop and variants then
// run next to each other, so allocator and cache state drift between far-apart
// cases does not enter their ratio.
struct Case {
  std::string op, variant;
  std::function<void(benchmark::State&)> body;
};
inline std::vector<Case>& cases() {
  static std::vector<Case> all;
  return all;
}

// Adds `fn` as a benchmark body; `fn` returns what DoNotOptimize keeps.
// Under callgrind (instructions.py, run with --collect-atstart=no), only the
// loop is counted, and each case is dumped on its own, named after it; the
// client requests are a few instructions outside the loop otherwise.
template <class Fn>
void add(const std::string& op, const std::string& variant, Fn fn) {
  cases().push_back({op, variant, [fn, name = "BM_" + op + "/" + variant](benchmark::State& state) mutable {
                       count_instructions(true, name);
                       for (auto _ : state) {
                         auto result = fn();
                         benchmark::DoNotOptimize(result);
                       }
                       count_instructions(false, name);
                     }});
}

// Fixes glibc malloc's thresholds. By default they adapt to what was freed
// before: a 128 KiB result (a stack64 leaf) is then mmapped in one run and
// taken from the heap in the next, and the loop and ours swing by 30% from
// run to run. Fixed, every case allocates from the heap the same way.
inline void steady_malloc() {
  mallopt(M_MMAP_THRESHOLD, 64 << 20);
  mallopt(M_TRIM_THRESHOLD, 256 << 20);
}

// Registers every case, grouped by op in the order ops were first added.
// With TENSORCLASS_BENCH_ITERATIONS=N, each case runs exactly N iterations
// (no calibration runs): instructions.py counts instructions per iteration so.
inline void register_all() {
  const char* fixed = std::getenv("TENSORCLASS_BENCH_ITERATIONS");
  std::vector<std::string> ops;
  for (const auto& c : cases()) {
    if (std::find(ops.begin(), ops.end(), c.op) == ops.end()) ops.push_back(c.op);
  }
  for (const auto& op : ops) {
    for (const auto& c : cases()) {
      if (c.op != op) continue;
      auto* b = benchmark::RegisterBenchmark(("BM_" + c.op + "/" + c.variant).c_str(), c.body);
      if (fixed) b->Iterations(std::stoll(fixed));
    }
  }
}

// The hand-written loops: fn per leaf, results collected in a vector.
template <class Fn>
Leaves each(const Leaves& leaves, Fn&& fn) {
  Leaves out;
  out.reserve(leaves.size());
  for (const auto& t : leaves) out.push_back(fn(t));
  return out;
}

// Registers the loop baselines of every leaf-wise op; `add_ours(op)` is then
// called by the program for its variants. Kept here so that the tensordict and
// tensorclass programs time the same loops.
// The operands must outlive the run (the benchmarks keep pointers to them).
inline void add_loops(const Leaves& a_, const Leaves& b_, const std::vector<Leaves>& many_) {
  const Leaves* pa = &a_;
  const Leaves* pb = &b_;
  const std::vector<Leaves>* pm = &many_;
  const Indices* idx = &indices();
  // The source of index_put_slice, sliced once (as tensordict's is).
  const auto* half = new Leaves(each(b_, [](const at::Tensor& t) { return t.slice(0, 0, kBatch / 2); }));  // never freed
  add("index_int", "loop", [=] { return each(*pa, [](const at::Tensor& t) { return t.select(0, 3); }); });
  add("index_slice", "loop", [=] { return each(*pa, [](const at::Tensor& t) { return t.slice(0, 8, 40); }); });
  add("index_long", "loop", [=] { return each(*pa, [=](const at::Tensor& t) { return t.index({idx->long_index}); }); });
  // tensordict computes a mask's nonzero once; the naive loop does it per leaf.
  add("index_mask", "loop", [=] { return each(*pa, [=](const at::Tensor& t) { return t.index({idx->mask}); }); });
  add("index_put_slice", "loop", [=] {
    for (std::size_t i = 0; i < pa->size(); ++i) (*pa)[i].slice(0, 0, kBatch / 2).copy_((*half)[i]);
    return 0;
  });
  add("stack2", "loop", [=] {
    Leaves out;
    for (std::size_t i = 0; i < pa->size(); ++i) out.push_back(at::stack({(*pa)[i], (*pb)[i]}, 0));
    return out;
  });
  add("stack64", "loop", [=] {
    Leaves out;
    std::vector<at::Tensor> parts(pm->size());
    for (std::size_t i = 0; i < pa->size(); ++i) {
      for (std::size_t j = 0; j < pm->size(); ++j) parts[j] = (*pm)[j][i];
      out.push_back(at::stack(parts, 0));
    }
    return out;
  });
  add("cat2", "loop", [=] {
    Leaves out;
    for (std::size_t i = 0; i < pa->size(); ++i) out.push_back(at::cat({(*pa)[i], (*pb)[i]}, 0));
    return out;
  });
  add("to_float64", "loop", [=] { return each(*pa, [](const at::Tensor& t) { return t.to(at::kDouble); }); });
  add("clone", "loop", [=] { return each(*pa, [](const at::Tensor& t) { return t.clone(); }); });
  add("apply_mul2", "loop", [=] { return each(*pa, [](const at::Tensor& t) { return t * 2; }); });
  add("reshape", "loop", [=] { return each(*pa, [](const at::Tensor& t) { return t.reshape({8, 8, kFeature}); }); });
  add("unbind0", "loop", [=] {
    std::vector<std::vector<at::Tensor>> out;
    for (const auto& t : *pa) out.push_back(t.unbind(0));
    return out;
  });
  // Construction: allocating the ten leaves, then (ours) wrapping them.
  add("construct", "loop", [] { return each(Leaves(kLeaves), [](const at::Tensor&) { return at::empty({kBatch, kFeature}); }); });
}

// A `stack64` operand: 64 slices of batch [64].
inline std::vector<Leaves> make_many() {
  std::vector<Leaves> out;
  for (int i = 0; i < 64; ++i) out.push_back(make_leaves());
  return out;
}

// The operands every leaf-wise program uses, built once after
// steady_malloc(), with the loop baselines registered first.
struct Operands {
  Leaves a, b;
  std::vector<Leaves> many;
};
inline const Operands& setup() {
  steady_malloc();
  static const Operands ops{make_leaves(), make_leaves(), make_many()};
  add_loops(ops.a, ops.b, ops.many);
  return ops;
}

// Registers every case and runs what the command line selects. The JSON
// context names libtorch's intra-op thread count (python_ops.py runs Python
// tensordict with as many) and the bool mask's true count.
inline int run(int argc, char** argv) {
  register_all();
  benchmark::AddCustomContext("torch_num_threads", std::to_string(at::get_num_threads()));
  benchmark::AddCustomContext("index_mask_true", std::to_string(indices().mask.sum().item<int64_t>()));
  benchmark::Initialize(&argc, argv);
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}

}  // namespace bench
