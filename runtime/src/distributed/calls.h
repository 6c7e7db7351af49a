// c10d calls with this library's errors, and the state behind tensordict::Work (private).
#pragma once

#include <torch/csrc/distributed/c10d/Work.hpp>

#include <chrono>
#include <functional>
#include <string>
#include <utility>
#include <vector>

#include "tensordict/distributed.h"

namespace tensordict::dist {

// Rethrows what a c10d call or wait threw as RuntimeError prefixed with
// `context` ("recv from rank 1"), without libtorch's backtrace: a closed peer
// and the group's timeout read as Gloo words them.
[[noreturn]] void rethrow_c10d(const std::string& context);

template <class F>
auto guarded(const std::string& context, F&& f) -> decltype(f()) {
  try {
    return f();
  } catch (...) {
    rethrow_c10d(context);
  }
}

// A Gloo group as torch.distributed.init_process_group makes it: the backend
// meets through `backend_store`, the group keeps `group_store`, Gloo's
// devices come from GLOO_SOCKET_IFNAME (gloo_group.cpp).
ProcessGroupPtr gloo_group_for_torch(const c10::intrusive_ptr<c10d::Store>& group_store,
                                     const c10::intrusive_ptr<c10d::Store>& backend_store, int rank, int world_size,
                                     std::chrono::milliseconds timeout, const std::string& context);

// An NCCL group as torch.distributed.init_process_group("nccl") makes it
// (nccl_group.cpp, built only where libtorch has c10d NCCL): NCCL meets
// through `backend_store` ("cuda/"), the group keeps `group_store`.
ProcessGroupPtr nccl_group_for_torch(const c10::intrusive_ptr<c10d::Store>& group_store,
                                     const c10::intrusive_ptr<c10d::Store>& backend_store, int rank, int world_size,
                                     std::chrono::milliseconds timeout, const std::string& context);
// torch's default timeout of an NCCL group (10 minutes; Gloo's is 30).
std::chrono::milliseconds nccl_default_timeout();

// NCCL moves CUDA tensors only: a tensor on another device about to reach a
// group whose backend is NCCL is a ValueError naming `context` (the call)
// and `what` (the key, or "the consolidated storage"), before anything is
// posted, rather than c10d's "No backend type associated with device type"
// after the peers started (device_check.cpp).
void check_device(const ProcessGroupPtr& group, const at::Device& device, const std::string& context,
                  const std::string& what);
// What a peer announced it sends (`bytes` of `what`: "pickles", "a
// storage") against the call's max_receive_bytes, before anything is
// allocated for it: more is a ValueError naming `context` (the call), `peer`
// ("rank 1") and the size (object_lists.cpp).
void check_announced(int64_t bytes, int64_t max_receive_bytes, const std::string& context, const std::string& peer,
                     const char* what);
// Whether `group` moves CUDA tensors only (NCCL): per-leaf loops ask once.
bool cuda_only(const ProcessGroupPtr& group);

// One c10d work posted under `context`; its wait() goes through guarded().
struct Posted {
  c10::intrusive_ptr<c10d::Work> work;
  std::string context;
};

// Posts an all_reduce (`all`) or a reduce to `dst` of `t`, in place, into
// `state` (collectives.cpp).
void post_reduction(Work::State& state, const ProcessGroupPtr& group, bool all, int dst, c10d::ReduceOp op,
                    at::Tensor t, const std::string& context);

}  // namespace tensordict::dist

namespace tensordict {

struct Work::State {
  std::vector<dist::Posted> posted;
  // Buffers the posted calls read or write: alive until they complete.
  std::vector<at::Tensor> buffers;
  // Runs first in wait(), once: may post more calls (irecv's second stage).
  std::function<void()> stage;
  // Runs once every posted call completed (checks, copies back into leaves).
  std::function<void()> finish;
  bool done = false;
  std::string error;  // a failed wait() fails again with the same message
};

}  // namespace tensordict
