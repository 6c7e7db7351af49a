// send/recv/isend/irecv in tensordict's protocol (_base/distributed.py's
// _send/_recv/_isend/_irecv): one c10d message per tensor leaf, in
// tensordict's order (wire.h's collect_leaves), tagged init_tag, init_tag + 1,
// ... or by the pseudo-random chain (tags.h); or, consolidated, the
// consolidated storage as one uint8 message with tag 0.
#include <ATen/ops/empty.h>
#include <fmt/format.h>

#include "distributed/messages.h"
#include "distributed/p2p.h"
#include "distributed/tags.h"

namespace tensordict::dist {

namespace {

// "recv from rank 1 (tag 3, key ('a', 'b'))": what a timeout or closed peer names.
std::string leaf_context(const char* op, bool sending, int peer, int tag, const std::string& path) {
  return fmt::format("{} {} rank {} (tag {}, key {})", op, sending ? "to" : "from", peer, tag, path);
}

void check_init_tag(const SendOptions& options, const char* op) {
  if (options.pseudo_rand && options.init_tag < 0) {
    throw ValueError(fmt::format("{}: with pseudo_rand, init_tag seeds numpy's generator and must be non-negative, "
                                 "got {}",
                                 op, options.init_tag));
  }
}

// The consolidated storage the single message is read from or written into.
at::Tensor consolidated_storage_for(const TensorDict& td, bool sending, const char* op, int peer) {
  if (auto storage = td.consolidated_storage()) return *storage;
  if (sending) return *td.consolidate().consolidated_storage();
  throw ValueError(fmt::format("{}(consolidated=True) from rank {}: the tensordict is not consolidated; receive into "
                               "a consolidate()d tensordict with the sender's structure (or from_remote_init's "
                               "result)",
                               op, peer));
}

}  // namespace

PerLeafResult post_per_leaf(const TensorDict& td, const ProcessGroupPtr& group, int peer, const SendOptions& options,
                            bool sending, const char* op) {
  auto state = std::make_shared<Work::State>();
  if (options.consolidated) {
    at::Tensor storage = consolidated_storage_for(td, sending, op, peer);
    check_device(group, storage.device(), fmt::format("{}(consolidated=True) {} rank {}", op, sending ? "to" : "from", peer),
                 "the consolidated storage");
    post(*state, group, sending, storage, peer, 0,
         fmt::format("{}(consolidated=True) {} rank {} ({} bytes)", op, sending ? "to" : "from", peer,
                     storage.numel()),
         /*skip_empty=*/false);
    return {Work(std::move(state)), 0};
  }
  check_init_tag(options, op);
  Leaves leaves = collect_leaves(td, op);
  // Every leaf checked before the first is posted: none is left half sent.
  for (const Leaf& leaf : leaves.leaves) {
    if (leaf.tensor.is_cuda() || !cuda_only(group)) continue;
    check_device(group, leaf.tensor.device(), fmt::format("{} {} rank {}", op, sending ? "to" : "from", peer),
                 "key " + leaf.path);
  }
  int tag = options.init_tag - 1;
  std::vector<std::pair<std::size_t, at::Tensor>> copies_back;  // leaf index, its buffer
  for (std::size_t i = 0; i < leaves.leaves.size(); ++i) {
    const Leaf& leaf = leaves.leaves[i];
    tag = next_tag(tag, options.pseudo_rand);
    // c10d moves contiguous tensors only: a strided leaf travels through a
    // contiguous copy (received ones are written back once they arrive).
    at::Tensor t = leaf.tensor.is_contiguous() ? leaf.tensor.detach() : leaf.tensor.detach().contiguous();
    if (!sending && !leaf.tensor.is_contiguous()) copies_back.emplace_back(i, t);
    post(*state, group, sending, t, peer, tag, leaf_context(op, sending, peer, tag, leaf.path), /*skip_empty=*/false);
  }
  if (!copies_back.empty()) {
    state->finish = [leaves = std::move(leaves), copies_back = std::move(copies_back)] {
      for (const auto& [i, value] : copies_back) write_leaf(leaves.leaves[i], value);
    };
  }
  return {Work(std::move(state)), tag};
}

}  // namespace tensordict::dist
