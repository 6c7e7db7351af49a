// tensordict::rl::ReplayBuffer against TorchRL's TensorDictReplayBuffer over a
// LazyMemmapStorage (rl_torchrl.py, run once at start with TorchRL 0.14.1),
// and against the hand-written libtorch loop over the leaves, in one run.
//
// The element is a continuous-control transition: observation [17], action
// [6], next/{observation [17], reward [1], done [1], terminated [1]}; the
// storage holds 100,000 of them in a scratch dir; extend writes 256 rows,
// sample draws 256. Every process runs libtorch on one thread.
//
//   BM_extend/loop, BM_sample/loop   index_put_ / index_select on each leaf
//                                    of the storage, the cursor kept by hand
//   BM_extend/rl, BM_sample/rl       tensordict::rl::ReplayBuffer; the
//                                    vs_torchrl counter is TorchRL's time per
//                                    call over this one (a speed-up)
//
// The interpreter: $TENSORCLASS_BENCH_TORCHRL_PYTHON (./dev bench-rl sets
// .venv-torchrl's), else the one CMake was given (TENSORCLASS_TORCHRL_PYTHON).
#include <ATen/ATen.h>
#include <ATen/Parallel.h>
#include <benchmark/benchmark.h>
#include <tensordict/rl.h>
#include <tensordict/tensordict.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

namespace {

namespace td = tensordict;
constexpr int64_t kMaxSize = 100'000;
constexpr int64_t kBatch = 256;

const std::filesystem::path& scratch_root() {
  static const std::filesystem::path root = std::filesystem::temp_directory_path() / "bench_rl";
  return root;
}

td::TensorDict rows(int64_t n) {
  return td::TensorDict({{"observation", at::randn({n, 17})},
                         {"action", at::randn({n, 6})},
                         {td::NestedKey({"next", "observation"}), at::randn({n, 17})},
                         {td::NestedKey({"next", "reward"}), at::randn({n, 1})},
                         {td::NestedKey({"next", "done"}), at::zeros({n, 1}, at::kBool)},
                         {td::NestedKey({"next", "terminated"}), at::zeros({n, 1}, at::kBool)}},
                        {n});
}

// TorchRL's microseconds per call, measured once.
struct TorchRL {
  double extend_us = 0, sample_us = 0;
};
const TorchRL& torchrl() {
  static const TorchRL figures = [] {
    const char* env = std::getenv("TENSORCLASS_BENCH_TORCHRL_PYTHON");
    const std::string python = env != nullptr && *env != '\0' ? env : TENSORCLASS_BENCH_TORCHRL_PYTHON;
    const std::string command = "'" + python + "' '" TENSORCLASS_BENCH_RL_SCRIPT "' '" +
                                (scratch_root() / "torchrl").string() + "' " + std::to_string(kMaxSize) + " " +
                                std::to_string(kBatch) + " 2>/dev/null";
    std::unique_ptr<FILE, int (*)(FILE*)> pipe(::popen(command.c_str(), "r"), ::pclose);
    std::string out;
    char buffer[512];
    while (pipe && std::fgets(buffer, sizeof buffer, pipe.get()) != nullptr) out += buffer;
    TorchRL f;
    try {
      // The last line: TorchRL logs to stdout before it.
      const auto end = out.find_last_not_of('\n');
      const auto begin = out.rfind('\n', end);
      const auto json = nlohmann::json::parse(out.substr(begin == std::string::npos ? 0 : begin + 1));
      f.extend_us = json.at("extend_us").get<double>();
      f.sample_us = json.at("sample_us").get<double>();
    } catch (const std::exception&) {
      std::fprintf(stderr, "bench_rl: rl_torchrl.py printed no figures (%s)\n", out.c_str());
    }
    return f;
  }();
  return figures;
}

// A full buffer, as TorchRL's is when it is timed.
td::rl::ReplayBuffer<> filled_buffer(const std::vector<td::TensorDict>& data) {
  const auto dir = scratch_root() / "rl";
  std::filesystem::remove_all(dir);
  td::rl::ReplayBuffer<> rb(td::rl::LazyMemmapStorage(kMaxSize, {.scratch_dir = dir.string()}), {.seed = 0});
  for (int64_t i = 0; i <= kMaxSize / kBatch; ++i) rb.extend(data[i % data.size()]);
  return rb;
}

std::vector<td::TensorDict> batches() {
  std::vector<td::TensorDict> out;
  for (int i = 0; i < 8; ++i) out.push_back(rows(kBatch));
  return out;
}

// Times the state loop of `body` itself (wall clock, as rl_torchrl.py
// does) and sets vs_torchrl: TorchRL's time per call over this one's.
template <class Body>
void timed_against(benchmark::State& state, double torchrl_us, Body body) {
  const auto start = std::chrono::steady_clock::now();
  for (auto _ : state) body();
  const double us = std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - start).count() /
                    double(state.iterations());
  if (torchrl_us > 0) state.counters["vs_torchrl"] = torchrl_us / us;
}

void BM_extend_rl(benchmark::State& state) {
  at::set_num_threads(1);
  const auto data = batches();
  auto rb = filled_buffer(data);
  std::size_t i = 0;
  timed_against(state, torchrl().extend_us, [&] { benchmark::DoNotOptimize(rb.extend(data[i++ % data.size()])); });
}

void BM_sample_rl(benchmark::State& state) {
  at::set_num_threads(1);
  const auto data = batches();
  auto rb = filled_buffer(data);
  timed_against(state, torchrl().sample_us, [&] { benchmark::DoNotOptimize(rb.sample(kBatch)); });
}

// The libtorch loop: one [max_size, ...] tensor per leaf, written and read
// by index, the cursor kept by hand.
struct LoopStorage {
  std::vector<at::Tensor> leaves;
  int64_t cursor = 0, len = 0;
};
LoopStorage loop_storage(const std::vector<td::TensorDict>& data) {
  LoopStorage s;
  for (const auto& leaf : data[0].values({.include_nested = true, .leaves_only = true})) {
    auto sizes = leaf.tensor().sizes().vec();
    sizes[0] = kMaxSize;
    s.leaves.push_back(at::zeros(sizes, leaf.tensor().options()));
  }
  return s;
}
std::vector<at::Tensor> leaves_of(const td::TensorDict& td) {
  std::vector<at::Tensor> out;
  for (const auto& leaf : td.values({.include_nested = true, .leaves_only = true})) out.push_back(leaf.tensor());
  return out;
}

void BM_extend_loop(benchmark::State& state) {
  at::set_num_threads(1);
  const auto data = batches();
  std::vector<std::vector<at::Tensor>> data_leaves;
  for (const auto& d : data) data_leaves.push_back(leaves_of(d));
  LoopStorage s = loop_storage(data);
  std::size_t i = 0;
  for (auto _ : state) {
    const auto& rows = data_leaves[i++ % data_leaves.size()];
    const at::Tensor index = at::arange(s.cursor, s.cursor + kBatch, at::kLong).remainder_(kMaxSize);
    for (std::size_t l = 0; l < rows.size(); ++l) s.leaves[l].index_put_({index}, rows[l]);
    s.cursor = (s.cursor + kBatch) % kMaxSize;
    s.len = std::min(s.len + kBatch, kMaxSize);
    benchmark::ClobberMemory();
  }
}

void BM_sample_loop(benchmark::State& state) {
  at::set_num_threads(1);
  const auto data = batches();
  LoopStorage s = loop_storage(data);
  s.len = kMaxSize;
  at::Generator g = at::detail::createCPUGenerator(0);
  for (auto _ : state) {
    const at::Tensor index = at::randint(0, s.len, {kBatch}, g, at::kLong);
    std::vector<at::Tensor> out;
    for (const auto& leaf : s.leaves) out.push_back(leaf.index_select(0, index));
    benchmark::DoNotOptimize(out);
  }
}

}  // namespace

BENCHMARK(BM_extend_loop)->Name("BM_extend/loop")->Unit(benchmark::kMicrosecond);
BENCHMARK(BM_extend_rl)->Name("BM_extend/rl")->Unit(benchmark::kMicrosecond);
BENCHMARK(BM_sample_loop)->Name("BM_sample/loop")->Unit(benchmark::kMicrosecond);
BENCHMARK(BM_sample_rl)->Name("BM_sample/rl")->Unit(benchmark::kMicrosecond);
BENCHMARK_MAIN();
