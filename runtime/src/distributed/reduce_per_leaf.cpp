// all_reduce and reduce in tensordict's protocol (_base/distributed.py): the
// same c10d collectives in the same order as a Python rank issues them.
// - all_reduce: every tensor leaf in insertion order, depth first (its
//   _fast_apply), a lazy stack member after member;
// - reduce: the keys sorted at each level (its _reduce), a lazy stack as the
//   stacked leaf of each key, written back into the members on rank dst;
// - with bucket_bytes (_bucketed_collective): the leaves grouped by device
//   and dtype in the order of each group's first leaf, each group cut into
//   buckets of at most bucket_bytes (a larger leaf alone), a bucket of several
//   leaves reduced as their concatenation; a non-contiguous leaf alone.
// The leaves are reduced in place on every rank, as Python does: after
// reduce, the other ranks' values are not defined.
#include <ATen/core/grad_mode.h>
#include <ATen/ops/cat.h>
#include <fmt/format.h>

#include <algorithm>
#include <exception>
#include <map>
#include <tuple>

#include "core/kind_ops.h"
#include "distributed/calls.h"
#include "distributed/p2p.h"
#include "distributed/wire.h"
#include "tensordict/errors.h"
#include "tensordict/lazy.h"

namespace tensordict::dist {

namespace {

struct Entry {
  std::string path;  // as the messages show it: ('a', 'b')
  at::Tensor buffer;  // reduced in place: the leaf itself, or a copy
  bool packable = true;  // may join a bucket (Python: strided and contiguous)
  std::optional<Leaf> write_back;  // the leaf `buffer` is a copy of
};

void add_leaf(std::vector<Entry>& out, const TensorDict& level, const std::string& key, const at::Tensor& t,
              std::vector<std::string>& parts, bool stacked_copy) {
  parts.push_back(fmt::format("'{}'", key));
  Leaf leaf{path_repr(parts), level, key, t, 0};
  parts.pop_back();
  if (t.is_contiguous() && !stacked_copy) {
    out.push_back({std::move(leaf.path), t.detach(), true, std::nullopt});
  } else {
    // c10d reduces contiguous tensors only; the result is written back.
    std::string path = leaf.path;
    out.push_back({std::move(path), t.detach().contiguous(), stacked_copy, std::move(leaf)});
  }
}

// all_reduce's order (`sorted` false): insertion order, a lazy stack member
// by member. reduce's (`sorted`): the keys sorted, a lazy stack's value at a
// key the stack of its members' (a copy, written back on rank dst).
void walk(const TensorDict& td, bool sorted, std::vector<std::string>& parts, std::vector<Entry>& out) {
  const auto* stacked = detail::as_stacked(*td.impl());
  const bool lazy = stacked != nullptr;
  if (lazy && !sorted) {
    for (const TensorDict& member : stacked->members()) walk(member, sorted, parts, out);
    return;
  }
  for (const auto& [key, value] : sorted ? sorted_items(td) : td.items()) {
    const std::string& name = key.path().back();
    if (value.is_tensor()) {
      add_leaf(out, td, name, value.tensor(), parts, lazy);
    } else if (value.is_tensordict()) {
      parts.push_back(fmt::format("'{}'", name));
      walk(value.tensordict(), sorted, parts, out);
      parts.pop_back();
    }  // non-tensor data is not reduced
  }
}

// _bucketed_collective's buckets (indices into `entries`).
std::vector<std::vector<std::size_t>> buckets_of(const std::vector<Entry>& entries, int64_t bucket_bytes) {
  std::vector<std::vector<std::size_t>> buckets;
  std::vector<std::tuple<at::Device, at::ScalarType>> order;
  std::map<std::tuple<std::string, at::ScalarType>, std::vector<std::size_t>> groups;
  for (std::size_t i = 0; i < entries.size(); ++i) {
    const at::Tensor& t = entries[i].buffer;
    if (!entries[i].packable) {
      buckets.push_back({i});
      continue;
    }
    auto& group = groups[{t.device().str(), t.scalar_type()}];
    if (group.empty()) order.emplace_back(t.device(), t.scalar_type());
    group.push_back(i);
  }
  for (const auto& [device, dtype] : order) {
    std::vector<std::size_t> bucket;
    int64_t size = 0;
    for (std::size_t i : groups[{device.str(), dtype}]) {
      const int64_t nbytes = entries[i].buffer.numel() * entries[i].buffer.element_size();
      if (!bucket.empty() && size + nbytes > bucket_bytes) {
        buckets.push_back(std::move(bucket));
        bucket.clear();
        size = 0;
      }
      bucket.push_back(i);
      size += nbytes;
    }
    buckets.push_back(std::move(bucket));
  }
  return buckets;
}

}  // namespace

Work reduce_per_leaf(const TensorDict& td, const ProcessGroupPtr& group, bool all, int dst,
                     const ReduceOpOptions& options) {
  const std::string context = all ? std::string("all_reduce") : fmt::format("reduce to rank {}", dst);
  if (options.bucket_bytes && *options.bucket_bytes <= 0) {
    throw ValueError(fmt::format("{}: bucket_bytes must be a positive number of bytes, got {}", context,
                                 *options.bucket_bytes));
  }
  auto entries = std::make_shared<std::vector<Entry>>();
  std::vector<std::string> parts;
  walk(td, /*sorted=*/!all, parts, *entries);
  for (const Entry& entry : *entries) {
    if (!entry.buffer.is_cuda() && cuda_only(group)) check_device(group, entry.buffer.device(), context, "key " + entry.path);
  }
  // Python's reduce on a rank other than dst neither copies back nor writes into lazy members.
  const bool result_here = all || group->getRank() == dst;

  auto state = std::make_shared<Work::State>();
  std::vector<std::vector<std::size_t>> buckets;
  if (options.bucket_bytes) {
    buckets = buckets_of(*entries, *options.bucket_bytes);
  } else {
    for (std::size_t i = 0; i < entries->size(); ++i) buckets.push_back({i});
  }
  // Bucket `b`'s flat buffer when it holds several leaves (copied back after).
  auto flats = std::make_shared<std::vector<std::pair<std::vector<std::size_t>, at::Tensor>>>();
  {
    at::NoGradGuard no_grad;
    for (const auto& bucket : buckets) {
      at::Tensor flat;
      if (bucket.size() == 1) {
        flat = (*entries)[bucket[0]].buffer;
      } else {
        std::vector<at::Tensor> pieces;
        for (std::size_t i : bucket) pieces.push_back((*entries)[i].buffer.reshape(-1));
        flat = at::cat(pieces);
        flats->emplace_back(bucket, flat);
      }
      post_reduction(*state, group, all, dst, options.op, flat, context);
    }
  }
  if (result_here) {
    state->finish = [entries, flats] {
      at::NoGradGuard no_grad;
      for (const auto& [bucket, flat] : *flats) {
        int64_t at = 0;
        for (std::size_t i : bucket) {
          at::Tensor& buffer = (*entries)[i].buffer;
          buffer.copy_(flat.narrow(0, at, buffer.numel()).view(buffer.sizes()));
          at += buffer.numel();
        }
      }
      // Every write-back runs; the first failure is reported after (as _finish_reduce).
      std::exception_ptr first;
      for (const auto& entry : *entries) {
        if (!entry.write_back) continue;
        try {
          write_leaf(*entry.write_back, entry.buffer);
        } catch (...) {
          if (!first) first = std::current_exception();
        }
      }
      if (first) std::rethrow_exception(first);
    };
  }
  Work work(std::move(state));
  if (!options.async_op) work.wait();
  return work;
}

}  // namespace tensordict::dist
