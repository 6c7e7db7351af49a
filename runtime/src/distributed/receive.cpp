// recv and irecv (the messages: messages.h).
//
// irecv posts only the fixed-size header at once: the descriptor and the
// payload are posted once the header has told their sizes (a larger message
// than its buffer would abort the process inside Gloo). Several irecv from
// one rank with one tag match the sender's messages in posting order, so
// their second stages must be posted in that order too, whatever the order
// of the wait() calls: a wait() first stages every earlier irecv of the same
// (group, rank, tag) queue.
#include <ATen/ops/empty.h>
#include <fmt/format.h>

#include <deque>
#include <map>
#include <mutex>
#include <stdexcept>
#include <tuple>

#include "messages.h"

namespace tensordict {

namespace {

struct PendingRecv {
  TensorDictBase td;
  dist::Leaves leaves;
  std::string descriptor;  // ours
  ProcessGroupPtr group;
  int src = 0, tag = 0;
  std::string context;
  at::Tensor header;
  c10::intrusive_ptr<c10d::Work> header_work;
  at::Tensor their_descriptor, payload;
  bool into_leaves = true;
};

using QueueKey = std::tuple<const c10d::ProcessGroup*, int, int>;
struct Queued {
  std::shared_ptr<Work::State> state;
  std::shared_ptr<PendingRecv> recv;
};

std::mutex queues_mutex;
std::map<QueueKey, std::deque<Queued>> queues;

QueueKey key_of(const PendingRecv& p) { return {p.group.get(), p.src, p.tag}; }

std::string as_string(const at::Tensor& bytes) {
  const at::Tensor cpu = bytes.cpu();
  return std::string(static_cast<const char*>(cpu.data_ptr()), static_cast<std::size_t>(cpu.numel()));
}

// The header has arrived: post the other two messages, sized by it.
void stage(PendingRecv& p, Work::State& state) {
  dist::guarded(p.context, [&] { p.header_work->wait(); });
  const at::Tensor h = p.header.cpu();
  const int64_t* v = h.data_ptr<int64_t>();
  if (v[0] != dist::kMagic) {
    throw std::runtime_error(p.context + ": the message is not a tensordict sent by tensordict::send/isend (or another "
                                         "protocol version); is the peer sending plain tensors with these tags?");
  }
  const at::TensorOptions bytes = at::TensorOptions().dtype(at::kByte).device(dist::device_of(p.leaves));
  const bool same = v[1] == static_cast<int64_t>(dist::structure_hash(p.descriptor)) && v[3] == p.leaves.bytes;
  p.payload = same ? dist::storage_in_wire_layout(p.td, p.leaves) : at::Tensor();
  p.into_leaves = !p.payload.defined();
  if (p.into_leaves) p.payload = at::empty({v[3]}, bytes);
  p.their_descriptor = at::empty({v[2]}, bytes);
  dist::post(state, p.group, false, p.their_descriptor, p.src, p.tag + dist::kDescriptorTag, p.context);
  dist::post(state, p.group, false, p.payload, p.src, p.tag + dist::kPayloadTag, p.context);
}

// Stages, in posting order, every irecv of `target`'s queue up to `target`.
void stage_through(const std::shared_ptr<PendingRecv>& target) {
  std::lock_guard<std::mutex> lock(queues_mutex);
  const QueueKey key = key_of(*target);
  auto& queue = queues[key];
  while (!queue.empty()) {
    Queued q = std::move(queue.front());
    queue.pop_front();
    try {
      stage(*q.recv, *q.state);
    } catch (const std::exception& e) {
      if (q.recv == target) {
        if (queue.empty()) queues.erase(key);
        throw;
      }
      q.state->error = e.what();  // an earlier irecv fails at its own wait()
    }
    if (q.recv == target) break;
  }
  if (queue.empty()) queues.erase(key);
}

void finish(const PendingRecv& p) {
  std::optional<std::string> why;
  try {
    why = dist::first_difference(as_string(p.their_descriptor), p.descriptor, fmt::format("the sender (rank {})", p.src));
  } catch (const std::exception& e) {
    throw std::runtime_error(p.context + ": " + e.what());
  }
  if (why) throw std::runtime_error(p.context + ": " + *why);
  if (p.into_leaves) dist::unpack(p.leaves, p.payload);
}

Work post_recv(const TensorDictBase& td, const ProcessGroupPtr& group, int src, int init_tag, const char* op) {
  auto p = std::make_shared<PendingRecv>(PendingRecv{.td = td, .leaves = dist::collect_leaves(td, op)});
  p->descriptor = dist::describe(p->leaves);
  p->group = group;
  p->src = src;
  p->tag = init_tag;
  p->context = dist::peer_context(op, "from", src, init_tag);
  p->header = at::empty({dist::kHeaderLength}, at::TensorOptions().dtype(at::kLong).device(dist::device_of(p->leaves)));
  auto state = std::make_shared<Work::State>();
  {
    std::vector<at::Tensor> tensors{p->header};
    // Posted under the queue's lock, so that posting order is queue order.
    std::lock_guard<std::mutex> lock(queues_mutex);
    p->header_work =
        dist::guarded(p->context, [&] { return group->recv(tensors, src, init_tag + dist::kHeaderTag); });
    queues[key_of(*p)].push_back({state, p});
  }
  state->stage = [p] { stage_through(p); };
  state->finish = [p] { finish(*p); };
  return Work(std::move(state));
}

}  // namespace

Work irecv(const TensorDictBase& td, const ProcessGroupPtr& group, int src, int init_tag) {
  return post_recv(td, group, src, init_tag, "irecv");
}

int recv(const TensorDictBase& td, const ProcessGroupPtr& group, int src, int init_tag) {
  post_recv(td, group, src, init_tag, "recv").wait();
  return init_tag + dist::kTagsUsed;
}

}  // namespace tensordict
