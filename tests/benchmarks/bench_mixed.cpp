// tensordict's protocol from a C++ sender to a Python receiver, against
// Python to Python (tensordict 0.15.3 at both ends), in one run.
//
// The payload and both Python ends are the "bench" scenario of
// tests/distributed/mixed (mixed_rank.py): 100 float32 leaves of [64, 8], ten
// nested tensordicts of ten; per leaf (100 messages a transfer) or
// consolidated (the storage as one message). Each benchmark starts its
// processes on a free loopback port, meets them through init_process_group,
// waits for the receiver's "ready", then times `iterations` transfers up to
// the receiver's "received them all" (so a sender that only queues its
// messages is not counted as done).
//
//   BM_python_to_python/<mode>  a Python sender and a Python receiver; the
//                               sender times itself the same way and prints
//                               it: reported through manual time
//   BM_cpp_to_python/<mode>     this process sends (tensordict::send) to a
//                               Python receiver; its vs_python counter is the
//                               ratio to the fastest BM_python_to_python/<mode>
//                               of this run
//   BM_loop_to_python/<mode>    the hand-written libtorch loop of c10d sends
//                               putting the same messages on the wire
//
// The interpreter: $TENSORCLASS_BENCH_PYTHON (./dev bench-mixed sets the
// venv's), else the one CMake was given (TENSORCLASS_INTEROP_PYTHON).
#include <ATen/ATen.h>
#include <benchmark/benchmark.h>
#include <netinet/in.h>
#include <spawn.h>
#include <fcntl.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <regex>
#include <sstream>
#include <stdexcept>
#include <string>
#include <vector>

#include "tensordict/distributed.h"

extern char** environ;

namespace {

namespace td = tensordict;

constexpr int kIterations = 50;

std::string python() {
  const char* env = std::getenv("TENSORCLASS_BENCH_PYTHON");
  return env != nullptr && *env != '\0' ? env : TENSORCLASS_BENCH_PYTHON;
}

int free_port() {
  const int s = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t len = sizeof addr;
  if (::bind(s, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0 ||
      ::getsockname(s, reinterpret_cast<sockaddr*>(&addr), &len) != 0)
    throw std::runtime_error("bench_mixed: no free loopback port");
  ::close(s);
  return ntohs(addr.sin_port);
}

// One rank of mixed_rank.py's "bench" scenario, its output in `log`.
struct PythonRank {
  pid_t pid = -1;
  std::string log;

  PythonRank(int rank, int port, const std::string& mode, const std::string& log_path) : log(log_path) {
    std::vector<std::string> env_text;
    for (char** e = environ; *e != nullptr; ++e) env_text.emplace_back(*e);
    env_text.push_back("MASTER_ADDR=127.0.0.1");
    env_text.push_back("MASTER_PORT=" + std::to_string(port));
    env_text.push_back("RANK=" + std::to_string(rank));
    env_text.push_back("WORLD_SIZE=2");
    env_text.push_back("GLOO_SOCKET_IFNAME=lo");
    const std::vector<std::string> args_text{python(), TENSORCLASS_MIXED_RANK_PY, "bench", mode,
                                             std::to_string(kIterations)};
    std::vector<char*> args, env;
    for (const auto& a : args_text) args.push_back(const_cast<char*>(a.c_str()));
    for (const auto& e : env_text) env.push_back(const_cast<char*>(e.c_str()));
    args.push_back(nullptr);
    env.push_back(nullptr);
    posix_spawn_file_actions_t out;
    posix_spawn_file_actions_init(&out);
    posix_spawn_file_actions_addopen(&out, STDOUT_FILENO, log.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    posix_spawn_file_actions_adddup2(&out, STDOUT_FILENO, STDERR_FILENO);
    const int rc = posix_spawn(&pid, args[0], &out, nullptr, args.data(), env.data());
    posix_spawn_file_actions_destroy(&out);
    if (rc != 0) throw std::runtime_error("bench_mixed: cannot start " + args_text[0]);
  }

  // Waits for the rank to exit; its output, or an error with it.
  std::string join() {
    int status = 0;
    ::waitpid(pid, &status, 0);
    std::ifstream in(log);
    std::stringstream text;
    text << in.rdbuf();
    if (!WIFEXITED(status) || WEXITSTATUS(status) != 0)
      throw std::runtime_error("bench_mixed: the Python rank failed:\n" + text.str());
    return text.str();
  }
};

std::string log_path(const std::string& name) {
  return (std::filesystem::temp_directory_path() / ("bench_mixed_" + std::to_string(::getpid()) + "_" + name))
      .string();
}

// 100 float32 leaves of [64, 8] in ten nested tensordicts of ten (mixed_rank.py's bench_td).
td::TensorDict bench_td() {
  td::TensorDict root({}, {});
  for (int i = 0; i < 10; ++i) {
    td::TensorDict group({}, {});
    for (int j = 0; j < 10; ++j) group.set("leaf" + std::to_string(j), at::full({64, 8}, float(i * 10 + j)));
    root.set("group" + std::to_string(i), group);
  }
  return root;
}

// Python -> Python's fastest run so far, per transfer, by mode: noise on a
// shared machine only adds time, so the fastest run is the steady reference.
std::map<std::string, double> g_python_seconds;

void python_to_python(benchmark::State& state, const std::string& mode) {
  const int port = free_port();
  PythonRank sender(0, port, mode, log_path("sender")), receiver(1, port, mode, log_path("receiver"));
  const std::string out = sender.join();
  receiver.join();
  std::smatch found;
  if (!std::regex_search(out, found, std::regex("BENCH sender_per_iteration_us=([0-9.]+)")))
    throw std::runtime_error("bench_mixed: the Python sender printed no timing:\n" + out);
  const double seconds = std::stod(found[1]) * 1e-6;
  auto [best, first] = g_python_seconds.emplace(mode, seconds);
  if (!first) best->second = std::min(best->second, seconds);
  for (auto _ : state) state.SetIterationTime(seconds);
}

void cpp_to_python(benchmark::State& state, const std::string& mode) {
  const bool consolidated = mode == "consolidated";
  td::TensorDict t = bench_td();
  if (consolidated) t = t.consolidate();
  const td::SendOptions options{.consolidated = consolidated};
  const int port = free_port();
  PythonRank receiver(1, port, mode, log_path("receiver"));
  auto group = td::init_process_group(
      {.init_method = "tcp://127.0.0.1:" + std::to_string(port), .rank = 0, .world_size = 2});
  std::vector<at::Tensor> go{at::zeros({1})};
  group->recv(go, 1, 999)->wait();  // the receiver is ready
  std::int64_t i = 0;
  double total = 0;
  for (auto _ : state) {
    const auto start = std::chrono::steady_clock::now();
    td::send(t, group, 1, options);
    if (++i == kIterations) group->recv(go, 1, 998)->wait();  // it received them all
    const double took = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    state.SetIterationTime(took);
    total += took;
  }
  receiver.join();
  const auto reference = g_python_seconds.find(mode);
  if (reference != g_python_seconds.end()) state.counters["vs_python"] = total / kIterations / reference->second;
}

// The hand-written libtorch loop that puts the same messages on the wire:
// each leaf in tensordict's order (keys sorted at each level: group0..9,
// leaf0..9) with tag i, each send waited before the next, or the storage as
// one message.
void loop_to_python(benchmark::State& state, const std::string& mode) {
  const bool consolidated = mode == "consolidated";
  td::TensorDict t = bench_td();
  std::vector<at::Tensor> messages;
  if (consolidated) {
    messages.push_back(*t.consolidate().consolidated_storage());
  } else {
    for (int i = 0; i < 10; ++i)
      for (int j = 0; j < 10; ++j)
        messages.push_back(t.get(td::NestedKey({"group" + std::to_string(i), "leaf" + std::to_string(j)})));
  }
  const int port = free_port();
  PythonRank receiver(1, port, mode, log_path("receiver"));
  auto group = td::init_process_group(
      {.init_method = "tcp://127.0.0.1:" + std::to_string(port), .rank = 0, .world_size = 2});
  std::vector<at::Tensor> go{at::zeros({1})};
  group->recv(go, 1, 999)->wait();
  std::int64_t i = 0;
  for (auto _ : state) {
    const auto start = std::chrono::steady_clock::now();
    for (std::size_t m = 0; m < messages.size(); ++m) {
      std::vector<at::Tensor> one{messages[m]};
      group->send(one, 1, static_cast<int>(m))->wait();
    }
    if (++i == kIterations) group->recv(go, 1, 998)->wait();
    state.SetIterationTime(std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count());
  }
  receiver.join();
}

void register_all() {
  for (const std::string mode : {"per_leaf", "consolidated"}) {
    // Python's first: cpp_to_python's ratio reads its figure.
    benchmark::RegisterBenchmark(("BM_python_to_python/" + mode).c_str(), python_to_python, mode)
        ->Iterations(kIterations)->UseManualTime()->Unit(benchmark::kMillisecond);
    benchmark::RegisterBenchmark(("BM_cpp_to_python/" + mode).c_str(), cpp_to_python, mode)
        ->Iterations(kIterations)->UseManualTime()->Unit(benchmark::kMillisecond);
    benchmark::RegisterBenchmark(("BM_loop_to_python/" + mode).c_str(), loop_to_python, mode)
        ->Iterations(kIterations)->UseManualTime()->Unit(benchmark::kMillisecond);
  }
}

}  // namespace

int main(int argc, char** argv) {
  register_all();
  benchmark::Initialize(&argc, argv);
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}
