// init_remote / from_remote_init, packed protocol: the structure travels first, as JSON, so
// that the receiver needs no template; the leaves then go as for send/recv.
//
// Tags (kept clear of the small tags users give send/recv):
// kRemoteTag: int64 {magic, JSON bytes}; kRemoteTag + 1: the JSON;
// kRemoteTag + 2 on: the tensordict, as send() sends it.
//
// The header comes from a peer: its JSON's depth is bounded while it is
// parsed (build() recurses once per level), and the JSON's size and the
// leaves' bytes together are checked against max_receive_bytes before
// anything is allocated for them.
#include <ATen/Context.h>
#include <nlohmann/json.hpp>
#include <ATen/ops/empty.h>
#include <ATen/ops/zeros.h>
#include <fmt/format.h>

#include <cstring>
#include <limits>
#include <stdexcept>
#include <string_view>

#include "core/kind_ops.h"
#include "core/nesting.h"  // kMaxNestingDepth
#include "distributed/calls.h"
#include "distributed/packed_calls.h"
#include "tensordict/dtype.h"
#include "tensordict/lazy.h"
#include "tensordict/non_tensor.h"

namespace tensordict {

namespace {

constexpr int kRemoteTag = 0x7d000000;
constexpr int64_t kMagic = 0x7464696374000101;  // "tdict", init_remote, protocol 1

// The deepest JSON a header may hold: a nested tensordict is 4 levels below
// its parent's (node, "entries", [key, entry], entry), a lazy stack's member
// 2, so a tensordict nested as deep as the library holds fits, and the
// nesting check of set() names the level past it.
constexpr std::size_t kMaxHeaderDepth = 4 * (detail::kMaxNestingDepth + 2);

Json names_json(const TensorDict& td) {
  if (!td.has_names()) return nullptr;
  Json out = Json::array();
  for (const auto& n : td.names()) out.push_back(n ? Json(*n) : Json(nullptr));
  return out;
}

Json non_tensor_json(const NonTensorData& data) {
  if (!data.is_stack()) return {{"value", data.data()}};
  const at::Tensor ids = data.ids().contiguous();
  Json values = Json::array();
  const int64_t* id = ids.data_ptr<int64_t>();
  for (int64_t i = 0; i < ids.numel(); ++i) values.push_back((*data.pool())[static_cast<std::size_t>(id[i])]);
  return {{"stack", values}, {"shape", ids.sizes().vec()}};
}

Json structure(const TensorDict& td) {
  if (const auto* lazy = detail::as_stacked(*td.impl())) {
    Json members = Json::array();
    for (const auto& m : lazy->members()) members.push_back(structure(m));
    return {{"lazy_stack_dim", lazy->stack_dim()}, {"members", members}};
  }
  Json entries = Json::array();
  for (const auto& [key, value] : td.items()) {
    Json entry;
    if (value.is_tensor()) {
      const at::Tensor& t = value.tensor();
      entry = {{"dtype", std::string(dtype_name(t.scalar_type()))}, {"shape", t.sizes().vec()}};
    } else if (value.is_tensordict()) {
      entry = {{"tensordict", structure(value.tensordict())}};
    } else {
      entry = {{"non_tensor", non_tensor_json(value.non_tensor())}};
    }
    entries.push_back(Json::array({key.path().back(), entry}));
  }
  return {{"batch_size", td.batch_size().vec()},
          {"device", td.device() ? Json(td.device()->str()) : Json(nullptr)},
          {"names", names_json(td)},
          {"entries", entries}};
}

// The device leaves are built on: the caller's, else the sender's when this
// process has it, else the CPU.
at::Device leaf_device(const Json& node, std::optional<at::Device> wanted) {
  if (wanted) return *wanted;
  if (node.contains("device") && node.at("device").is_string()) {
    const at::Device d(node.at("device").get<std::string>());
    if (d.is_cpu() || (d.is_cuda() && at::hasCUDA())) return d;
  }
  return at::kCPU;
}

// What build() reads the header with; `total`: the bytes announced so far
// (the JSON's, then each leaf's).
struct Build {
  std::optional<at::Device> device;
  int64_t max_receive_bytes;
  const std::string& context;
  std::string peer;
  int64_t total = 0;
};

// Adds the bytes of a leaf of `dtype` and `shape` to b.total and checks them
// against the limit, before the leaf exists.
void count_leaf(const std::vector<int64_t>& shape, at::ScalarType dtype, const std::string& key, Build& b) {
  constexpr int64_t kMax = std::numeric_limits<int64_t>::max();
  int64_t bytes = static_cast<int64_t>(c10::elementSize(dtype));
  for (const int64_t d : shape) {
    if (d < 0) throw RuntimeError(fmt::format("{}: the structure header gives key {} a negative dim", b.context, key));
    bytes = d != 0 && bytes > kMax / d ? kMax : bytes * d;
  }
  b.total = bytes > kMax - b.total ? kMax : b.total + bytes;
  dist::check_announced(b.total, b.max_receive_bytes, b.context, b.peer, "a structure header and leaves");
}

// Integers of the header, each checked: nlohmann converts a JSON float to
// an integer with a cast, undefined past the integer's range.
int64_t integer(const Json& value, const Build& b, std::string_view what) {
  if (!value.is_number_integer()) {
    throw RuntimeError(fmt::format("{}: the structure header's {} holds {}, not an integer", b.context, what,
                                   value.dump()));
  }
  return value.get<int64_t>();
}
std::vector<int64_t> integers(const Json& list, const Build& b, std::string_view what) {
  if (!list.is_array()) {
    throw RuntimeError(fmt::format("{}: the structure header's {} is a JSON {}, not a list", b.context, what,
                                   list.type_name()));
  }
  std::vector<int64_t> out;
  out.reserve(list.size());
  for (const Json& value : list) out.push_back(integer(value, b, what));
  return out;
}

TensorDict build(const Json& node, Build& b) {
  const std::optional<at::Device>& device = b.device;
  if (node.contains("lazy_stack_dim")) {
    std::vector<TensorDict> members;
    for (const auto& m : node.at("members")) members.push_back(build(m, b));
    return LazyStackedTensorDict(std::move(members), integer(node.at("lazy_stack_dim"), b, "lazy_stack_dim"));
  }
  const at::Device on = leaf_device(node, device);
  Names names;
  if (node.at("names").is_array()) {
    for (const auto& n : node.at("names")) names.push_back(n.is_null() ? std::nullopt : std::optional(n.get<std::string>()));
  }
  const bool has_device = device.has_value() || node.at("device").is_string();
  TensorDict td({}, integers(node.at("batch_size"), b, "batch_size"), has_device ? std::optional(on) : std::nullopt, names);
  for (const auto& pair : node.at("entries")) {
    const std::string key = pair.at(0).get<std::string>();
    const Json& entry = pair.at(1);
    if (entry.contains("dtype")) {
      const auto dtype = dtype_from_name(entry.at("dtype").get<std::string>());
      if (!dtype) throw RuntimeError("from_remote_init: unknown dtype " + entry.at("dtype").dump() + " at key " + key);
      const auto shape = integers(entry.at("shape"), b, "shape of key " + key);
      count_leaf(shape, *dtype, key, b);
      // (Received whole by recv() below, which checks the structure first.)
      td.set(key, at::empty(shape, at::TensorOptions().dtype(*dtype).device(on)));
    } else if (entry.contains("tensordict")) {
      td.set(key, build(entry.at("tensordict"), b));
    } else {
      const Json& nt = entry.at("non_tensor");
      td.set(key, nt.contains("value") ? NonTensorData(nt.at("value"))
                                       : NonTensorData::stack(nt.at("stack").get<std::vector<Json>>(),
                                                              integers(nt.at("shape"), b, "shape of key " + key)));
    }
  }
  return td;
}

}  // namespace

void dist::init_remote_packed(const TensorDict& td, const ProcessGroupPtr& group, int dst) {
  const std::string context = fmt::format("init_remote to rank {}", dst);
  const std::string text = structure(td).dump();
  at::Tensor header = at::empty({2}, at::TensorOptions().dtype(at::kLong));
  header.data_ptr<int64_t>()[0] = kMagic;
  header.data_ptr<int64_t>()[1] = static_cast<int64_t>(text.size());
  at::Tensor json = at::empty({static_cast<int64_t>(text.size())}, at::TensorOptions().dtype(at::kByte));
  std::memcpy(json.data_ptr(), text.data(), text.size());
  // The header rides on the leaves' device (NCCL groups move device tensors only).
  const auto leaves_device = td.device().value_or(at::kCPU);
  std::vector<at::Tensor> h{header.to(leaves_device)}, j{json.to(leaves_device)};
  dist::guarded(context, [&] {
    auto a = group->send(h, dst, kRemoteTag);
    auto b = group->send(j, dst, kRemoteTag + 1);
    a->wait();
    b->wait();
  });
  send(td, group, dst, {.init_tag = kRemoteTag + 2, .protocol = WireProtocol::packed});
}

TensorDict dist::structure_from_header(std::string_view json, std::optional<at::Device> device,
                                       int64_t max_receive_bytes, const std::string& context,
                                       const std::string& peer) {
  // nlohmann's parser keeps its own stack, but build() (and any recursive
  // walk of the value) would overflow the thread's on a deep one: the depth
  // is refused as it is read (a header of 100,000 levels crashed the receiver).
  const Json::parser_callback_t bounded = [&](int depth, Json::parse_event_t event, Json&) {
    if ((event == Json::parse_event_t::object_start || event == Json::parse_event_t::array_start) &&
        static_cast<std::size_t>(depth) >= kMaxHeaderDepth) {
      throw RuntimeError(fmt::format("{}: the structure header nests deeper than {} levels", context, kMaxHeaderDepth));
    }
    return true;
  };
  Json node;
  try {
    node = Json::parse(json, bounded);
  } catch (const RuntimeError&) {
    throw;
  } catch (const std::exception& e) {
    throw RuntimeError(context + ": the structure header is not valid JSON: " + e.what());
  }
  Build b{device, max_receive_bytes, context, peer, static_cast<int64_t>(json.size())};
  try {
    return build(node, b);
  } catch (const Json::exception& e) {
    // A member missing or of another JSON type than the sender writes.
    throw RuntimeError(context + ": the structure header is malformed: " + e.what());
  }
}

TensorDict dist::from_remote_init_packed(const ProcessGroupPtr& group, int src, std::optional<at::Device> device,
                                         int64_t max_receive_bytes) {
  const std::string context = fmt::format("from_remote_init from rank {}", src);
  const std::string peer = fmt::format("rank {}", src);
  const at::Device wire = device.value_or(at::kCPU);
  std::vector<at::Tensor> h{at::empty({2}, at::TensorOptions().dtype(at::kLong).device(wire))};
  dist::guarded(context, [&] { group->recv(h, src, kRemoteTag)->wait(); });
  const at::Tensor header = h[0].cpu();
  if (header.data_ptr<int64_t>()[0] != kMagic) {
    throw RuntimeError(context + ": the message is not a header sent by tensordict::init_remote");
  }
  const int64_t json_bytes = header.data_ptr<int64_t>()[1];
  if (json_bytes < 0) {
    throw RuntimeError(fmt::format("{}: the header announces a structure of {} bytes", context, json_bytes));
  }
  dist::check_announced(json_bytes, max_receive_bytes, context, peer, "a structure header");
  // Zeroed: what a shorter message leaves of it is then not valid JSON.
  std::vector<at::Tensor> j{at::zeros({json_bytes}, at::TensorOptions().dtype(at::kByte).device(wire))};
  dist::guarded(context, [&] { group->recv(j, src, kRemoteTag + 1)->wait(); });
  const at::Tensor json = j[0].cpu();
  TensorDict td = structure_from_header(
      std::string_view(static_cast<const char*>(json.data_ptr()), static_cast<std::size_t>(json.numel())), device,
      max_receive_bytes, context, peer);
  recv(td, group, src, {.init_tag = kRemoteTag + 2, .protocol = WireProtocol::packed});
  return td;
}

}  // namespace tensordict
