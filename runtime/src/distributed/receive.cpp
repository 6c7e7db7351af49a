// recv and irecv (the messages: messages.h).
//
// irecv posts the first message (kFirstBytes, enough for any first message)
// at once; a second message is posted once the header has told its size (a
// larger message than its buffer would abort the process inside Gloo).
// Several irecv from one rank with one tag match the sender's messages in
// posting order, so their second messages must be posted in that order too,
// whatever the order of the wait() calls: a wait() first stages every earlier
// irecv of the same (group, rank, tag) queue.
#include <ATen/ops/empty.h>
#include <fmt/format.h>

#include <cstring>
#include <deque>
#include <map>
#include <mutex>
#include <stdexcept>
#include <tuple>

#include "distributed/messages.h"
#include "distributed/p2p.h"

namespace tensordict {

namespace {

struct PendingRecv {
  TensorDict td;
  dist::Leaves leaves;
  std::string descriptor;  // ours
  ProcessGroupPtr group;
  int src = 0, tag = 0;
  std::string context;
  at::Tensor first, rest;  // the two messages' buffers
  c10::intrusive_ptr<c10d::Work> first_work;
  int64_t header[dist::kHeaderWords] = {};
  bool rest_is_storage = false;  // the second message went straight into the consolidated storage
};

using QueueKey = std::tuple<const c10d::ProcessGroup*, int, int>;
struct Queued {
  std::shared_ptr<Work::State> state;
  std::shared_ptr<PendingRecv> recv;
};

std::mutex queues_mutex;
std::map<QueueKey, std::deque<Queued>> queues;

QueueKey key_of(const PendingRecv& p) { return {p.group.get(), p.src, p.tag}; }

// The first message has arrived: post the second, sized by its header.
void stage(PendingRecv& p, Work::State& state) {
  dist::guarded(p.context, [&] { p.first_work->wait(); });
  p.first = p.first.cpu();
  std::memcpy(p.header, p.first.data_ptr(), sizeof p.header);
  const int64_t* v = p.header;
  const dist::Split s = dist::split(v[2], v[3]);
  if (v[0] != dist::kMagic || v[2] < 0 || v[3] < 0 || s.parts != v[4]) {
    throw RuntimeError(p.context + ": the message is not a tensordict sent by tensordict::send/isend (or another "
                                         "protocol version); is the peer sending plain tensors with these tags?");
  }
  if (s.rest_bytes == 0) return;
  const bool same = v[1] == static_cast<int64_t>(dist::structure_hash(p.descriptor)) && v[3] == p.leaves.bytes;
  if (same && s.payload_offset == 0) p.rest = dist::storage_in_wire_layout(p.td, p.leaves);
  p.rest_is_storage = p.rest.defined();
  if (!p.rest_is_storage) {
    p.rest = at::empty({s.rest_bytes}, at::TensorOptions().dtype(at::kByte).device(dist::device_of(p.leaves)));
  }
  dist::post(state, p.group, false, p.rest, p.src, p.tag + dist::kRestTag, p.context);
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
  const dist::Split s = dist::split(p.header[2], p.header[3]);
  const at::Tensor rest = p.rest.defined() && !p.rest_is_storage ? p.rest.cpu() : at::Tensor();
  const char* descriptor = (s.parts & dist::kDescriptorFirst)
                               ? static_cast<const char*>(p.first.data_ptr()) + dist::kHeaderBytes
                               : static_cast<const char*>(rest.data_ptr());
  std::optional<std::string> why;
  try {
    why = dist::first_difference(std::string(descriptor, static_cast<std::size_t>(p.header[2])), p.descriptor,
                                 fmt::format("the sender (rank {})", p.src));
  } catch (const std::exception& e) {
    throw RuntimeError(p.context + ": " + e.what());
  }
  if (why) throw RuntimeError(p.context + ": " + *why);
  if (p.rest_is_storage) return;  // received in place
  const at::Tensor& holder = (s.parts & dist::kPayloadFirst) ? p.first : rest;
  dist::unpack(p.leaves, holder.to(dist::device_of(p.leaves)), s.payload_offset);
}

}  // namespace

namespace dist {

Work post_packed_recv(const TensorDict& td, const ProcessGroupPtr& group, int src, int init_tag, const char* op) {
  auto p = std::make_shared<PendingRecv>(PendingRecv{td, dist::collect_leaves(td, op), {}, {}, 0, 0, {}, {}, {}, {}, {}, false});
  p->descriptor = dist::describe(p->leaves);
  p->group = group;
  p->src = src;
  p->tag = init_tag;
  p->context = dist::peer_context(op, "from", src, init_tag);
  dist::check_device(group, dist::device_of(p->leaves), p->context, "the tensordict");
  p->first = at::empty({dist::kFirstBytes}, at::TensorOptions().dtype(at::kByte).device(dist::device_of(p->leaves)));
  auto state = std::make_shared<Work::State>();
  {
    std::vector<at::Tensor> tensors{p->first};
    // Posted under the queue's lock, so that posting order is queue order.
    std::lock_guard<std::mutex> lock(queues_mutex);
    p->first_work = dist::guarded(p->context, [&] { return group->recv(tensors, src, init_tag + dist::kFirstTag); });
    queues[key_of(*p)].push_back({state, p});
  }
  state->stage = [p] { stage_through(p); };
  state->finish = [p] { finish(*p); };
  return Work(std::move(state));
}

}  // namespace dist

}  // namespace tensordict
