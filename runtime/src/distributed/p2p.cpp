// send, recv, isend, irecv: tensordict's protocol unless the options ask for
// the packed one (or consolidated, which is tensordict's single message).
#include <fmt/format.h>

#include "distributed/messages.h"
#include "distributed/p2p.h"

namespace tensordict {

namespace {

bool packed(const SendOptions& options, const char* op) {
  if (options.protocol != WireProtocol::packed) return false;
  if (options.pseudo_rand || options.consolidated) {
    throw ValueError(fmt::format("{}: pseudo_rand and consolidated belong to WireProtocol::tensordict; the packed "
                                 "protocol uses two tags from init_tag on",
                                 op));
  }
  return true;
}

// Posts the transfer in the chosen protocol; `last_tag` gets the tag of its last message.
Work post(const TensorDict& td, const ProcessGroupPtr& group, int peer, const SendOptions& options, bool sending,
          const char* op, int* last_tag = nullptr) {
  if (packed(options, op)) {
    if (last_tag) *last_tag = options.init_tag + dist::kTagsUsed - 1;
    return sending ? dist::post_packed_send(td, group, peer, options.init_tag, op)
                   : dist::post_packed_recv(td, group, peer, options.init_tag, op);
  }
  auto posted = dist::post_per_leaf(td, group, peer, options, sending, op);
  if (last_tag) *last_tag = posted.last_tag;
  return std::move(posted.work);
}

int transfer(const TensorDict& td, const ProcessGroupPtr& group, int peer, const SendOptions& options, bool sending,
             const char* op) {
  int last_tag = 0;
  post(td, group, peer, options, sending, op, &last_tag).wait();
  return last_tag;
}

}  // namespace

Work isend(const TensorDict& td, const ProcessGroupPtr& group, int dst, const SendOptions& options) {
  return post(td, group, dst, options, true, "isend");
}

int send(const TensorDict& td, const ProcessGroupPtr& group, int dst, const SendOptions& options) {
  return transfer(td, group, dst, options, true, "send");
}

Work irecv(const TensorDict& td, const ProcessGroupPtr& group, int src, const RecvOptions& options) {
  return post(td, group, src, options, false, "irecv");
}

int recv(const TensorDict& td, const ProcessGroupPtr& group, int src, const RecvOptions& options) {
  return transfer(td, group, src, options, false, "recv");
}

}  // namespace tensordict
