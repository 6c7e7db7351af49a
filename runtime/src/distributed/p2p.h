// The two protocols behind send/recv/isend/irecv (private; p2p.cpp picks one)
// and tensordict's all_reduce/reduce (collectives.cpp picks).
#pragma once

#include "tensordict/distributed.h"

namespace tensordict::dist {

struct PerLeafResult {
  Work work;
  int last_tag;  // the tag of the last message posted (init_tag - 1 with none; 0 consolidated)
};

// tensordict's protocol (per_leaf.cpp): posts every message at once.
PerLeafResult post_per_leaf(const TensorDict& td, const ProcessGroupPtr& group, int peer, const SendOptions& options,
                            bool sending, const char* op);

// The packed protocol (send.cpp, receive.cpp, messages.h): kTagsUsed tags from init_tag on.
Work post_packed_send(const TensorDict& td, const ProcessGroupPtr& group, int dst, int init_tag, const char* op);
Work post_packed_recv(const TensorDict& td, const ProcessGroupPtr& group, int src, int init_tag, const char* op);

// all_reduce (`all`) or reduce to `dst` in tensordict's protocol
// (reduce_per_leaf.cpp): one reduction per leaf or per bucket_bytes bucket.
Work reduce_per_leaf(const TensorDict& td, const ProcessGroupPtr& group, bool all, int dst,
                     const ReduceOpOptions& options);

}  // namespace tensordict::dist
