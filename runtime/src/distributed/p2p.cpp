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

}  // namespace

Work isend(const TensorDict& td, const ProcessGroupPtr& group, int dst, const SendOptions& options) {
  if (packed(options, "isend")) return dist::post_packed_send(td, group, dst, options.init_tag, "isend");
  return dist::post_per_leaf(td, group, dst, options, true, "isend").work;
}

int send(const TensorDict& td, const ProcessGroupPtr& group, int dst, const SendOptions& options) {
  if (packed(options, "send")) {
    dist::post_packed_send(td, group, dst, options.init_tag, "send").wait();
    return options.init_tag + dist::kTagsUsed - 1;
  }
  auto posted = dist::post_per_leaf(td, group, dst, options, true, "send");
  posted.work.wait();
  return posted.last_tag;
}

Work irecv(const TensorDict& td, const ProcessGroupPtr& group, int src, const RecvOptions& options) {
  if (packed(options, "irecv")) return dist::post_packed_recv(td, group, src, options.init_tag, "irecv");
  return dist::post_per_leaf(td, group, src, options, false, "irecv").work;
}

int recv(const TensorDict& td, const ProcessGroupPtr& group, int src, const RecvOptions& options) {
  if (packed(options, "recv")) {
    dist::post_packed_recv(td, group, src, options.init_tag, "recv").wait();
    return options.init_tag + dist::kTagsUsed - 1;
  }
  auto posted = dist::post_per_leaf(td, group, src, options, false, "recv");
  posted.work.wait();
  return posted.last_tag;
}

}  // namespace tensordict
