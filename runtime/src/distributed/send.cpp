// send and isend (the messages: messages.h).
#include <ATen/ops/empty.h>
#include <fmt/format.h>

#include <cstring>

#include "distributed/messages.h"
#include "distributed/p2p.h"

namespace tensordict {

namespace dist {

void post(Work::State& state, const ProcessGroupPtr& group, bool sending, at::Tensor t, int peer, int tag,
          const std::string& context, bool skip_empty) {
  if (skip_empty && t.numel() == 0) return;
  check_device(group, t.device(), context, "the message");
  std::vector<at::Tensor> tensors{t};
  auto work = guarded(context, [&] { return sending ? group->send(tensors, peer, tag) : group->recv(tensors, peer, tag); });
  state.posted.push_back({std::move(work), context});
  state.buffers.push_back(std::move(t));
}

std::string peer_context(const char* op, const char* dir, int peer, int tag) {
  return fmt::format("{} {} rank {} (tag {})", op, dir, peer, tag);
}

Work post_packed_send(const TensorDict& td, const ProcessGroupPtr& group, int dst, int init_tag, const char* op) {
  const dist::Leaves leaves = dist::collect_leaves(td, op);
  const std::string descriptor = dist::describe(leaves);
  const auto d = static_cast<int64_t>(descriptor.size());
  const dist::Split s = dist::split(d, leaves.bytes);
  const bool rest_is_payload = !(s.parts & dist::kPayloadFirst) && s.payload_offset == 0;
  at::Tensor storage = rest_is_payload ? dist::storage_in_wire_layout(td, leaves) : at::Tensor();

  // The first message, built on the CPU (it is small) and moved to the leaves' device.
  at::Tensor first = at::empty({s.first_bytes}, at::TensorOptions().dtype(at::kByte));
  char* bytes = static_cast<char*>(first.data_ptr());
  const int64_t header[dist::kHeaderWords] = {dist::kMagic, static_cast<int64_t>(dist::structure_hash(descriptor)), d,
                                             leaves.bytes, s.parts};
  std::memcpy(bytes, header, sizeof header);
  if (s.parts & dist::kDescriptorFirst) std::memcpy(bytes + dist::kHeaderBytes, descriptor.data(), descriptor.size());
  const at::Device device = dist::device_of(leaves);
  // Host leaves are copied straight into the message; device leaves are
  // packed where they are, then brought over.
  auto put_payload = [&](const at::Tensor& message, int64_t at) {
    if (device.is_cpu()) {
      dist::pack_into(leaves, message, at);
    } else {
      message.narrow(0, at, leaves.bytes).copy_(dist::pack(leaves).cpu());
    }
  };
  at::Tensor rest;
  if (s.parts & dist::kPayloadFirst) {
    put_payload(first, s.payload_offset);
  } else if (storage.defined()) {
    rest = storage;
  } else {
    rest = at::empty({s.rest_bytes}, at::TensorOptions().dtype(at::kByte));
    if (!(s.parts & dist::kDescriptorFirst)) std::memcpy(rest.data_ptr(), descriptor.data(), descriptor.size());
    put_payload(rest, s.payload_offset);
  }
  auto state = std::make_shared<Work::State>();
  const std::string context = dist::peer_context(op, "to", dst, init_tag);
  dist::post(*state, group, true, first.to(device), dst, init_tag + dist::kFirstTag, context);
  if (rest.defined()) dist::post(*state, group, true, rest.to(device), dst, init_tag + dist::kRestTag, context);
  return Work(std::move(state));
}

}  // namespace dist

}  // namespace tensordict
