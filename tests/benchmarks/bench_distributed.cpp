// all_reduce and a send/recv round trip of tensordicts between two processes
// (Gloo on loopback) vs the hand-written per-leaf loop of c10d calls, in the
// same run.
//
// The program forks its peer (rank 1) before any libtorch op; the benchmarks
// run in rank 0. Before each timed run rank 0 tells the peer which case and
// how many iterations (a control message outside the timing), and the peer
// mirrors exactly those iterations.
//
// Cases, for 10 leaves ([64, 8] float32, flat) and 100 leaves (ten nested
// tensordicts of ten):
//   BM_all_reduce_<n>/loop           allreduce of each leaf: all posted, then all waited
//   BM_all_reduce_<n>/tensordict     tensordict::all_reduce
//   BM_all_reduce_<n>/consolidated   the same on a consolidated tensordict (its storage, in place)
//   BM_send_recv_<n>/loop            rank 0 sends each leaf, rank 1 receives each and sends it back
//   BM_send_recv_<n>/tensordict      tensordict::send then tensordict::recv, both sides
//   BM_send_recv_<n>/consolidated    the same, consolidated (no packing copy)
#include <ATen/ATen.h>
#include <ATen/Parallel.h>
#include <benchmark/benchmark.h>
#include <sys/wait.h>
#include <torch/csrc/distributed/c10d/FileStore.hpp>
#include <unistd.h>

#include <filesystem>
#include <string>
#include <vector>

#include "tensordict/distributed.h"
#include "tensordict/remove_tree.h"

namespace {

namespace td = tensordict;
using td::TensorDict;

enum Case : int64_t { kStop = -1, kAllReduceLoop, kAllReduceTd, kAllReduceConsolidated, kSendLoop, kSendTd, kSendConsolidated };
constexpr int kControlTag = 1 << 20;

// 10 leaves flat, or 100 as ten nested tensordicts of ten.
TensorDict make(int leaves) {
  auto level = [] {
    std::vector<TensorDict::Entry> entries;
    for (int i = 0; i < 10; ++i) entries.emplace_back("leaf" + std::to_string(i), at::randn({64, 8}));
    return TensorDict(std::move(entries), {64});
  };
  if (leaves == 10) return level();
  std::vector<TensorDict::Entry> entries;
  for (int i = 0; i < leaves / 10; ++i) entries.emplace_back("level" + std::to_string(i), level());
  return TensorDict(std::move(entries), {64});
}

std::vector<at::Tensor> leaves_of(const TensorDict& td) {
  std::vector<at::Tensor> out;
  for (const auto& v : td.values({.include_nested = true, .leaves_only = true})) out.push_back(v.tensor());
  return out;
}

struct Data {
  TensorDict plain, consolidated;
  std::vector<at::Tensor> leaves;
  explicit Data(int n) : plain(make(n)), consolidated(plain.clone().consolidate()), leaves(leaves_of(plain)) {}
};

void wait_all(std::vector<c10::intrusive_ptr<c10d::Work>>& works) {
  for (auto& w : works) w->wait();
  works.clear();
}

void loop_all_reduce(const td::ProcessGroupPtr& g, std::vector<at::Tensor>& leaves) {
  std::vector<c10::intrusive_ptr<c10d::Work>> works;
  for (auto& t : leaves) {
    std::vector<at::Tensor> one{t};
    works.push_back(g->allreduce(one));
  }
  wait_all(works);
}

void loop_transfer(const td::ProcessGroupPtr& g, std::vector<at::Tensor>& leaves, bool send, int peer) {
  std::vector<c10::intrusive_ptr<c10d::Work>> works;
  for (std::size_t i = 0; i < leaves.size(); ++i) {
    std::vector<at::Tensor> one{leaves[i]};
    works.push_back(send ? g->send(one, peer, static_cast<int>(i)) : g->recv(one, peer, static_cast<int>(i)));
  }
  wait_all(works);
}

// One iteration of `c` on `rank` (0 starts each round trip, 1 answers).
void step(int64_t c, const td::ProcessGroupPtr& g, Data& d, int rank) {
  const int peer = 1 - rank;
  switch (c) {
    case kAllReduceLoop: loop_all_reduce(g, d.leaves); break;
    case kAllReduceTd: td::all_reduce(d.plain, g, {.protocol = td::WireProtocol::packed}); break;
    case kAllReduceConsolidated: td::all_reduce(d.consolidated, g, {.protocol = td::WireProtocol::packed}); break;
    case kSendLoop:
      loop_transfer(g, d.leaves, rank == 0, peer);
      loop_transfer(g, d.leaves, rank != 0, peer);
      break;
    case kSendTd:
    case kSendConsolidated: {
      TensorDict& t = c == kSendTd ? d.plain : d.consolidated;
      // The packed protocol (C++ ranks only); bench_mixed measures tensordict's against Python.
      const td::SendOptions packed{.protocol = td::WireProtocol::packed};
      if (rank == 0) {
        td::send(t, g, peer, packed);
        td::recv(t, g, peer, packed);
      } else {
        td::recv(t, g, peer, packed);
        td::send(t, g, peer, packed);
      }
      break;
    }
  }
}

td::ProcessGroupPtr g_group;
Data* g_data[2] = {nullptr, nullptr};  // 10 and 100 leaves

void command(int64_t c, int64_t size_index, int64_t iterations) {
  std::vector<at::Tensor> msg{at::tensor(std::vector<int64_t>{c, size_index, iterations})};
  g_group->send(msg, 1, kControlTag)->wait();
}

void run_case(benchmark::State& state, int64_t c, int size_index) {
  command(c, size_index, static_cast<int64_t>(state.max_iterations));
  Data& d = *g_data[size_index];
  for (auto _ : state) step(c, g_group, d, 0);
}

void peer(const td::ProcessGroupPtr& g, Data* data[2]) {
  for (;;) {
    std::vector<at::Tensor> msg{at::empty({3}, at::kLong)};
    g->recv(msg, 0, kControlTag)->wait();
    const int64_t* m = msg[0].data_ptr<int64_t>();
    if (m[0] == kStop) return;
    for (int64_t i = 0; i < m[2]; ++i) step(m[0], g, *data[m[1]], 1);
  }
}

void register_all() {
  const char* sizes[2] = {"10", "100"};
  for (int s = 0; s < 2; ++s) {
    const std::string n = sizes[s];
    const std::vector<std::pair<std::string, int64_t>> all = {
        {"BM_all_reduce_" + n + "/loop", kAllReduceLoop},     {"BM_all_reduce_" + n + "/tensordict", kAllReduceTd},
        {"BM_all_reduce_" + n + "/consolidated", kAllReduceConsolidated}, {"BM_send_recv_" + n + "/loop", kSendLoop},
        {"BM_send_recv_" + n + "/tensordict", kSendTd},       {"BM_send_recv_" + n + "/consolidated", kSendConsolidated},
    };
    for (const auto& [name, c] : all) {
      benchmark::RegisterBenchmark(name.c_str(), [c = c, s](benchmark::State& st) { run_case(st, c, s); })
          ->UseRealTime()
          ->Unit(benchmark::kMicrosecond);
    }
  }
}

}  // namespace

int main(int argc, char** argv) {
  const std::filesystem::path dir =
      std::filesystem::temp_directory_path() / ("tc_bench_distributed_" + std::to_string(::getpid()));
  std::filesystem::create_directories(dir);
  const std::string store_path = (dir / "store").string();
  const pid_t child = ::fork();  // before any libtorch op: the peer inherits no busy thread pool
  const int rank = child == 0 ? 1 : 0;
  at::set_num_threads(1);
  auto store = c10::make_intrusive<c10d::FileStore>(store_path, 2);
  g_group = td::gloo_process_group(store, rank, 2, std::chrono::seconds(60));
  at::manual_seed(0);
  Data ten(10), hundred(100);
  g_data[0] = &ten;
  g_data[1] = &hundred;
  if (rank == 1) {
    peer(g_group, g_data);
    std::_Exit(0);
  }
  benchmark::Initialize(&argc, argv);
  register_all();
  benchmark::RunSpecifiedBenchmarks();
  command(kStop, 0, 0);
  int status = 0;
  ::waitpid(child, &status, 0);
  tensordict::remove_tree(dir);
  return WIFEXITED(status) && WEXITSTATUS(status) == 0 ? 0 : 1;
}
