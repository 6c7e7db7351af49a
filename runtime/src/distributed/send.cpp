// send and isend (the messages: messages.h).
#include <ATen/ops/empty.h>
#include <fmt/format.h>

#include <cstring>

#include "messages.h"

namespace tensordict {

namespace dist {

void post(Work::State& state, const ProcessGroupPtr& group, bool sending, at::Tensor t, int peer, int tag,
          const std::string& context) {
  if (t.numel() == 0) return;
  std::vector<at::Tensor> tensors{t};
  auto work = guarded(context, [&] { return sending ? group->send(tensors, peer, tag) : group->recv(tensors, peer, tag); });
  state.posted.push_back({std::move(work), context});
  state.buffers.push_back(std::move(t));
}

std::string peer_context(const char* op, const char* dir, int peer, int tag) {
  return fmt::format("{} {} rank {} (tag {})", op, dir, peer, tag);
}

}  // namespace dist

namespace {

at::Tensor bytes_tensor(const std::string& bytes, at::Device device) {
  at::Tensor t = at::empty({static_cast<int64_t>(bytes.size())}, at::TensorOptions().dtype(at::kByte));
  if (!bytes.empty()) std::memcpy(t.data_ptr(), bytes.data(), bytes.size());
  return t.to(device);
}

Work post_send(const TensorDictBase& td, const ProcessGroupPtr& group, int dst, int init_tag, const char* op) {
  const dist::Leaves leaves = dist::collect_leaves(td, op);
  const std::string descriptor = dist::describe(leaves);
  const at::Device device = dist::device_of(leaves);
  at::Tensor header = at::empty({dist::kHeaderLength}, at::TensorOptions().dtype(at::kLong));
  auto* h = header.data_ptr<int64_t>();
  h[0] = dist::kMagic;
  h[1] = static_cast<int64_t>(dist::structure_hash(descriptor));
  h[2] = static_cast<int64_t>(descriptor.size());
  h[3] = leaves.bytes;
  at::Tensor payload = dist::storage_in_wire_layout(td, leaves);
  if (!payload.defined()) payload = dist::pack(leaves);

  auto state = std::make_shared<Work::State>();
  const std::string context = dist::peer_context(op, "to", dst, init_tag);
  dist::post(*state, group, true, header.to(device), dst, init_tag + dist::kHeaderTag, context);
  dist::post(*state, group, true, bytes_tensor(descriptor, device), dst, init_tag + dist::kDescriptorTag, context);
  dist::post(*state, group, true, payload, dst, init_tag + dist::kPayloadTag, context);
  return Work(std::move(state));
}

}  // namespace

Work isend(const TensorDictBase& td, const ProcessGroupPtr& group, int dst, int init_tag) {
  return post_send(td, group, dst, init_tag, "isend");
}

int send(const TensorDictBase& td, const ProcessGroupPtr& group, int dst, int init_tag) {
  post_send(td, group, dst, init_tag, "send").wait();
  return init_tag + dist::kTagsUsed;
}

}  // namespace tensordict
