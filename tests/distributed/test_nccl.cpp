// init_process_group("nccl") and every call on an NCCL group.
//
// Without a GPU (every build): the backend's availability and its messages,
// and the CPU tensors an NCCL group refuses, named before anything moves
// (checked on a group that only says it is NCCL: nothing reaches c10d).
// With GPUs (test cases named "nccl (CUDA...)", tagged [cuda]; they skip
// with a warning where the build has no NCCL or the machine too few GPUs):
// a group of one rank on one GPU runs every collective with exact values;
// two ranks (two GPUs: NCCL refuses two ranks on one) send, receive and
// init_remote. CUDA is only ever touched in forked children (run_ranks),
// never in this process, so that forking stays safe.
#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

#include <sys/wait.h>
#include <torch/cuda.h>
#include <unistd.h>

#include <algorithm>

#include "../message_of.h"
#include "../temp_dir.h"
#include "samples.h"

using namespace td_test;
namespace td = tensordict;

namespace {

// What CMake built (TENSORCLASS_BUILD_NCCL), independently of the library.
#ifdef TENSORCLASS_TEST_NCCL
constexpr bool kBuiltWithNccl = true;
#else
constexpr bool kBuiltWithNccl = false;
#endif
// torch's nccl2 engine (torch 2.15+) binds the group to LOCAL_RANK's device at
// once; the classic ProcessGroupNCCL (older torch) does not read LOCAL_RANK.
#if __has_include(<torch/csrc/distributed/c10d/nccl2/ProcessGroupNCCL.hpp>)
constexpr bool kHasNccl2 = true;
#else
constexpr bool kHasNccl2 = false;
#endif

const std::string kCpuRefused =
    "is on cpu, and an NCCL group moves CUDA tensors only (move the tensordict to a CUDA device, or pass a CUDA "
    "device)";

// A group that reports NCCL as its backend and implements no call: what the
// library refuses before any c10d call is testable without a GPU (a call
// that got through would fail with c10d's "does not support" instead).
class NcclNamedGroup : public c10d::ProcessGroup {
 public:
  NcclNamedGroup(int rank, int size) : c10d::ProcessGroup(rank, size) {}
  const std::string getBackendName() const override { return "nccl"; }
};

td::ProcessGroupPtr nccl_named(int rank = 0, int size = 2) { return c10::make_intrusive<NcclNamedGroup>(rank, size); }

// The number of CUDA devices, counted in a forked child so that this
// process never initializes CUDA (a child forked after that could not use it).
int cuda_devices() {
  const pid_t pid = ::fork();
  if (pid == 0) _exit(std::min<int>(static_cast<int>(torch::cuda::device_count()), 100));
  int status = 0;
  if (pid < 0 || ::waitpid(pid, &status, 0) != pid || !WIFEXITED(status)) return 0;
  return WEXITSTATUS(status);
}

// Whether the CUDA cases can run here with `needed` GPUs; warns why not.
bool cuda_ready(int needed) {
  if (!td::is_nccl_available()) {
    WARN("skipped: this build has no NCCL (a CUDA libtorch with c10d NCCL is needed)");
    return false;
  }
  const int found = cuda_devices();
  if (found < needed) {
    WARN("skipped: needs " << needed << " CUDA device(s), found " << found);
    return false;
  }
  return true;
}

// An NCCL group of `world` ranks over a FileStore at `path`.
td::ProcessGroupPtr nccl_group(const std::string& path, int rank, int world) {
  return td::init_process_group({.backend = "nccl",
                                 .init_method = "file://" + path,
                                 .rank = rank,
                                 .world_size = world,
                                 .timeout = std::chrono::seconds(30)});
}

// run_ranks with a FileStore path for init_process_group, fresh for the case.
std::string run_with_store(int world, const std::function<void(const std::string& store, const Rank&)>& body) {
  TempDir dir;
  const std::string store = (dir.path() / "store").string();
  return run_ranks(world, [&](const Rank& r) { body(store, r); });
}

at::Device cuda(int index) { return at::Device(at::kCUDA, static_cast<c10::DeviceIndex>(index)); }

}  // namespace

TEST_CASE("nccl: is_nccl_available says what this build has, and init_process_group names the backends",
          "[distributed][nccl]") {
  CHECK(td::is_nccl_available() == kBuiltWithNccl);
  const std::string available = kBuiltWithNccl ? "'gloo', 'nccl'" : "'gloo'";
  CHECK(message_of([] { td::init_process_group({.backend = "mpi"}); }) ==
        "init_process_group: backend 'mpi' is not available in tensorclass::distributed (available: " + available +
            ")");
}

TEST_CASE("nccl: a build without NCCL refuses the backend with a ValueError saying so", "[distributed][nccl]") {
  if (kBuiltWithNccl) {
    WARN("skipped: this build has NCCL");
    return;
  }
  const auto call = [] { td::init_process_group({.backend = "nccl", .rank = 0, .world_size = 1}); };
  CHECK_THROWS_AS(call(), td::ValueError);
  CHECK(message_of(call) ==
        "init_process_group: backend 'nccl' is not available: this build of tensorclass::distributed has no NCCL, as "
        "its libtorch has no c10d NCCL (build against a CUDA libtorch such as PyPI's torch; available: 'gloo')");
}

TEST_CASE("nccl: a build with NCCL checks its options and needs a CUDA device", "[distributed][nccl]") {
  if (!kBuiltWithNccl) {
    WARN("skipped: this build has no NCCL");
    return;
  }
  CHECK(message_of([] {
          td::init_process_group({.backend = "nccl", .rank = 0, .world_size = 1, .timeout = std::chrono::seconds(-1)});
        }) == "init_process_group: the timeout must be positive, got -1000 ms");
  // On a machine without a GPU the group cannot bind a device (torch's _nccl2_device).
  const std::string failures = run_with_store(1, [](const std::string& path, const Rank&) {
    if (torch::cuda::device_count() > 0) return;  // the CUDA cases below cover that machine
    ::unsetenv("TORCH_DIST_USE_NCCL2");
    check(message_of([&] { nccl_group(path, 0, 1); }) ==
              "init_process_group(rank 0 of 1): nccl requires at least one CUDA device",
          "the message without a CUDA device");
  });
  REQUIRE(failures == "");
}

TEST_CASE("nccl: a CPU leaf meeting an NCCL group is a ValueError naming the call and the key, before anything moves",
          "[distributed][nccl]") {
  const auto group = nccl_named();
  const TensorDict host = sample(1);
  // tensordict's order: ('a', 'x') is the first leaf sent; all_reduce goes in insertion order ('b' first).
  CHECK(message_of([&] { td::send(host, group, 1); }) == "send to rank 1: key ('a', 'x') " + kCpuRefused);
  CHECK(message_of([&] { td::recv(host, group, 1); }) == "recv from rank 1: key ('a', 'x') " + kCpuRefused);
  CHECK(message_of([&] { td::isend(host, group, 1, {.init_tag = 4}); }) == "isend to rank 1: key ('a', 'x') " + kCpuRefused);
  CHECK(message_of([&] { td::irecv(host, group, 1, {.pseudo_rand = true}); }) ==
        "irecv from rank 1: key ('a', 'x') " + kCpuRefused);
  CHECK(message_of([&] { td::send(host, group, 1, {.consolidated = true}); }) ==
        "send(consolidated=True) to rank 1: the consolidated storage " + kCpuRefused);
  CHECK(message_of([&] { td::all_reduce(host, group); }) == "all_reduce: key 'b' " + kCpuRefused);
  CHECK(message_of([&] { td::reduce(host, group, 0); }) == "reduce to rank 0: key ('a', 'x') " + kCpuRefused);
  CHECK(message_of([&] { td::all_reduce(host, group, {.bucket_bytes = 1024}); }) == "all_reduce: key 'b' " + kCpuRefused);
  CHECK_THROWS_AS(td::all_reduce(host, group), td::ValueError);
  // The packed protocol.
  CHECK(message_of([&] { td::send(host, group, 1, packed()); }) == "send to rank 1 (tag 0): the message " + kCpuRefused);
  CHECK(message_of([&] { td::recv(host, group, 1, packed()); }) ==
        "recv from rank 1 (tag 0): the tensordict " + kCpuRefused);
  CHECK(message_of([&] { td::all_reduce(host, group, packed_reduce()); }) == "all_reduce: the tensordict " + kCpuRefused);
  // The consolidated protocol.
  CHECK(message_of([&] { td::init_remote(host, group, 1); }) ==
        "init_remote to rank 1: the consolidated storage " + kCpuRefused);
  CHECK(message_of([&] { td::from_remote_init(group, 1); }) ==
        "from_remote_init from rank 1: the storage (RemoteInitOptions::device) " + kCpuRefused);
  CHECK(message_of([&] { td::broadcast(host, group, 0); }) ==
        "broadcast from rank 0: the consolidated storage " + kCpuRefused);
  CHECK(message_of([&] { td::broadcast(host, group, 1, {.device = at::Device(at::kCPU)}); }) ==
        "broadcast from rank 1: the device asked for " + kCpuRefused);
  CHECK(message_of([&] { td::all_gather(host, group); }) == "all_gather: the consolidated storage " + kCpuRefused);
  // Object lists on a device the caller names.
  std::vector<td::Json> objects{td::Json(1)};
  CHECK(message_of([&] { td::send_object_list(objects, group, 1, at::Device(at::kCPU)); }) ==
        "send_object_list to rank 1: the object list's device " + kCpuRefused);
  CHECK(message_of([&] { td::recv_object_list(objects, group, 1, at::Device(at::kCPU)); }) ==
        "recv_object_list from rank 1: the object list's device " + kCpuRefused);
  CHECK(message_of([&] { td::broadcast_object_list(objects, group, 0, at::Device(at::kCPU)); }) ==
        "broadcast_object_list from rank 0: the object list's device " + kCpuRefused);
}

TEST_CASE("nccl: gather_and_stack in tensordict's protocol is refused on an NCCL group (tensordict pickles the "
          "tensordicts there)",
          "[distributed][nccl]") {
  const auto group = nccl_named(0, 2);
  TensorDict rows({{"x", at::zeros({1, 3})}}, {1});
  const auto call = [&] { td::gather_and_stack(rows, group, 0); };
  CHECK_THROWS_AS(call(), td::NotImplementedError);
  CHECK(message_of(call) ==
        "gather_and_stack to rank 0: a group whose backend is nccl gathers pickled tensordicts "
        "(torch.distributed.gather_object), which C++ cannot read; use a Gloo group, or the packed protocol between "
        "C++ ranks");
}

TEST_CASE("nccl (CUDA, 1 GPU): every collective of a one-rank group, exact values, storage kept on CUDA",
          "[distributed][nccl][cuda]") {
  if (!cuda_ready(1)) return;
  const std::string failures = run_with_store(1, [](const std::string& path, const Rank&) {
    const auto group = nccl_group(path, 0, 1);
    check(group->getBackendName() == "nccl" && group->getRank() == 0 && group->getSize() == 1, "the group");
    const at::Device gpu = cuda(0);
    // Expected values: sample(2) computed on the CPU, per tensor (one rank: every reduction is the identity).
    const TensorDict expected = sample(2);

    TensorDict summed = TensorDict(sample(2).to(gpu));
    td::all_reduce(summed, group);
    check(summed.get("b").is_cuda(), "all_reduce keeps the leaves on CUDA");
    check_equal(TensorDict(summed.to(at::kCPU)), expected, "all_reduce");
    TensorDict maxed = TensorDict(sample(2).to(gpu));
    td::all_reduce(maxed, group, {.op = c10d::ReduceOp::MAX, .bucket_bytes = 64});
    check_equal(TensorDict(maxed.to(at::kCPU)), expected, "all_reduce(MAX, bucket_bytes)");
    TensorDict reduced = TensorDict(sample(2).to(gpu));
    td::reduce(reduced, group, 0);
    check_equal(TensorDict(reduced.to(at::kCPU)), expected, "reduce");

    const TensorDict sent = td::broadcast(TensorDict(sample(2).to(gpu)), group, 0);
    check(sent.is_consolidated() && sent.consolidated_storage()->is_cuda(), "broadcast: consolidated on CUDA");
    check_equal(TensorDict(sent.to(at::kCPU)), expected, "broadcast");

    const auto gathered = td::all_gather(TensorDict(sample(2).to(gpu)), group);
    check(gathered.size() == 1, "all_gather: one tensordict per rank");
    check(gathered[0].is_consolidated() && gathered[0].consolidated_storage()->is_cuda(),
          "all_gather: consolidated on CUDA");
    check(gathered[0].get(td::NestedKey({"a", "y"})).is_cuda(), "all_gather: leaves on CUDA");
    check_equal(TensorDict(gathered[0].to(at::kCPU)), expected, "all_gather");

    // gather_and_stack: the packed protocol (tensordict's pickles on NCCL);
    // with one rank the destination's stack has no row and stays as it is.
    TensorDict rows({{"x", at::zeros({0, 3}, at::TensorOptions().device(gpu))}}, {0});
    td::gather_and_stack(rows, group, 0, {.protocol = td::WireProtocol::packed});
    check(rows.get("x").sizes() == at::IntArrayRef({0, 3}) && rows.get("x").is_cuda(), "gather_and_stack");

    // Object lists travel on the current CUDA device, as torch's do under NCCL.
    std::vector<td::Json> objects{td::Json{{"k", 3}}, td::Json("text")};
    td::broadcast_object_list(objects, group, 0);
    check(objects[0] == td::Json{{"k", 3}} && objects[1] == "text", "broadcast_object_list");
    std::vector<td::Json> everyone(1);
    td::all_gather_object(everyone, td::Json(7), group);
    check(everyone[0] == 7, "all_gather_object");

    // A CPU tensordict on this real NCCL group: refused, naming the key.
    check(message_of([&] { td::all_reduce(sample(2), group); }) == "all_reduce: key 'b' " + kCpuRefused,
          "a CPU tensordict");
  });
  REQUIRE(failures == "");
}

TEST_CASE("nccl (CUDA, 1 GPU): LOCAL_RANK picks the device and must be an integer", "[distributed][nccl][cuda]") {
  if (!cuda_ready(1)) return;
  if (!kHasNccl2) {
    WARN("skipped: this libtorch has no nccl2 engine, and its classic NCCL backend does not read LOCAL_RANK");
    return;
  }
  const std::string failures = run_with_store(1, [](const std::string& path, const Rank&) {
    ::unsetenv("TORCH_DIST_USE_NCCL2");
    ::setenv("LOCAL_RANK", "x1", 1);
    check(message_of([&] { nccl_group(path, 0, 1); }) ==
              "init_process_group(rank 0 of 1): LOCAL_RANK must be a non-negative integer, got 'x1'",
          "LOCAL_RANK not an integer");
  });
  REQUIRE(failures == "");
}

TEST_CASE("nccl (CUDA, 2 GPUs): send, recv and init_remote between two ranks", "[distributed][nccl][cuda]") {
  if (!cuda_ready(2)) return;
  const std::string failures = run_with_store(2, [](const std::string& path, const Rank& r) {
    ::unsetenv("LOCAL_RANK");
    const auto group = nccl_group(path, r.rank, 2);  // rank r on cuda:r (rank % device count)
    const at::Device gpu = cuda(r.rank);
    if (r.rank == 0) {
      check(td::send(TensorDict(sample(3).to(gpu)), group, 1, {.init_tag = 5}) == 9, "send returns the last tag");
      td::send(TensorDict(sample(4).to(gpu)), group, 1, {.pseudo_rand = true});
      td::init_remote(TensorDict(sample(5).to(gpu)), group, 1, {.device = gpu});
    } else {
      TensorDict got = TensorDict(sample_template().to(gpu));
      check(td::recv(got, group, 0, {.init_tag = 5}) == 9, "recv returns the last tag");
      check_equal(TensorDict(got.to(at::kCPU)), sample(3), "recv");
      td::recv(got, group, 0, {.pseudo_rand = true});
      check_equal(TensorDict(got.to(at::kCPU)), sample(4), "recv(pseudo_rand)");
      const TensorDict remote = td::from_remote_init(group, 0, {.device = gpu});
      check(remote.is_consolidated() && remote.consolidated_storage()->device() == gpu,
            "from_remote_init: consolidated on this rank's GPU");
      check_equal(TensorDict(remote.to(at::kCPU)), sample(5), "from_remote_init");
    }
  });
  REQUIRE(failures == "");
}
