// all_reduce, reduce; broadcast and gather_and_stack in the packed protocol.
//
// Every collective first agrees on the structure: one all_reduce(MAX) of
// {hash, -hash} tells every rank at once whether all hashes are equal; only
// then (all ranks together, so none is left waiting) are the descriptors
// gathered to name the first differing key.
#include <ATen/ops/empty.h>
#include <fmt/format.h>

#include <cstring>
#include <map>
#include <stdexcept>

#include "storage/flat_storage.h"
#include "core/format.h"
#include "distributed/calls.h"
#include "distributed/packed_calls.h"
#include "tensordict/errors.h"
#include "distributed/wire.h"
#include "distributed/p2p.h"

namespace tensordict {

namespace dist {

void post_reduction(Work::State& state, const ProcessGroupPtr& group, bool all, int dst, c10d::ReduceOp op,
                    at::Tensor t, const std::string& context) {
  std::vector<at::Tensor> tensors{t};
  auto work = guarded(context, [&] {
    if (all) {
      c10d::AllreduceOptions options;
      options.reduceOp = op;
      return group->allreduce(tensors, options);
    }
    c10d::ReduceOptions options;
    options.reduceOp = op;
    options.rootRank = dst;
    return group->reduce(tensors, options);
  });
  state.posted.push_back({std::move(work), context});
  state.buffers.push_back(std::move(t));
}

}  // namespace dist

namespace {

// A descriptor standing for a local error (a destination of the wrong size):
// every rank sees the structures differ and reports the text.
const std::string kLocalError("\0!", 2);

at::TensorOptions on(const dist::Leaves& leaves, at::ScalarType dtype) {
  return at::TensorOptions().dtype(dtype).device(leaves.device.value_or(at::Device(at::kCPU)));
}

at::Tensor int64s(std::initializer_list<int64_t> values, at::Device device) {
  at::Tensor t = at::empty({static_cast<int64_t>(values.size())}, at::TensorOptions().dtype(at::kLong));
  std::copy(values.begin(), values.end(), t.data_ptr<int64_t>());
  return t.to(device);
}

std::string gathered_text(const at::Tensor& bytes, int64_t size) {
  const at::Tensor cpu = bytes.cpu();
  return std::string(static_cast<const char*>(cpu.data_ptr()), static_cast<std::size_t>(size));
}

void check_structure(const ProcessGroupPtr& group, const dist::Leaves& leaves, const std::string& descriptor,
                     const std::string& context) {
  // 62 bits, so that -hash is an int64 and MAX(hash) == -MAX(-hash) means all equal.
  const int64_t h = static_cast<int64_t>(dist::structure_hash(descriptor) >> 2);
  const at::Device device = on(leaves, at::kLong).device();
  dist::check_device(group, device, context, "the tensordict");
  std::vector<at::Tensor> check{int64s({h, -h}, device)};
  c10d::AllreduceOptions max;
  max.reduceOp = c10d::ReduceOp::MAX;
  dist::guarded(context, [&] { group->allreduce(check, max)->wait(); });
  const at::Tensor r = check[0].cpu();
  if (r.data_ptr<int64_t>()[0] == -r.data_ptr<int64_t>()[1]) {
    if (descriptor.starts_with(kLocalError)) throw ValueError(context + ": " + descriptor.substr(2));
    return;
  }
  // The structures differ somewhere: every rank learns every descriptor.
  const int world = group->getSize();
  std::vector<at::Tensor> size_in{int64s({static_cast<int64_t>(descriptor.size())}, device)};
  std::vector<std::vector<at::Tensor>> size_out(1);
  for (int r = 0; r < world; ++r) size_out[0].push_back(at::empty({1}, at::TensorOptions().dtype(at::kLong).device(device)));
  dist::guarded(context, [&] { group->allgather(size_out, size_in)->wait(); });
  int64_t longest = 0;
  std::vector<int64_t> sizes;
  for (const auto& s : size_out[0]) sizes.push_back(s.cpu().data_ptr<int64_t>()[0]);
  for (int64_t s : sizes) longest = std::max(longest, s);
  at::Tensor mine = at::zeros({std::max<int64_t>(longest, 1)}, at::TensorOptions().dtype(at::kByte));
  std::memcpy(mine.data_ptr(), descriptor.data(), descriptor.size());
  std::vector<at::Tensor> text_in{mine.to(device)};
  std::vector<std::vector<at::Tensor>> text_out(1);
  for (int r = 0; r < world; ++r) text_out[0].push_back(at::empty_like(text_in[0]));
  dist::guarded(context, [&] { group->allgather(text_out, text_in)->wait(); });

  if (descriptor.starts_with(kLocalError)) throw ValueError(context + ": " + descriptor.substr(2));
  for (int r = 0; r < world; ++r) {
    const std::string theirs = gathered_text(text_out[0][r], sizes[r]);
    if (theirs.starts_with(kLocalError)) {
      throw RuntimeError(fmt::format("{}: rank {} failed: {}", context, r, theirs.substr(2)));
    }
    if (auto why = dist::first_difference(theirs, descriptor, fmt::format("rank {}", r))) {
      throw RuntimeError(context + ": " + *why);
    }
  }
}

// One buffer per dtype (leaves in order, no padding: one dtype aligns itself).
struct DtypeBuffer {
  at::Tensor buffer;
  std::vector<const dist::Leaf*> leaves;
  std::vector<int64_t> offsets;  // in elements
};

std::vector<DtypeBuffer> buffers_by_dtype(const dist::Leaves& leaves) {
  std::map<at::ScalarType, DtypeBuffer> by;
  std::vector<at::ScalarType> order;
  std::map<at::ScalarType, int64_t> numel;
  for (const auto& leaf : leaves.leaves) {
    const auto dtype = leaf.tensor.scalar_type();
    if (!by.count(dtype)) order.push_back(dtype);
    auto& b = by[dtype];
    b.leaves.push_back(&leaf);
    b.offsets.push_back(numel[dtype]);
    numel[dtype] += leaf.tensor.numel();
  }
  std::vector<DtypeBuffer> out;
  at::NoGradGuard no_grad;
  for (auto dtype : order) {
    auto& b = by[dtype];
    b.buffer = at::empty({numel[dtype]}, on(leaves, dtype));
    for (std::size_t i = 0; i < b.leaves.size(); ++i) {
      const at::Tensor& t = b.leaves[i]->tensor;
      detail::view_storage(b.buffer, b.buffer.dtype(), t.sizes(), c10::contiguous_strides(t.sizes()), b.offsets[i]).copy_(t);
    }
    out.push_back(std::move(b));
  }
  return out;
}

void copy_back(const DtypeBuffer& b) {
  for (std::size_t i = 0; i < b.leaves.size(); ++i) {
    const dist::Leaf& leaf = *b.leaves[i];
    dist::write_leaf(leaf, detail::view_storage(b.buffer, b.buffer.dtype(), leaf.tensor.sizes(),
                                                c10::contiguous_strides(leaf.tensor.sizes()), b.offsets[i]));
  }
}

// The consolidated storage seen as the one dtype of every leaf, when that is
// possible: reduced in place, with no copy (padding between leaves is reduced too, harmlessly).
at::Tensor storage_as_one_dtype(const TensorDict& td, const dist::Leaves& leaves) {
  if (leaves.leaves.empty()) return {};
  const auto dtype = leaves.leaves.front().tensor.scalar_type();
  for (const auto& leaf : leaves.leaves) {
    if (leaf.tensor.scalar_type() != dtype) return {};
  }
  const at::Tensor storage = dist::storage_in_wire_layout(td, leaves);
  const int64_t size = leaves.leaves.front().tensor.element_size();
  if (!storage.defined() || storage.numel() % size != 0) return {};
  return detail::view_storage(storage, c10::scalarTypeToTypeMeta(dtype), {storage.numel() / size}, {1}, 0);
}

enum class ReduceKind { All, ToOne };

Work reduce_impl(const TensorDict& td, const ProcessGroupPtr& group, ReduceKind kind, int dst, c10d::ReduceOp op,
                 bool async_op) {
  const bool all = kind == ReduceKind::All;
  const std::string context = all ? std::string("all_reduce") : fmt::format("reduce to rank {}", dst);
  auto leaves = std::make_shared<dist::Leaves>(dist::collect_leaves(td, all ? "all_reduce" : "reduce"));
  check_structure(group, *leaves, dist::describe(*leaves), context);
  if (leaves->leaves.empty()) return Work();

  auto state = std::make_shared<Work::State>();
  const bool result_here = all || group->getRank() == dst;
  // Only where the result lands may the leaves' own storage be the buffer:
  // c10d's reduce may leave partial sums in the other ranks' inputs.
  std::vector<at::Tensor> in_place;
  if (result_here) {
    at::Tensor storage = storage_as_one_dtype(td, *leaves);
    if (storage.defined()) in_place.push_back(storage);
  }
  auto buffers = std::make_shared<std::vector<DtypeBuffer>>();
  if (in_place.empty()) *buffers = buffers_by_dtype(*leaves);
  for (auto& t : in_place) dist::post_reduction(*state, group, all, dst, op, t, context);
  for (auto& b : *buffers) dist::post_reduction(*state, group, all, dst, op, b.buffer, context);
  if (result_here && !buffers->empty()) {
    state->finish = [leaves, buffers] {
      for (const auto& b : *buffers) copy_back(b);
    };
  }
  Work work(std::move(state));
  if (!async_op) work.wait();
  return work;
}

// Element `j` of `td` along its first batch dim, as views of its storage
// (indexing dispatches on the kind: a lazy stack's keeps it lazy, its
// members or their views).
TensorDict element(const TensorDict& td, int64_t j) { return td.index({j}); }

}  // namespace

// The packed protocol has its own buckets (one per dtype).
void check_packed(const ReduceOpOptions& options, const char* op) {
  if (options.bucket_bytes) {
    throw ValueError(fmt::format("{}: bucket_bytes belongs to WireProtocol::tensordict; the packed protocol reduces "
                                 "one buffer per dtype",
                                 op));
  }
}

Work all_reduce(const TensorDict& td, const ProcessGroupPtr& group, const ReduceOpOptions& options) {
  if (options.protocol == WireProtocol::tensordict) return dist::reduce_per_leaf(td, group, true, 0, options);
  check_packed(options, "all_reduce");
  return reduce_impl(td, group, ReduceKind::All, 0, options.op, options.async_op);
}

Work reduce(const TensorDict& td, const ProcessGroupPtr& group, int dst, const ReduceOpOptions& options) {
  if (options.protocol == WireProtocol::tensordict) return dist::reduce_per_leaf(td, group, false, dst, options);
  check_packed(options, "reduce");
  return reduce_impl(td, group, ReduceKind::ToOne, dst, options.op, options.async_op);
}

void dist::broadcast_packed(const TensorDict& td, const ProcessGroupPtr& group, int src) {
  const std::string context = fmt::format("broadcast from rank {}", src);
  const dist::Leaves leaves = dist::collect_leaves(td, "broadcast");
  check_structure(group, leaves, dist::describe(leaves), context);
  if (leaves.bytes == 0) return;
  const bool source = group->getRank() == src;
  at::Tensor buffer = dist::storage_in_wire_layout(td, leaves);
  const bool into_leaves = !buffer.defined() && !source;
  if (!buffer.defined()) buffer = source ? dist::pack(leaves) : at::empty({leaves.bytes}, on(leaves, at::kByte));
  std::vector<at::Tensor> tensors{buffer};
  c10d::BroadcastOptions options;
  options.rootRank = src;
  dist::guarded(context, [&] { group->broadcast(tensors, options)->wait(); });
  if (into_leaves) dist::unpack(leaves, buffer);
}

void dist::gather_and_stack_packed(const TensorDict& td, const ProcessGroupPtr& group, int dst) {
  const std::string context = fmt::format("gather_and_stack to rank {}", dst);
  const int world = group->getSize();
  const bool destination = group->getRank() == dst;
  // The destination compares one element of its stack with what each rank sends.
  std::string descriptor;
  dist::Leaves leaves;
  if (destination && (td.batch_dims() == 0 || td.batch_size()[0] != world - 1)) {
    descriptor = kLocalError + fmt::format("the destination's batch size {} must start with world_size - 1 = {}",
                                           shape_string(td.batch_size()), world - 1);
    if (world == 1) throw ValueError(context + ": " + descriptor.substr(2));
  } else if (world == 1) {
    return;  // a group of one: no element to describe, nothing to gather
  } else {
    leaves = dist::collect_leaves(destination ? element(td, 0) : td, "gather_and_stack");
    descriptor = dist::describe(leaves);
  }
  check_structure(group, leaves, descriptor, context);
  if (leaves.bytes == 0) return;

  at::Tensor input = destination ? at::Tensor() : dist::storage_in_wire_layout(td, leaves);
  if (!input.defined()) input = destination ? at::empty({leaves.bytes}, on(leaves, at::kByte)) : dist::pack(leaves);
  std::vector<at::Tensor> inputs{input};
  std::vector<std::vector<at::Tensor>> outputs;
  if (destination) {
    outputs.emplace_back();
    for (int r = 0; r < world; ++r) outputs[0].push_back(at::empty({leaves.bytes}, on(leaves, at::kByte)));
  }
  c10d::GatherOptions options;
  options.rootRank = dst;
  dist::guarded(context, [&] { group->gather(outputs, inputs, options)->wait(); });
  if (!destination) return;
  for (int r = 0; r < world; ++r) {
    if (r == dst) continue;
    dist::unpack(dist::collect_leaves(element(td, r < dst ? r : r - 1), "gather_and_stack"), outputs[0][r]);
  }
}

}  // namespace tensordict
