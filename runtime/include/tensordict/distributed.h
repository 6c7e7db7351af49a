// Tensordicts across processes and machines over torch's own distributed
// engine (c10d): tensordict's send, recv, isend, irecv, all_reduce, reduce,
// broadcast, all_gather, gather_and_stack, init_remote and from_remote_init,
// and torch.distributed's object-list calls.
//
// Link `tensorclass::distributed` (a library of its own: users who never
// move tensordicts between processes do not parse or link c10d).
//
// Every function takes the process group explicitly (tensordict's `group=`;
// C++ has no default group: init_process_group returns one). Leaves travel
// in tensordict's order: at each level the keys sorted, nested tensordicts
// where their key sorts, a lazy stack's members one after the other.
// By default they travel as tensordict 0.15.3 sends them, so that C++ and
// Python ranks share one group (WireProtocol::tensordict); the packed
// protocol (WireProtocol::packed, C++ ranks only) moves them in as few c10d
// calls as is correct and checks first that both sides hold the same
// structure, naming the first differing key. init_remote, from_remote_init,
// broadcast, all_gather and gather_and_stack, in tensordict's protocol,
// send the structure as tensordict's consolidated metadata, pickled as
// torch.distributed's object-list calls pickle it (a safe subset: dicts,
// lists, tuples, strings, numbers, bools, None; anything else is refused),
// then the consolidated storage as one uint8 tensor.
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
#include "tensordict/detail/tensorclass_fields.h"
#include "tensordict/value.h"

namespace tensordict {

using ProcessGroupPtr = c10::intrusive_ptr<c10d::ProcessGroup>;

// A peer is untrusted input: what one peer announces it sends (a storage's
// "_total_bytes", gather_and_stack's header, an object list's sizes, the
// packed init_remote's structure and leaves) is checked against the call's
// `max_receive_bytes` before anything is allocated, and more is refused with
// a ValueError naming the call, the peer and the size. The default, 1 GiB;
// raise it in the options of a call that receives more.
inline constexpr int64_t kDefaultMaxReceiveBytes = int64_t{1} << 30;

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

// ---- what goes on the wire ----
// tensordict: tensordict 0.15.3's own messages (one per tensor leaf, or the
//   consolidated storage), so that Python ranks can be the peers. Like
//   Python's, nothing on the wire describes the structure: both sides must
//   hold the same keys, dtypes and shapes, else the transfer hangs until the
//   group's timeout, or Gloo aborts the process on a longer message.
// packed: this library's own, for groups of C++ ranks only: every leaf in
//   one buffer after a structure descriptor, so a mismatch is an error naming
//   the first differing key, in one round trip.
enum class WireProtocol { tensordict, packed };

// ---- point to point ----
// tensordict's keywords of send/recv/isend/irecv.
struct SendOptions {
  // The tag of the first leaf (then init_tag + 1, ...); the receiver passes the same.
  int init_tag = 0;
  // Tags drawn from a generator seeded by init_tag (tensordict's
  // _int_generator: numpy's SeedSequence and PCG64, modulo 10000).
  bool pseudo_rand = false;
  // One message: the consolidated storage (consolidate()d first unless it
  // is); the receiver's tensordict must be consolidated with the same layout.
  // init_tag and pseudo_rand are ignored (tag 0).
  bool consolidated = false;
  WireProtocol protocol = WireProtocol::tensordict;
};
using RecvOptions = SendOptions;

// Sends the tensor leaves of `td` to rank `dst` (tensordict: one message per
// leaf in the order above; non-tensor entries stay behind). Returns the tag
// of the last leaf (init_tag - 1 with none; packed: init_tag + 1; consolidated: 0).
int send(const TensorDict& td, const ProcessGroupPtr& group, int dst, const SendOptions& options = {});
// Receives into the leaves of `td` (in place) what rank `src` sent; returns
// the tag of the last leaf, as send does.
int recv(const TensorDict& td, const ProcessGroupPtr& group, int src, const RecvOptions& options = {});
// Asynchronous forms: the leaves of `td` must stay alive and unchanged (isend)
// or unread (irecv) until wait() returns. Messages between two ranks with the
// same tag arrive in the order they were posted.
Work isend(const TensorDict& td, const ProcessGroupPtr& group, int dst, const SendOptions& options = {});
Work irecv(const TensorDict& td, const ProcessGroupPtr& group, int src, const RecvOptions& options = {});

// ---- collectives (every rank of `group` calls them, with the same structure) ----
// all_reduce's and reduce's keywords (tensordict's op=, async_op=).
struct ReduceOpOptions {
  c10d::ReduceOp op = c10d::ReduceOp::SUM;
  // Return at once; Work::wait() waits.
  bool async_op = false;
  // tensordict: one reduction per leaf, or with bucket_bytes, per bucket of
  // leaves of one dtype up to that many bytes (a larger leaf alone), as
  // tensordict's bucket_bytes. packed: one reduction per dtype.
  std::optional<int64_t> bucket_bytes = std::nullopt;
  WireProtocol protocol = WireProtocol::tensordict;
};
// Reduces every leaf across the group, in place on every rank.
Work all_reduce(const TensorDict& td, const ProcessGroupPtr& group, const ReduceOpOptions& options = {});
// Reduces every leaf into rank `dst`'s tensordict; the other ranks'
// tensordicts are left unchanged (c10d reduces copies of their leaves).
Work reduce(const TensorDict& td, const ProcessGroupPtr& group, int dst, const ReduceOpOptions& options = {});
// broadcast's keywords (tensordict's device=).
struct BroadcastOptions {
  // On `src`: the device of the consolidated storage, when `td` is not
  // consolidated yet. Elsewhere: the device of the result (default: the
  // sender's storage device).
  std::optional<at::Device> device = std::nullopt;
  WireProtocol protocol = WireProtocol::tensordict;
  // On `src`: the Python class the other ranks rebuild ("module.Name";
  // tensordict's _tensorclass_type). A generated tensorclass sets its own.
  std::string tensorclass_type = {};
  // Elsewhere than `src`: the most bytes the storage may have (tensordict's
  // protocol; kDefaultMaxReceiveBytes says how it is checked).
  int64_t max_receive_bytes = kDefaultMaxReceiveBytes;
};
// tensordict's broadcast: rank `src`'s tensordict on every rank. On `src`,
// `td` itself when consolidated, else a consolidated copy; elsewhere a new
// consolidated tensordict built from the metadata and storage `src` sent
// (`td` is not read: it may be empty). Packed protocol: rank `src`'s leaves
// are copied into every other rank's `td` (the same structure), which is
// returned.
TensorDict broadcast(const TensorDict& td, const ProcessGroupPtr& group, int src, const BroadcastOptions& options = {});
// tensordict's all_gather: every rank's tensordict (their structures may
// differ), on every rank, in rank order, each a new consolidated tensordict.
// all_gather's and gather_and_stack's options.
struct GatherOptions {
  // gather_and_stack only (all_gather speaks tensordict's protocol).
  WireProtocol protocol = WireProtocol::tensordict;
  // The most bytes one rank's storage and metadata may have (tensordict's
  // protocol; kDefaultMaxReceiveBytes says how it is checked).
  int64_t max_receive_bytes = kDefaultMaxReceiveBytes;
};
std::vector<TensorDict> all_gather(const TensorDict& td, const ProcessGroupPtr& group,
                                   const GatherOptions& options = {});
// Rank `dst` holds a tensordict whose first batch dim is world_size - 1; each
// other rank sends one element of it, and rank r's lands at index r (r < dst)
// or r - 1 (r > dst), as tensordict's gather_and_stack stacks them.
// tensordict's protocol (its Gloo path): each rank's consolidated storage
// and pickled metadata, gathered; a Python rank whose tensordict cannot be
// consolidated sends a pickled tensordict, which is refused here (naming
// the rank), as is a group whose backend is not Gloo.
void gather_and_stack(const TensorDict& td, const ProcessGroupPtr& group, int dst, const GatherOptions& options = {});

// ---- without a template on the receiver ----
// init_remote's and from_remote_init's keywords.
struct RemoteInitOptions {
  // tensordict's protocol: the device the metadata travels through
  // (point to point; a CUDA device with NCCL), or of the storage
  // (use_broadcast), and of the result on the receiver (default: the CPU
  // point to point). Packed protocol: the receiver's device (default: the
  // sender's when this process has it, else the CPU).
  std::optional<at::Device> device = std::nullopt;
  // Through broadcast(): every rank of the group takes part, the others
  // calling from_remote_init with use_broadcast too (`dst` is ignored).
  bool use_broadcast = false;
  WireProtocol protocol = WireProtocol::tensordict;
  // The Python class the receiver rebuilds ("module.Name"; tensordict's
  // _tensorclass_type): a generated tensorclass sets its own.
  std::string tensorclass_type = {};
  // On the receiver: the most bytes the sender may announce for the
  // metadata, and for the storage (tensordict's protocol) or the structure
  // and for the leaves together (packed); kDefaultMaxReceiveBytes says how
  // it is checked.
  int64_t max_receive_bytes = kDefaultMaxReceiveBytes;
};
// Sends the whole structure (keys in their order, batch sizes, names,
// dtypes, shapes, non-tensor data, lazy stacks) and the content to a rank
// that does not know them. tensordict's protocol: send_object_list of the
// consolidated metadata (with "_total_bytes"), then the storage.
void init_remote(const TensorDict& td, const ProcessGroupPtr& group, int dst, const RemoteInitOptions& options = {});
// Builds the tensordict rank `src` sent with init_remote (a TensorDict, or a
// LazyStackedTensorDict for a lazy stack): tensordict's protocol gives a
// consolidated tensordict, its leaves views of the received storage. A
// tensorclass sent from Python ("_tensorclass_type") is a TensorDict here
// holding the class name under kLoadedClassKey (use the typed form below).
TensorDict from_remote_init(const ProcessGroupPtr& group, int src, const RemoteInitOptions& options = {});

// ---- torch.distributed's object lists, for objects of the pickle subset ----
// The c10d calls torch issues (an int64 tensor of sizes, then the pickles as
// one uint8 tensor; tag 0), so a Python peer's matching call takes part.
// Objects are Json values: dicts (str keys), lists, str, ints, floats, bools
// and None; a tuple arrives as an array. `device`: where the tensors travel
// (default: the CPU; a CUDA device for NCCL).
void send_object_list(const std::vector<Json>& object_list, const ProcessGroupPtr& group, int dst,
                      std::optional<at::Device> device = std::nullopt);
// The object-list calls' options (the forms taking a device alone keep the
// defaults).
struct ObjectListOptions {
  // Where the tensors travel (default: the CPU; a CUDA device for NCCL).
  std::optional<at::Device> device = std::nullopt;
  // On a receiver: the most bytes of pickles one peer may announce in the
  // call (kDefaultMaxReceiveBytes says how it is checked).
  int64_t max_receive_bytes = kDefaultMaxReceiveBytes;
};
// Fills every element of `object_list` (its size says how many objects
// arrive, as in Python) and returns the sender's rank.
int recv_object_list(std::vector<Json>& object_list, const ProcessGroupPtr& group, int src,
                     std::optional<at::Device> device = std::nullopt);
int recv_object_list(std::vector<Json>& object_list, const ProcessGroupPtr& group, int src,
                     const ObjectListOptions& options);
// On `src`, sends `object_list`; elsewhere fills it (same size on every rank).
void broadcast_object_list(std::vector<Json>& object_list, const ProcessGroupPtr& group, int src = 0,
                           std::optional<at::Device> device = std::nullopt);
void broadcast_object_list(std::vector<Json>& object_list, const ProcessGroupPtr& group, int src,
                           const ObjectListOptions& options);
// Every rank's `obj` into `object_list` (of world_size elements), in rank order.
void all_gather_object(std::vector<Json>& object_list, const Json& obj, const ProcessGroupPtr& group,
                       const ObjectListOptions& options = {});

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
// tensordict's _tensorclass_type for T: "module.Name", from the class name
// its memmap "_type" gives ("<class 'module.Name'>"), which is the
// @tensorclass that `tensorclass-gen --lang python` makes of the same schema.
template <class T>
std::string python_class_name() {
  std::string_view type = T::schema().python_type;
  constexpr std::string_view head = "<class '", tail = "'>";
  if (type.starts_with(head) && type.ends_with(tail)) type = type.substr(head.size(), type.size() - head.size() - tail.size());
  return std::string(type);
}
// Marks each nested tensorclass level of `level` (T's tensordict form)
// with its Python class under kLoadedClassKey ("__class__"), which the
// consolidated metadata writes as that level's "cls": Python rebuilds the
// nested @tensorclass fields as their classes.
void mark_class(TensorDict& level, std::string_view python_type);
template <class T>
void mark_nested_classes(TensorDict& level, const T& tc) {
  visit_fields<T>(Overloaded{[&](NestedField, auto field, const auto& m) {
                    const auto* nested = present(m);
                    if (!nested) return;
                    using N = std::remove_cvref_t<decltype(*nested)>;
                    TensorDict sub = level.get_td(std::string(field.info().name));
                    mark_class(sub, N::schema().python_type);
                    mark_nested_classes(sub, *nested);
                  }},
                  tc);
}
// `td` without the class names a received tensorclass carries
// (kLoadedClassKey, at any level): T::from_tensordict takes fields only.
TensorDict without_class(const TensorDict& td);
}  // namespace detail

template <DistributedTensorClass T>
int send(const T& tc, const ProcessGroupPtr& group, int dst, const SendOptions& options = {}) {
  return send(detail::tensor_fields(tc), group, dst, options);
}
template <DistributedTensorClass T>
int recv(const T& tc, const ProcessGroupPtr& group, int src, const RecvOptions& options = {}) {
  return recv(detail::tensor_fields(tc), group, src, options);
}
template <DistributedTensorClass T>
Work isend(const T& tc, const ProcessGroupPtr& group, int dst, const SendOptions& options = {}) {
  return isend(detail::tensor_fields(tc), group, dst, options);
}
template <DistributedTensorClass T>
Work irecv(const T& tc, const ProcessGroupPtr& group, int src, const RecvOptions& options = {}) {
  return irecv(detail::tensor_fields(tc), group, src, options);
}
template <DistributedTensorClass T>
Work all_reduce(const T& tc, const ProcessGroupPtr& group, const ReduceOpOptions& options = {}) {
  return all_reduce(detail::tensor_fields(tc), group, options);
}
template <DistributedTensorClass T>
Work reduce(const T& tc, const ProcessGroupPtr& group, int dst, const ReduceOpOptions& options = {}) {
  return reduce(detail::tensor_fields(tc), group, dst, options);
}
// Packed protocol: the tensor fields, copied in place on the other ranks
// (each keeps its non-tensor fields). tensordict's: the whole tensorclass,
// rebuilt on the other ranks with T::from_tensordict.
template <DistributedTensorClass T>
T broadcast(const T& tc, const ProcessGroupPtr& group, int src, BroadcastOptions options = {}) {
  if (options.protocol == WireProtocol::packed) {
    broadcast(detail::tensor_fields(tc), group, src, options);
    return tc;
  }
  TensorDict td = tc.tensordict();
  if (group->getRank() == src) {
    if (options.tensorclass_type.empty()) options.tensorclass_type = detail::python_class_name<T>();
    detail::mark_nested_classes(td, tc);
  }
  return T::from_tensordict(detail::without_class(broadcast(td, group, src, options)));
}
template <DistributedTensorClass T>
void gather_and_stack(const T& tc, const ProcessGroupPtr& group, int dst, const GatherOptions& options = {}) {
  gather_and_stack(detail::tensor_fields(tc), group, dst, options);
}
template <DistributedTensorClass T>
void init_remote(const T& tc, const ProcessGroupPtr& group, int dst, RemoteInitOptions options = {}) {
  if (options.protocol == WireProtocol::packed) {
    init_remote(tc.tensordict(), group, dst, options);
    return;
  }
  if (options.tensorclass_type.empty()) options.tensorclass_type = detail::python_class_name<T>();
  TensorDict td = tc.tensordict();
  detail::mark_nested_classes(td, tc);
  init_remote(td, group, dst, options);
}
// The typed receiving side: T::from_tensordict of what arrived (validated
// against T's schema; init_remote sends the non-tensor fields too).
template <DistributedTensorClass T>
T from_remote_init(const ProcessGroupPtr& group, int src, const RemoteInitOptions& options = {}) {
  return T::from_tensordict(detail::without_class(from_remote_init(group, src, options)));
}

// ---- making a group ----
// torch.distributed.init_process_group's arguments (C++ has no default group:
// the group is returned). Ranks made here and Python ranks that call
// init_process_group with the same environment form one group, whichever
// holds rank 0.
struct InitProcessGroupOptions {
  // "gloo" (CPU tensors; CUDA tensors go through the host) or, in a build
  // with NCCL (is_nccl_available()), "nccl": CUDA tensors only, each rank on
  // one GPU (LOCAL_RANK % device count, else rank % device count, as torch
  // binds it). As in Python, object lists and init_remote's metadata travel
  // on the current CUDA device unless a device is given.
  std::string backend = "gloo";
  // "env://" (MASTER_ADDR, MASTER_PORT, and RANK, WORLD_SIZE unless given),
  // "tcp://host:port" or "file:///path"; a query may give rank= and world_size=.
  std::string init_method = "env://";
  int rank = -1;        // -1: from init_method (env: RANK)
  int world_size = -1;  // -1: from init_method (env: WORLD_SIZE)
  // Bounds the rendezvous and every operation of the group; nullopt:
  // torch's default for the backend (gloo: 30 minutes, nccl: 10).
  std::optional<std::chrono::milliseconds> timeout = std::nullopt;
};
// Rendezvous as torch.distributed does (rank 0 serves a TCPStore, or every
// rank opens the FileStore), then the group on the same store prefixes
// ("default_pg", "0/", then "cpu/" for Gloo, "cuda/" for NCCL);
// GLOO_SOCKET_IFNAME picks Gloo's interfaces.
ProcessGroupPtr init_process_group(const InitProcessGroupOptions& options = {});
// Whether this build has init_process_group("nccl") (torch's
// is_nccl_available): a CUDA libtorch with c10d NCCL, such as PyPI's torch;
// Debian's libtorch 1.13 has none.
bool is_nccl_available();

// A Gloo process group (CPU tensors) of `world_size` ranks meeting through
// `store` (a c10d::TCPStore or FileStore), the same object on libtorch 1.x
// and 2.x. `hostname`: the address this rank listens on ("127.0.0.1" on one
// machine); nullopt: the address of this machine's hostname, as
// torch.distributed does. `timeout` bounds every operation of the group.
ProcessGroupPtr gloo_process_group(const c10::intrusive_ptr<c10d::Store>& store, int rank, int world_size,
                                   std::chrono::milliseconds timeout = std::chrono::seconds(30),
                                   const std::optional<std::string>& hostname = std::string("127.0.0.1"));

}  // namespace tensordict
