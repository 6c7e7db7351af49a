// tensordict's own protocol for the calls that send a structure the
// receiver does not know: init_remote / from_remote_init, broadcast,
// all_gather and gather_and_stack (its Gloo path), as
// tensordict/_base/distributed.py issues them. The structure is the
// consolidated metadata (consolidate(metadata=True): storage/
// consolidated_file.h gives its layout), pickled (pickle.h); the data is the
// consolidated storage, one uint8 tensor. The receiver checks every field of
// the metadata against the storage before it makes a view
// (tensordict_from_consolidated_metadata), so a malformed or hostile peer
// gets an error naming the call, the peer and the key.
#include <ATen/ops/empty.h>
#include <nlohmann/json.hpp>
#include <ATen/ops/zeros.h>
#include <fmt/format.h>

#include <cstring>
#include <limits>
#include <string_view>

#include "core/kind_ops.h"
#include "core/format.h"
#include "distributed/calls.h"
#include "distributed/object_lists.h"
#include "distributed/packed_calls.h"
#include "distributed/pickle.h"
#include "storage/consolidated_file.h"
#include "storage/flat_storage.h"  // align_up
#include "tensordict/errors.h"
#include "tensordict/lazy.h"
#include "tensordict/memmap.h"  // kLoadedClassKey
#include "tensordict/non_tensor.h"

namespace tensordict {

namespace {

// gather_and_stack's kinds of buffer (tensordict's _GATHER_*).
constexpr int64_t kGatherNothing = 0, kGatherPickle = 1, kGatherStorage = 2;

// Where object lists travel by default (torch's _get_object_coll_device).
at::Device object_device(const ProcessGroupPtr& group) {
  return group->getBackendName() == "nccl" ? at::Device(at::kCUDA) : at::Device(at::kCPU);
}

// `td` consolidated, with the storage that goes on the wire and its metadata.
struct Consolidated {
  TensorDict td;
  at::Tensor storage;
  Json metadata;
};
Consolidated consolidated(const TensorDict& td, bool reuse, std::optional<at::Device> device) {
  Consolidated out{reuse && td.is_consolidated() ? td : td.consolidate({.device = device}), {}, {}};
  out.storage = *out.td.consolidated_storage();
  out.metadata = detail::consolidated_metadata(out.td, out.storage, td.is_locked());
  // tensordict pads every leaf to 8 bytes, the last one too, and its
  // metadata says so: the storage on the wire ends past that padding.
  const int64_t padded = detail::align_up(out.storage.numel(), 8);
  if (padded != out.storage.numel()) {
    at::Tensor wire = at::zeros({padded}, out.storage.options());
    wire.narrow(0, 0, out.storage.numel()).copy_(out.storage);
    out.storage = wire;
  }
  return out;
}

// A peer's metadata field `name` as a non-negative integer; removed from `meta`.
int64_t pop_size(Json& meta, const char* name, const std::string& context) {
  auto it = meta.find(name);
  if (it == meta.end() || !it->is_number_integer() || it->get<int64_t>() < 0) {
    throw RuntimeError(fmt::format("{}: the metadata has no valid \"{}\" (a non-negative int), got {}", context, name,
                                   it == meta.end() ? std::string("nothing") : it->dump()));
  }
  const int64_t value = it->get<int64_t>();
  meta.erase(it);
  return value;
}
// A peer's optional string field `name`; removed from `meta`.
std::optional<std::string> pop_string(Json& meta, const char* name, const std::string& context) {
  auto it = meta.find(name);
  if (it == meta.end()) return std::nullopt;
  if (!it->is_string()) {
    throw RuntimeError(fmt::format("{}: the metadata's \"{}\" must be a str, got {}", context, name, it->dump()));
  }
  std::string value = it->get<std::string>();
  meta.erase(it);
  return value;
}

Json read_metadata(const std::string& bytes, const std::string& context) {
  Json meta = dist::pickle::loads(bytes, context);
  if (!meta.is_object()) {
    throw RuntimeError(fmt::format("{}: the metadata must be a dict, got a {}", context, meta.type_name()));
  }
  return meta;
}

// The tensordict `meta` describes over `storage` (checked against it), on
// `device` (the storage's own when it is on the CPU).
TensorDict rebuild(const Json& meta, const at::Tensor& storage, const std::string& context,
                   std::optional<std::string> tensorclass_type) {
  const bool on_cpu = storage.device().is_cpu();
  const at::Tensor host = on_cpu ? storage : storage.cpu();
  TensorDict td = detail::tensordict_from_consolidated_metadata(meta, host, fmt::format("metadata ({})", context),
                                                                std::filesystem::path(context));
  if (tensorclass_type) {
    // Kept as a tensorclass read without its C++ type keeps it: sent on
    // again, it is the same Python class.
    if (detail::as_stacked(*td.impl()) || td.contains(std::string(kLoadedClassKey))) {
      throw RuntimeError(fmt::format("{}: \"_tensorclass_type\" {} names the class of a tensordict that cannot hold "
                                     "one",
                                     context, *tensorclass_type));
    }
    const bool locked = td.is_locked();
    if (locked) td.unlock_();
    td.set(std::string(kLoadedClassKey), NonTensorData(fmt::format("<class '{}'>", *tensorclass_type)));
    if (locked) td.lock_();
  }
  // A storage on an accelerator: the tree read on the CPU, moved in one block.
  return on_cpu ? td : TensorDict(td.to(storage.device()));
}

std::string metadata_pickle(Consolidated& c, const std::string& tensorclass_type, bool with_device,
                            const std::string& context) {
  c.metadata["_total_bytes"] = c.storage.numel();
  if (with_device) c.metadata["_storage_device"] = c.storage.device().str();
  if (!tensorclass_type.empty()) c.metadata["_tensorclass_type"] = tensorclass_type;
  return dist::pickle::dumps(c.metadata, dist::pickle::Layout::ConsolidatedMetadata, context);
}

// The buffer a peer's storage of `bytes` is received into, once `bytes` is
// checked against the call's limit. Zeroed: Gloo cannot tell a message
// shorter than the posted buffer apart, and what it does not overwrite must
// read as zeros, not as an earlier allocation of this process.
at::Tensor storage_buffer(int64_t bytes, at::Device device, const std::string& context, const std::string& peer,
                          int64_t max_receive_bytes) {
  dist::check_announced(bytes, max_receive_bytes, context, peer, "a storage");
  try {
    return at::zeros({bytes}, at::TensorOptions().dtype(at::kByte).device(device));
  } catch (const std::exception& e) {
    throw RuntimeError(fmt::format("{}: cannot hold a storage of {} bytes: {}", context, bytes, e.what()));
  }
}

TensorDict broadcast_tensordict(const TensorDict& td, const ProcessGroupPtr& group, int src,
                                std::optional<at::Device> device, const std::string& tensorclass_type,
                                int64_t max_receive_bytes) {
  const std::string context = fmt::format("broadcast from rank {}", src);
  const std::string peer = fmt::format("rank {}", src);
  const at::Device wire = object_device(group);
  c10d::BroadcastOptions options;
  options.rootRank = src;
  if (group->getRank() == src) {
    Consolidated c = consolidated(td, /*reuse=*/true, device);
    dist::check_device(group, c.storage.device(), context, "the consolidated storage");
    const std::string pickle = metadata_pickle(c, tensorclass_type, /*with_device=*/true, context);
    dist::broadcast_pickles({pickle}, 1, group, src, wire, context, max_receive_bytes);
    std::vector<at::Tensor> tensors{c.storage};
    dist::guarded(context, [&] { group->broadcast(tensors, options)->wait(); });
    return c.td;
  }
  // A CPU device asked for on an NCCL group fails before the broadcast starts.
  if (device) dist::check_device(group, *device, context, "the device asked for");
  Json meta = read_metadata(dist::broadcast_pickles({}, 1, group, src, wire, context, max_receive_bytes)[0], context);
  const int64_t total = pop_size(meta, "_total_bytes", context);
  const auto storage_device = pop_string(meta, "_storage_device", context);
  const auto type = pop_string(meta, "_tensorclass_type", context);
  at::Device on = at::kCPU;
  if (device) {
    on = *device;
  } else if (storage_device) {
    try {
      on = at::Device(*storage_device);
    } catch (const std::exception&) {
      throw RuntimeError(fmt::format("{}: the metadata's \"_storage_device\" {} is not a device", context,
                                     Json(*storage_device).dump()));
    }
  }
  dist::check_device(group, on, context, "the storage (the sender's device)");
  std::vector<at::Tensor> tensors{storage_buffer(total, on, context, peer, max_receive_bytes)};
  dist::guarded(context, [&] { group->broadcast(tensors, options)->wait(); });
  return rebuild(meta, tensors[0], context, type);
}

// Whether tensordict's gather_and_stack sends `td` as its storage (else it
// pickles the tensordict): CPU, strided leaves without autograd.
bool consolidates_losslessly(const TensorDict& td) {
  for (const auto& [key, value] : td.items({.include_nested = true, .leaves_only = true})) {
    if (!value.is_tensor()) continue;
    const at::Tensor& t = value.tensor();
    if (t.requires_grad() || !t.device().is_cpu() || t.layout() != at::kStrided) return false;
  }
  return true;
}

void gather_and_stack_tensordict(const TensorDict& td, const ProcessGroupPtr& group, int dst,
                                 int64_t max_receive_bytes) {
  const std::string context = fmt::format("gather_and_stack to rank {}", dst);
  if (group->getBackendName() != "gloo") {
    throw NotImplementedError(fmt::format(
        "{}: a group whose backend is {} gathers pickled tensordicts (torch.distributed.gather_object), which C++ "
        "cannot read; use a Gloo group, or the packed protocol between C++ ranks",
        context, group->getBackendName()));
  }
  const int world = group->getSize();
  const int rank = group->getRank();
  const bool destination = rank == dst;
  if (destination && (td.batch_dims() == 0 || td.batch_size()[0] != world - 1)) {
    throw ValueError(fmt::format("{}: the destination's batch size {} must start with world_size - 1 = {}", context,
                                 shape_string(td.batch_size()), world - 1));
  }
  int64_t kind = kGatherNothing, storage_size = 0;
  std::string metadata;
  at::Tensor storage;
  if (!destination) {
    if (!consolidates_losslessly(td)) {
      throw ValueError(fmt::format("{}: a leaf needs gradients, is not on the CPU or is not strided: tensordict would "
                                   "send the tensordict pickled, which C++ cannot write",
                                   context));
    }
    Consolidated c = consolidated(td, /*reuse=*/true, std::nullopt);
    metadata = dist::pickle::dumps(c.metadata, dist::pickle::Layout::ConsolidatedMetadata, context);
    storage = c.storage;
    kind = kGatherStorage;
    storage_size = storage.numel();
  }
  const int64_t size = storage_size + static_cast<int64_t>(metadata.size());
  // [kind, storage size, buffer size] from every rank.
  at::Tensor header = at::empty({3}, at::TensorOptions().dtype(at::kLong));
  header.data_ptr<int64_t>()[0] = kind;
  header.data_ptr<int64_t>()[1] = storage_size;
  header.data_ptr<int64_t>()[2] = size;
  std::vector<at::Tensor> header_in{header};
  std::vector<std::vector<at::Tensor>> headers(1);
  for (int r = 0; r < world; ++r) headers[0].push_back(at::zeros({3}, at::TensorOptions().dtype(at::kLong)));
  dist::guarded(context, [&] { group->allgather(headers, header_in)->wait(); });
  int64_t largest = 0;
  for (int r = 0; r < world; ++r) {
    const int64_t* h = headers[0][static_cast<std::size_t>(r)].data_ptr<int64_t>();
    if (h[0] < kGatherNothing || h[0] > kGatherStorage || h[1] < 0 || h[2] < h[1]) {
      throw RuntimeError(fmt::format("{}: rank {} sent the header [{}, {}, {}], not [kind, storage size, size]",
                                     context, r, h[0], h[1], h[2]));
    }
    // Every rank allocates the largest (the padded input; the outputs on
    // `dst`), so every rank checks every header, and all refuse together.
    dist::check_announced(h[2], max_receive_bytes, context, fmt::format("rank {}", r), "a storage and metadata");
    largest = std::max(largest, h[2]);
  }
  at::Tensor buffer = at::zeros({largest}, at::TensorOptions().dtype(at::kByte));
  if (storage.defined() && storage_size > 0) buffer.narrow(0, 0, storage_size).copy_(storage);
  if (!metadata.empty()) std::memcpy(static_cast<char*>(buffer.data_ptr()) + storage_size, metadata.data(), metadata.size());
  std::vector<at::Tensor> inputs{buffer};
  std::vector<std::vector<at::Tensor>> outputs;
  if (destination) {
    outputs.emplace_back();
    // Zeroed, as storage_buffer says.
    for (int r = 0; r < world; ++r) outputs[0].push_back(at::zeros({largest}, at::TensorOptions().dtype(at::kByte)));
  }
  c10d::GatherOptions options;
  options.rootRank = dst;
  dist::guarded(context, [&] { group->gather(outputs, inputs, options)->wait(); });
  if (!destination) return;
  std::vector<TensorDict> rows;
  for (int r = 0; r < world; ++r) {
    if (r == dst) continue;
    const int64_t* h = headers[0][static_cast<std::size_t>(r)].data_ptr<int64_t>();
    const std::string from = fmt::format("{} from rank {}", context, r);
    if (h[0] != kGatherStorage) {
      throw NotImplementedError(fmt::format(
          "{}: rank {} sent its tensordict pickled ({}), which C++ cannot read: send one that consolidates (CPU, "
          "strided leaves without gradients)",
          context, r, h[0] == kGatherPickle ? "it could not be consolidated" : "it sent nothing"));
    }
    const at::Tensor& received = outputs[0][static_cast<std::size_t>(r)];
    const auto* bytes = static_cast<const char*>(received.data_ptr());
    const Json meta = read_metadata(std::string(bytes + h[1], static_cast<std::size_t>(h[2] - h[1])), from);
    rows.push_back(rebuild(meta, received.narrow(0, 0, h[1]), from, std::nullopt));
    // A row that does not fit the destination's entries: named with its rank.
    for (const auto& [key, value] : rows.back().items({.include_nested = true, .leaves_only = true})) {
      if (!value.is_tensor()) continue;
      const auto mine = td.get_value(key);
      if (!mine || !mine->is_tensor()) continue;
      const auto want = mine->tensor().sizes().slice(1);
      if (value.tensor().sizes() != want || value.tensor().scalar_type() != mine->tensor().scalar_type()) {
        throw RuntimeError(fmt::format("{}: rank {} sent {} {} for key {}, the destination holds rows of {} {}",
                                       context, r, c10::toString(value.tensor().scalar_type()),
                                       shape_string(value.tensor().sizes()), key.repr(),
                                       c10::toString(mine->tensor().scalar_type()), shape_string(want)));
      }
    }
  }
  try {
    TensorDict target = td;  // a handle: the update lands in the caller's tensordict
    UpdateOptions in_place;
    in_place.inplace = true;
    target.update(stack(rows, 0), in_place);
  } catch (const std::exception&) {
    rethrow_reworded([&](std::string_view why) { return fmt::format("{}: {}", context, why); });
  }
}

}  // namespace

void init_remote(const TensorDict& td, const ProcessGroupPtr& group, int dst, const RemoteInitOptions& options) {
  if (options.protocol == WireProtocol::packed) {
    if (options.use_broadcast || !options.tensorclass_type.empty()) {
      throw ValueError("init_remote: use_broadcast and tensorclass_type belong to WireProtocol::tensordict");
    }
    dist::init_remote_packed(td, group, dst);
    return;
  }
  if (options.use_broadcast) {
    broadcast_tensordict(td, group, group->getRank(), options.device, options.tensorclass_type,
                         options.max_receive_bytes);
    return;
  }
  const std::string context = fmt::format("init_remote to rank {}", dst);
  Consolidated c = consolidated(td, /*reuse=*/false, std::nullopt);
  dist::check_device(group, c.storage.device(), context, "the consolidated storage");
  const std::string pickle = metadata_pickle(c, options.tensorclass_type, /*with_device=*/false, context);
  dist::send_pickles({pickle}, group, dst, options.device.value_or(object_device(group)), context);
  std::vector<at::Tensor> tensors{c.storage};
  dist::guarded(context, [&] { group->send(tensors, dst, 0)->wait(); });
}

TensorDict from_remote_init(const ProcessGroupPtr& group, int src, const RemoteInitOptions& options) {
  if (options.protocol == WireProtocol::packed) {
    if (options.use_broadcast) throw ValueError("from_remote_init: use_broadcast belongs to WireProtocol::tensordict");
    return dist::from_remote_init_packed(group, src, options.device, options.max_receive_bytes);
  }
  if (options.use_broadcast) {
    return broadcast_tensordict(TensorDict(), group, src, options.device, {}, options.max_receive_bytes);
  }
  const std::string context = fmt::format("from_remote_init from rank {}", src);
  const std::string peer = fmt::format("rank {}", src);
  const at::Device wire = options.device.value_or(object_device(group));
  // tensordict receives the storage on `device`, the CPU by default: with NCCL, pass a CUDA device.
  dist::check_device(group, options.device.value_or(at::kCPU), context, "the storage (RemoteInitOptions::device)");
  Json meta = read_metadata(dist::recv_pickles(1, group, src, wire, context, options.max_receive_bytes)[0], context);
  const int64_t total = pop_size(meta, "_total_bytes", context);
  const auto type = pop_string(meta, "_tensorclass_type", context);
  std::vector<at::Tensor> tensors{
      storage_buffer(total, options.device.value_or(at::kCPU), context, peer, options.max_receive_bytes)};
  dist::guarded(context, [&] { group->recv(tensors, src, 0)->wait(); });
  return rebuild(meta, tensors[0], context, type);
}

TensorDict broadcast(const TensorDict& td, const ProcessGroupPtr& group, int src, const BroadcastOptions& options) {
  if (options.protocol == WireProtocol::packed) {
    if (options.device || !options.tensorclass_type.empty()) {
      throw ValueError("broadcast: device and tensorclass_type belong to WireProtocol::tensordict");
    }
    dist::broadcast_packed(td, group, src);
    return td;
  }
  return broadcast_tensordict(td, group, src, options.device, options.tensorclass_type, options.max_receive_bytes);
}

std::vector<TensorDict> all_gather(const TensorDict& td, const ProcessGroupPtr& group, const GatherOptions& options) {
  const std::string context = "all_gather";
  if (options.protocol != WireProtocol::tensordict) {
    throw ValueError("all_gather: only WireProtocol::tensordict is implemented");
  }
  const int world = group->getSize();
  Consolidated c = consolidated(td, /*reuse=*/true, std::nullopt);
  dist::check_device(group, c.storage.device(), context, "the consolidated storage");
  const std::string pickle = metadata_pickle(c, {}, /*with_device=*/false, context);
  const auto pickles =
      dist::all_gather_pickles(pickle, group, object_device(group), context, options.max_receive_bytes);
  std::vector<Json> metas;
  std::vector<int64_t> sizes;
  int64_t largest = 0;
  for (int r = 0; r < world; ++r) {
    const std::string from = fmt::format("{} from rank {}", context, r);
    metas.push_back(read_metadata(pickles[static_cast<std::size_t>(r)], from));
    sizes.push_back(pop_size(metas.back(), "_total_bytes", from));
    // (Every rank checks every rank's size, so all of them refuse together.)
    dist::check_announced(sizes.back(), options.max_receive_bytes, context, fmt::format("rank {}", r), "a storage");
    largest = std::max(largest, sizes.back());
  }
  at::Tensor padded = at::zeros({largest}, at::TensorOptions().dtype(at::kByte).device(c.storage.device()));
  if (c.storage.numel() > 0) padded.narrow(0, 0, c.storage.numel()).copy_(c.storage);
  std::vector<at::Tensor> in{padded};
  std::vector<std::vector<at::Tensor>> out(1);
  for (int r = 0; r < world; ++r) {
    out[0].push_back(storage_buffer(largest, c.storage.device(), context, fmt::format("rank {}", r),
                                    options.max_receive_bytes));
  }
  dist::guarded(context, [&] { group->allgather(out, in)->wait(); });
  std::vector<TensorDict> result;
  for (int r = 0; r < world; ++r) {
    const auto i = static_cast<std::size_t>(r);
    result.push_back(rebuild(metas[i], out[0][i].narrow(0, 0, sizes[i]), fmt::format("{} from rank {}", context, r),
                             std::nullopt));
  }
  return result;
}

void gather_and_stack(const TensorDict& td, const ProcessGroupPtr& group, int dst, const GatherOptions& options) {
  if (options.protocol == WireProtocol::packed) {
    dist::gather_and_stack_packed(td, group, dst);
    return;
  }
  gather_and_stack_tensordict(td, group, dst, options.max_receive_bytes);
}

// ---- object lists ----

void send_object_list(const std::vector<Json>& object_list, const ProcessGroupPtr& group, int dst,
                      std::optional<at::Device> device) {
  const std::string context = fmt::format("send_object_list to rank {}", dst);
  std::vector<std::string> pickles;
  for (const Json& obj : object_list) pickles.push_back(dist::pickle::dumps(obj, dist::pickle::Layout::Plain, context));
  dist::send_pickles(pickles, group, dst, device.value_or(object_device(group)), context);
}

int recv_object_list(std::vector<Json>& object_list, const ProcessGroupPtr& group, int src,
                     std::optional<at::Device> device) {
  return recv_object_list(object_list, group, src, ObjectListOptions{.device = device});
}

int recv_object_list(std::vector<Json>& object_list, const ProcessGroupPtr& group, int src,
                     const ObjectListOptions& options) {
  const std::string context = fmt::format("recv_object_list from rank {}", src);
  const auto pickles = dist::recv_pickles(object_list.size(), group, src, options.device.value_or(object_device(group)),
                                          context, options.max_receive_bytes);
  for (std::size_t i = 0; i < pickles.size(); ++i) object_list[i] = dist::pickle::loads(pickles[i], context);
  return src;
}

void broadcast_object_list(std::vector<Json>& object_list, const ProcessGroupPtr& group, int src,
                           std::optional<at::Device> device) {
  broadcast_object_list(object_list, group, src, ObjectListOptions{.device = device});
}

void broadcast_object_list(std::vector<Json>& object_list, const ProcessGroupPtr& group, int src,
                           const ObjectListOptions& options) {
  const std::string context = fmt::format("broadcast_object_list from rank {}", src);
  const bool sending = group->getRank() == src;
  std::vector<std::string> pickles;
  if (sending) {
    for (const Json& obj : object_list) pickles.push_back(dist::pickle::dumps(obj, dist::pickle::Layout::Plain, context));
  }
  const auto got = dist::broadcast_pickles(pickles, object_list.size(), group, src,
                                           options.device.value_or(object_device(group)), context,
                                           options.max_receive_bytes);
  if (sending) return;
  for (std::size_t i = 0; i < got.size(); ++i) object_list[i] = dist::pickle::loads(got[i], context);
}

void all_gather_object(std::vector<Json>& object_list, const Json& obj, const ProcessGroupPtr& group,
                       const ObjectListOptions& options) {
  const std::string context = "all_gather_object";
  if (object_list.size() != static_cast<std::size_t>(group->getSize())) {
    throw ValueError(fmt::format("{}: object_list has {} elements, expected one per rank ({})", context,
                                 object_list.size(), group->getSize()));
  }
  const auto got = dist::all_gather_pickles(dist::pickle::dumps(obj, dist::pickle::Layout::Plain, context), group,
                                            options.device.value_or(object_device(group)), context,
                                            options.max_receive_bytes);
  for (std::size_t i = 0; i < got.size(); ++i) {
    object_list[i] = dist::pickle::loads(got[i], fmt::format("{} from rank {}", context, i));
  }
}

void detail::mark_class(TensorDict& level, std::string_view python_type) {
  level.set_non_tensor(std::string(kLoadedClassKey), Json(std::string(python_type)));
}

TensorDict detail::without_class(const TensorDict& td) {
  std::vector<NestedKey> classes;
  for (const auto& [key, value] : td.items({.include_nested = true, .leaves_only = true, .is_leaf = IsLeaf::NonTensor})) {
    if (key.path().back() == kLoadedClassKey && value.is_non_tensor()) classes.push_back(key);
  }
  return classes.empty() ? td : TensorDict(td.exclude(classes));
}

}  // namespace tensordict
