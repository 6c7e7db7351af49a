// send, recv, isend, irecv: one tensordict as three messages.
//
// tag + 0: a header, int64 {magic, structure hash, descriptor bytes, payload bytes};
// tag + 1: the structure descriptor (wire.h), so that a receiver with another
//          structure names the first differing key instead of reading garbage;
// tag + 2: every leaf in one buffer (a consolidated storage as it is).
// Empty descriptors and payloads are not sent. A mismatch found by recv
// still consumes all three messages, so the two ranks stay in step.
#include <ATen/ops/empty.h>
#include <fmt/format.h>

#include <cstring>
#include <stdexcept>

#include "calls.h"
#include "wire.h"

namespace tensordict {

namespace {

constexpr int64_t kMagic = 0x7464696374000001;  // "tdict", protocol 1
constexpr int kHeaderTag = 0, kDescriptorTag = 1, kPayloadTag = 2, kTagsUsed = 3;

struct Message {
  dist::Leaves leaves;
  std::string descriptor;
  at::Tensor header, descriptor_bytes, payload;
};

at::Tensor bytes_tensor(const std::string& bytes, at::Device device) {
  at::Tensor t = at::empty({static_cast<int64_t>(bytes.size())}, at::TensorOptions().dtype(at::kByte));
  if (!bytes.empty()) std::memcpy(t.data_ptr(), bytes.data(), bytes.size());
  return t.to(device);
}

at::Device device_of(const dist::Leaves& leaves) { return leaves.device.value_or(at::Device(at::kCPU)); }

Message outgoing(const TensorDictBase& td, const char* op) {
  Message m;
  m.leaves = dist::collect_leaves(td, op);
  m.descriptor = dist::describe(m.leaves);
  const at::Device device = device_of(m.leaves);
  m.header = at::empty({4}, at::TensorOptions().dtype(at::kLong));
  auto* h = m.header.data_ptr<int64_t>();
  h[0] = kMagic;
  h[1] = static_cast<int64_t>(dist::structure_hash(m.descriptor));
  h[2] = static_cast<int64_t>(m.descriptor.size());
  h[3] = m.leaves.bytes;
  m.header = m.header.to(device);
  m.descriptor_bytes = bytes_tensor(m.descriptor, device);
  m.payload = dist::storage_in_wire_layout(td, m.leaves);
  if (!m.payload.defined()) m.payload = dist::pack(m.leaves);
  return m;
}

void post(Work::State& state, const ProcessGroupPtr& group, bool sending, at::Tensor t, int peer, int tag,
          const std::string& context) {
  if (t.numel() == 0) return;
  std::vector<at::Tensor> tensors{t};
  auto work = dist::guarded(context, [&] {
    return sending ? group->send(tensors, peer, tag) : group->recv(tensors, peer, tag);
  });
  state.posted.push_back({std::move(work), context});
  state.buffers.push_back(std::move(t));
}

std::string peer_context(const char* op, const char* dir, int peer, int tag) {
  return fmt::format("{} {} rank {} (tag {})", op, dir, peer, tag);
}

void check_header(const at::Tensor& header, const std::string& context) {
  if (header.cpu().data_ptr<int64_t>()[0] != kMagic) {
    throw std::runtime_error(context + ": the message is not a tensordict sent by tensordict::send/isend (or another "
                                       "protocol version); is the peer sending plain tensors with these tags?");
  }
}

std::string received_string(const at::Tensor& bytes) {
  const at::Tensor cpu = bytes.cpu();
  return std::string(static_cast<const char*>(cpu.data_ptr()), static_cast<std::size_t>(cpu.numel()));
}

// The checks and copies that follow the arrival of all three messages.
void finish_receive(const Message& expected, const at::Tensor& header, const at::Tensor& descriptor,
                    const at::Tensor& payload, bool into_leaves, int src, const std::string& context) {
  check_header(header, context);
  const std::string theirs = descriptor.numel() ? received_string(descriptor) : std::string();
  if (auto why = dist::first_difference(theirs, expected.descriptor, fmt::format("the sender (rank {})", src))) {
    throw std::runtime_error(context + ": " + *why);
  }
  if (into_leaves) dist::unpack(expected.leaves, payload);
}

Work post_send(const TensorDictBase& td, const ProcessGroupPtr& group, int dst, int init_tag, const char* op) {
  Message m = outgoing(td, op);
  auto state = std::make_shared<Work::State>();
  const std::string context = peer_context(op, "to", dst, init_tag);
  post(*state, group, true, m.header, dst, init_tag + kHeaderTag, context);
  post(*state, group, true, m.descriptor_bytes, dst, init_tag + kDescriptorTag, context);
  post(*state, group, true, m.payload, dst, init_tag + kPayloadTag, context);
  return Work(std::move(state));
}

}  // namespace

Work isend(const TensorDictBase& td, const ProcessGroupPtr& group, int dst, int init_tag) {
  return post_send(td, group, dst, init_tag, "isend");
}

int send(const TensorDictBase& td, const ProcessGroupPtr& group, int dst, int init_tag) {
  post_send(td, group, dst, init_tag, "send").wait();
  return init_tag + kTagsUsed;
}

int recv(const TensorDictBase& td, const ProcessGroupPtr& group, int src, int init_tag) {
  const std::string context = peer_context("recv", "from", src, init_tag);
  Message expected;
  expected.leaves = dist::collect_leaves(td, "recv");
  expected.descriptor = dist::describe(expected.leaves);
  const at::Device device = device_of(expected.leaves);

  // The header first: it sizes the other two messages, so that whatever the
  // sender's structure, both of them are consumed.
  const at::Tensor header = at::empty({4}, at::TensorOptions().dtype(at::kLong).device(device));
  {
    Work::State state;
    post(state, group, false, header, src, init_tag + kHeaderTag, context);
    Work(std::make_shared<Work::State>(std::move(state))).wait();
  }
  check_header(header, context);
  const at::Tensor h = header.cpu();
  const int64_t descriptor_size = h.data_ptr<int64_t>()[2], payload_size = h.data_ptr<int64_t>()[3];
  const bool same = h.data_ptr<int64_t>()[1] == static_cast<int64_t>(dist::structure_hash(expected.descriptor)) &&
                    payload_size == expected.leaves.bytes;
  at::Tensor payload = same ? dist::storage_in_wire_layout(td, expected.leaves) : at::Tensor();
  const bool into_leaves = !payload.defined();
  if (into_leaves) payload = at::empty({payload_size}, at::TensorOptions().dtype(at::kByte).device(device));
  const at::Tensor descriptor = at::empty({descriptor_size}, at::TensorOptions().dtype(at::kByte).device(device));

  auto state = std::make_shared<Work::State>();
  post(*state, group, false, descriptor, src, init_tag + kDescriptorTag, context);
  post(*state, group, false, payload, src, init_tag + kPayloadTag, context);
  state->finish = [&] { finish_receive(expected, header, descriptor, payload, into_leaves, src, context); };
  Work(state).wait();
  return init_tag + kTagsUsed;
}

Work irecv(const TensorDictBase& td, const ProcessGroupPtr& group, int src, int init_tag) {
  // All three are posted now, sized by this tensordict's own structure (a
  // sender with another one fails the wait: Gloo refuses a message of another size).
  auto expected = std::make_shared<Message>();
  expected->leaves = dist::collect_leaves(td, "irecv");
  expected->descriptor = dist::describe(expected->leaves);
  const at::Device device = device_of(expected->leaves);
  const std::string context = peer_context("irecv", "from", src, init_tag);

  const at::Tensor header = at::empty({4}, at::TensorOptions().dtype(at::kLong).device(device));
  const at::Tensor descriptor = at::empty({static_cast<int64_t>(expected->descriptor.size())},
                                          at::TensorOptions().dtype(at::kByte).device(device));
  at::Tensor payload = dist::storage_in_wire_layout(td, expected->leaves);
  const bool into_leaves = !payload.defined();
  if (into_leaves) payload = at::empty({expected->leaves.bytes}, at::TensorOptions().dtype(at::kByte).device(device));

  auto state = std::make_shared<Work::State>();
  post(*state, group, false, header, src, init_tag + kHeaderTag, context);
  post(*state, group, false, descriptor, src, init_tag + kDescriptorTag, context);
  post(*state, group, false, payload, src, init_tag + kPayloadTag, context);
  state->finish = [=] { finish_receive(*expected, header, descriptor, payload, into_leaves, src, context); };
  return Work(std::move(state));
}

}  // namespace tensordict
