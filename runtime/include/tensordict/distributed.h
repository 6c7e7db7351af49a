// Tensordicts across processes and machines over torch's own distributed
// engine (c10d): tensordict's send, recv, isend, irecv, all_reduce, reduce,
// broadcast, gather_and_stack, init_remote and from_remote_init.
//
// Link `tensorclass::distributed` (a library of its own: users who never
// move tensordicts between processes do not parse or link c10d).
//
// Every function takes the process group explicitly (tensordict's `group=`;
// C++ has no default group). Leaves travel in tensordict's order: at each
// level the keys sorted, nested tensordicts where their key sorts, a lazy
// stack's members one after the other. They move in as few c10d calls as is
// correct: point-to-point calls and broadcast send every leaf as bytes of one
// buffer (a consolidated tensordict's own storage when its layout is that
// order, with no copy); all_reduce and reduce run one call per dtype.
// Each call first checks that both sides hold the same structure (keys,
// dtypes, shapes) and throws an error naming the first differing key.
#pragma once

#include <torch/csrc/distributed/c10d/ProcessGroup.hpp>
#include <torch/csrc/distributed/c10d/Store.hpp>
#include <torch/csrc/distributed/c10d/Types.hpp>

#include <chrono>
#include <concepts>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "tensordict/base.h"

namespace tensordict {

using ProcessGroupPtr = c10::intrusive_ptr<c10d::ProcessGroup>;

// What isend, irecv and the asynchronous collectives return: wait() blocks
// until the transfer is done (for irecv: until the tensordict holds the
// received values) and rethrows its error (a closed peer, the group's
// timeout, a structure mismatch) as RuntimeError. tensordict returns a
// tag or a list of futures instead.
class Work {
 public:
  Work() = default;  // already complete
  void wait();
  // Whether wait() would return at once (the transfers are done).
  bool is_completed() const;

  struct State;
  explicit Work(std::shared_ptr<State> state) : state_(std::move(state)) {}

 private:
  std::shared_ptr<State> state_;
};

// ---- point to point (tags: init_tag and init_tag + 1; the next free tag is returned) ----
// Sends the tensor leaves of `td` to rank `dst`; the receiver must hold the
// same structure. Non-tensor data stays behind (init_remote sends it).
int send(const TensorDict& td, const ProcessGroupPtr& group, int dst, int init_tag = 0);
// Receives into the leaves of `td` (in place) what rank `src` sent.
int recv(const TensorDict& td, const ProcessGroupPtr& group, int src, int init_tag = 0);
// Asynchronous forms: the leaves of `td` must stay alive and unchanged (isend)
// or unread (irecv) until wait() returns. Messages between two ranks with the
// same tag arrive in the order they were posted.
Work isend(const TensorDict& td, const ProcessGroupPtr& group, int dst, int init_tag = 0);
Work irecv(const TensorDict& td, const ProcessGroupPtr& group, int src, int init_tag = 0);

// ---- collectives (every rank of `group` calls them, with the same structure) ----
// all_reduce's and reduce's keywords (tensordict's op=, async_op=).
struct ReduceOpOptions {
  c10d::ReduceOp op = c10d::ReduceOp::SUM;
  // Return at once; Work::wait() waits.
  bool async_op = false;
};
// Reduces every leaf across the group, in place on every rank.
Work all_reduce(const TensorDict& td, const ProcessGroupPtr& group, const ReduceOpOptions& options = {});
// Reduces every leaf into rank `dst`'s tensordict; the other ranks'
// tensordicts are left unchanged (c10d reduces copies of their leaves).
Work reduce(const TensorDict& td, const ProcessGroupPtr& group, int dst, const ReduceOpOptions& options = {});
// Copies rank `src`'s leaves into every other rank's tensordict.
void broadcast(const TensorDict& td, const ProcessGroupPtr& group, int src);
// Rank `dst` holds a tensordict whose first batch dim is world_size - 1; each
// other rank sends one element of it, and rank r's lands at index r (r < dst)
// or r - 1 (r > dst), as tensordict's gather_and_stack stacks them.
void gather_and_stack(const TensorDict& td, const ProcessGroupPtr& group, int dst);

// ---- without a template on the receiver ----
// Sends the whole structure first (keys in their order, batch sizes, names,
// dtypes, shapes, non-tensor data, lazy stacks) as a small header, then the leaves.
void init_remote(const TensorDict& td, const ProcessGroupPtr& group, int dst);
// Builds the tensordict rank `src` sent with init_remote (a TensorDict, or a
// LazyStackedTensorDict for a lazy stack) on `device` (default: the sender's
// device when this process has it, else the CPU).
TensorDict from_remote_init(const ProcessGroupPtr& group, int src, std::optional<at::Device> device = std::nullopt);

// ---- generated tensorclasses: through their fields' tensordict (the fields themselves) ----
template <class T>
concept DistributedTensorClass = !std::derived_from<T, TensorDict> && requires(const T& tc) {
  { tc.tensordict() } -> std::same_as<TensorDict>;
};

namespace detail {
// The tensor fields of a tensorclass (its tensordict form without the
// non-tensor fields, sharing the tensors): what send/recv and the collectives
// move; each side keeps its own non-tensor fields.
template <DistributedTensorClass T>
TensorDict tensor_fields(const T& tc) {
  TensorDict td = tc.tensordict();
  std::vector<NestedKey> non_tensor;
  for (const auto& [key, value] : td.items({.include_nested = true, .leaves_only = true, .is_leaf = IsLeaf::NonTensor})) {
    if (value.is_non_tensor()) non_tensor.push_back(key);
  }
  return non_tensor.empty() ? td : TensorDict(td.exclude(non_tensor));
}
}  // namespace detail

template <DistributedTensorClass T>
int send(const T& tc, const ProcessGroupPtr& group, int dst, int init_tag = 0) {
  return send(detail::tensor_fields(tc), group, dst, init_tag);
}
template <DistributedTensorClass T>
int recv(const T& tc, const ProcessGroupPtr& group, int src, int init_tag = 0) {
  return recv(detail::tensor_fields(tc), group, src, init_tag);
}
template <DistributedTensorClass T>
Work isend(const T& tc, const ProcessGroupPtr& group, int dst, int init_tag = 0) {
  return isend(detail::tensor_fields(tc), group, dst, init_tag);
}
template <DistributedTensorClass T>
Work irecv(const T& tc, const ProcessGroupPtr& group, int src, int init_tag = 0) {
  return irecv(detail::tensor_fields(tc), group, src, init_tag);
}
template <DistributedTensorClass T>
Work all_reduce(const T& tc, const ProcessGroupPtr& group, const ReduceOpOptions& options = {}) {
  return all_reduce(detail::tensor_fields(tc), group, options);
}
template <DistributedTensorClass T>
Work reduce(const T& tc, const ProcessGroupPtr& group, int dst, const ReduceOpOptions& options = {}) {
  return reduce(detail::tensor_fields(tc), group, dst, options);
}
template <DistributedTensorClass T>
void broadcast(const T& tc, const ProcessGroupPtr& group, int src) {
  broadcast(detail::tensor_fields(tc), group, src);
}
template <DistributedTensorClass T>
void gather_and_stack(const T& tc, const ProcessGroupPtr& group, int dst) {
  gather_and_stack(detail::tensor_fields(tc), group, dst);
}
template <DistributedTensorClass T>
void init_remote(const T& tc, const ProcessGroupPtr& group, int dst) {
  init_remote(tc.tensordict(), group, dst);
}
// The typed receiving side: T::from_tensordict of what arrived (validated
// against T's schema; init_remote sends the non-tensor fields too).
template <DistributedTensorClass T>
T from_remote_init(const ProcessGroupPtr& group, int src, std::optional<at::Device> device = std::nullopt) {
  return T::from_tensordict(from_remote_init(group, src, device));
}

// ---- making a group ----
// A Gloo process group (CPU tensors) of `world_size` ranks meeting through
// `store` (a c10d::TCPStore or FileStore), the same object on libtorch 1.x
// and 2.x. `hostname`: the address this rank listens on ("127.0.0.1" on one
// machine); nullopt: the address of this machine's hostname, as
// torch.distributed does. `timeout` bounds every operation of the group.
ProcessGroupPtr gloo_process_group(const c10::intrusive_ptr<c10d::Store>& store, int rank, int world_size,
                                   std::chrono::milliseconds timeout = std::chrono::seconds(30),
                                   const std::optional<std::string>& hostname = std::string("127.0.0.1"));

}  // namespace tensordict
