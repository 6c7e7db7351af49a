// The object-list calls as torch issues them (object_lists.h). A peer's
// sizes are checked before they size a buffer: a negative size or a total
// past what an int64 holds is refused, naming the call and the peer, and so
// is a total past the call's max_receive_bytes, before the buffer exists.
#include "distributed/object_lists.h"

#include <ATen/ops/empty.h>
#include <ATen/ops/zeros.h>
#include <fmt/format.h>

#include <cstring>
#include <limits>

#include "distributed/calls.h"
#include "tensordict/errors.h"

namespace tensordict::dist {

namespace {

// Python's send() and recv() default tag.
constexpr int kTag = 0;

at::Tensor sizes_tensor(const std::vector<std::string>& pickles, at::Device device) {
  at::Tensor sizes = at::empty({static_cast<int64_t>(pickles.size())}, at::TensorOptions().dtype(at::kLong));
  for (std::size_t i = 0; i < pickles.size(); ++i) sizes.data_ptr<int64_t>()[i] = static_cast<int64_t>(pickles[i].size());
  return sizes.to(device);
}

// The pickles concatenated, as torch.cat of the per-object tensors.
at::Tensor bytes_tensor(const std::vector<std::string>& pickles, at::Device device) {
  int64_t total = 0;
  for (const auto& p : pickles) total += static_cast<int64_t>(p.size());
  at::Tensor bytes = at::empty({total}, at::TensorOptions().dtype(at::kByte));
  auto* out = static_cast<char*>(bytes.data_ptr());
  for (const auto& p : pickles) {
    std::memcpy(out, p.data(), p.size());
    out += p.size();
  }
  return bytes.to(device);
}

// The sizes a peer announced, checked; their sum.
std::vector<int64_t> checked_sizes(const at::Tensor& sizes, const std::string& context, const std::string& peer) {
  const at::Tensor cpu = sizes.cpu();
  std::vector<int64_t> out(cpu.data_ptr<int64_t>(), cpu.data_ptr<int64_t>() + cpu.numel());
  int64_t total = 0;
  for (std::size_t i = 0; i < out.size(); ++i) {
    if (out[i] < 0 || out[i] > std::numeric_limits<int64_t>::max() - total) {
      throw RuntimeError(fmt::format("{}: {} announced an object of {} bytes (object {}), which no pickle has",
                                     context, peer, out[i], i));
    }
    total += out[i];
  }
  return out;
}

// `sizes` consecutive pickles from `bytes`.
std::vector<std::string> split_pickles(const at::Tensor& bytes, const std::vector<int64_t>& sizes) {
  const at::Tensor cpu = bytes.cpu();
  const auto* in = static_cast<const char*>(cpu.data_ptr());
  std::vector<std::string> out;
  out.reserve(sizes.size());
  for (int64_t size : sizes) {
    out.emplace_back(in, static_cast<std::size_t>(size));
    in += size;
  }
  return out;
}

at::Tensor buffer(int64_t bytes, at::Device device, const std::string& context, const std::string& peer) {
  try {
    return at::zeros({bytes}, at::TensorOptions().dtype(at::kByte).device(device));
  } catch (const std::exception& e) {
    throw RuntimeError(fmt::format("{}: cannot hold the {} bytes {} announced: {}", context, bytes, peer, e.what()));
  }
}

int64_t sum(const std::vector<int64_t>& sizes) {
  int64_t total = 0;
  for (int64_t s : sizes) total += s;
  return total;
}

}  // namespace

void check_announced(int64_t bytes, int64_t max_receive_bytes, const std::string& context, const std::string& peer,
                     const char* what) {
  if (bytes <= max_receive_bytes) return;
  throw ValueError(fmt::format("{}: {} announced {} of {} bytes, more than max_receive_bytes ({}); raise it in the "
                               "call's options to receive more",
                               context, peer, what, bytes, max_receive_bytes));
}

void send_pickles(const std::vector<std::string>& pickles, const ProcessGroupPtr& group, int dst, at::Device device,
                  const std::string& context) {
  check_device(group, device, context, "the object list's device");
  std::vector<at::Tensor> sizes{sizes_tensor(pickles, device)};
  std::vector<at::Tensor> bytes{bytes_tensor(pickles, device)};
  guarded(context, [&] {
    group->send(sizes, dst, kTag)->wait();
    group->send(bytes, dst, kTag)->wait();
  });
}

std::vector<std::string> recv_pickles(std::size_t count, const ProcessGroupPtr& group, int src, at::Device device,
                                      const std::string& context, int64_t max_receive_bytes) {
  check_device(group, device, context, "the object list's device");
  const std::string peer = fmt::format("rank {}", src);
  std::vector<at::Tensor> sizes{at::zeros({static_cast<int64_t>(count)}, at::TensorOptions().dtype(at::kLong).device(device))};
  guarded(context, [&] { group->recv(sizes, src, kTag)->wait(); });
  const std::vector<int64_t> each = checked_sizes(sizes[0], context, peer);
  check_announced(sum(each), max_receive_bytes, context, peer, "pickles");
  std::vector<at::Tensor> bytes{buffer(sum(each), device, context, peer)};
  guarded(context, [&] { group->recv(bytes, src, kTag)->wait(); });
  return split_pickles(bytes[0], each);
}

std::vector<std::string> broadcast_pickles(const std::vector<std::string>& pickles, std::size_t count,
                                           const ProcessGroupPtr& group, int src, at::Device device,
                                           const std::string& context, int64_t max_receive_bytes) {
  check_device(group, device, context, "the object list's device");
  const bool sending = group->getRank() == src;
  const std::string peer = fmt::format("rank {}", src);
  c10d::BroadcastOptions options;
  options.rootRank = src;
  std::vector<at::Tensor> sizes{sending ? sizes_tensor(pickles, device)
                                        : at::zeros({static_cast<int64_t>(count)},
                                                    at::TensorOptions().dtype(at::kLong).device(device))};
  guarded(context, [&] { group->broadcast(sizes, options)->wait(); });
  const std::vector<int64_t> each = checked_sizes(sizes[0], context, peer);
  if (!sending) check_announced(sum(each), max_receive_bytes, context, peer, "pickles");
  std::vector<at::Tensor> bytes{sending ? bytes_tensor(pickles, device) : buffer(sum(each), device, context, peer)};
  guarded(context, [&] { group->broadcast(bytes, options)->wait(); });
  return sending ? pickles : split_pickles(bytes[0], each);
}

std::vector<std::string> all_gather_pickles(const std::string& pickle, const ProcessGroupPtr& group, at::Device device,
                                            const std::string& context, int64_t max_receive_bytes) {
  check_device(group, device, context, "the object list's device");
  const int world = group->getSize();
  // all_gather_single of the sizes, then of the pickles padded to the largest
  // (one flat output of world * largest bytes): Gloo's allgather into a list
  // of per-rank outputs puts the same bytes on the wire.
  std::vector<at::Tensor> size_in{sizes_tensor({pickle}, device)};
  std::vector<std::vector<at::Tensor>> size_out(1);
  for (int r = 0; r < world; ++r) size_out[0].push_back(at::zeros({1}, at::TensorOptions().dtype(at::kLong).device(device)));
  guarded(context, [&] { group->allgather(size_out, size_in)->wait(); });
  std::vector<int64_t> sizes;
  int64_t largest = 0;
  for (int r = 0; r < world; ++r) {
    const std::string peer = fmt::format("rank {}", r);
    const auto s = checked_sizes(size_out[0][static_cast<std::size_t>(r)], context, peer);
    // (Every rank checks every rank's size, so all of them refuse together.)
    check_announced(s[0], max_receive_bytes, context, peer, "pickles");
    sizes.push_back(s[0]);
    largest = std::max(largest, s[0]);
  }
  at::Tensor mine = at::zeros({largest}, at::TensorOptions().dtype(at::kByte));
  std::memcpy(mine.data_ptr(), pickle.data(), pickle.size());
  std::vector<at::Tensor> in{mine.to(device)};
  std::vector<std::vector<at::Tensor>> out(1);
  for (int r = 0; r < world; ++r) out[0].push_back(buffer(largest, device, context, fmt::format("rank {}", r)));
  guarded(context, [&] { group->allgather(out, in)->wait(); });
  std::vector<std::string> pickles;
  for (int r = 0; r < world; ++r) {
    pickles.push_back(split_pickles(out[0][static_cast<std::size_t>(r)], {sizes[static_cast<std::size_t>(r)]})[0]);
  }
  return pickles;
}

}  // namespace tensordict::dist
