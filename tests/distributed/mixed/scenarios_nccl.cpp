// The C++ side of scenario "nccl" (run_mixed.py --backend nccl, one GPU per
// rank, 2 ranks): tensordict's protocol on CUDA tensors against a Python
// rank in one NCCL group. Rank 0 sends per leaf (init_tag 2) and with
// init_remote, rank 1 receives; then every rank all_reduces. The metadata
// and storage travel on this rank's GPU, passed explicitly as Python's
// `device=`.
#include <ATen/ops/arange.h>

#include <cstdlib>

#include "mixed_rank.h"

namespace {

namespace td = tensordict;

// mixed_rank.py's nccl_sample(v), on `device`: the tensordict's own device,
// which consolidate() (init_remote) puts the storage on, as in Python.
td::TensorDict nccl_sample(int64_t v, at::Device device) {
  return td::TensorDict(
      {{"obs", (at::arange(6, at::kFloat).reshape({2, 3}) + double(v))},
       {"nested", td::TensorDict({{"act", at::arange(2, at::kLong) * (v + 1)}}, {2})}},
      {2}, device);
}

void expect_sample(const td::TensorDict& got, int64_t v, const std::string& what) {
  const td::TensorDict want = nccl_sample(v, at::kCPU);
  mixed::expect(got.get("obs").is_cuda(), what + ": on CUDA");
  mixed::expect_equal(got.get("obs"), want.get("obs"), what + ": obs");
  mixed::expect_equal(got.get({"nested", "act"}), want.get({"nested", "act"}), what + ": nested.act");
}

mixed::Register nccl("nccl", [](const mixed::Rank& r) {
  const char* local = std::getenv("LOCAL_RANK");
  const at::Device gpu(at::kCUDA, static_cast<c10::DeviceIndex>(local ? std::atoi(local) : r.rank));
  if (r.rank == 0) {
    td::send(nccl_sample(3, gpu), r.group, 1, {.init_tag = 2});
    td::init_remote(nccl_sample(4, gpu), r.group, 1, {.device = gpu});
  } else {
    td::TensorDict got = nccl_sample(0, gpu);
    td::recv(got, r.group, 0, {.init_tag = 2});
    expect_sample(got, 3, "recv");
    const td::TensorDict remote = td::from_remote_init(r.group, 0, {.device = gpu});
    mixed::expect(remote.is_consolidated(), "from_remote_init: consolidated");
    expect_sample(remote, 4, "from_remote_init");
  }
  // all_reduce: obs sums to world * arange + sum(r), act to arange * sum(r + 1).
  td::TensorDict mine = nccl_sample(r.rank, gpu);
  td::all_reduce(mine, r.group);
  const int64_t w = r.world;
  mixed::expect_equal(mine.get("obs"), at::arange(6, at::kFloat).reshape({2, 3}) * double(w) + double(w * (w - 1) / 2),
                      "all_reduce: obs");
  mixed::expect_equal(mine.get({"nested", "act"}), at::arange(2, at::kLong) * (w * (w + 1) / 2), "all_reduce: act");
});

}  // namespace
