// A peer in the same process group is untrusted input, like a file (issue
// 54, "the wire"): each case fakes a hostile peer with raw c10d calls and
// checks that the receiver refuses it with a message naming the call, the
// peer and the size, instead of crashing, leaking its heap into the data or
// committing the memory the peer announced.
#include <catch2/catch.hpp>

#include <nlohmann/json.hpp>

#include <cstring>
#include <string>

#include "../message_of.h"
#include "distributed/object_lists.h"
#include "distributed/packed_calls.h"
#include "distributed/pickle.h"
#include "samples.h"

using namespace td_test;
namespace td = tensordict;

namespace {

// What the packed init_remote puts on the wire before the leaves
// (remote_init.cpp): int64 {magic, JSON bytes} on kRemoteTag, the JSON on kRemoteTag + 1.
constexpr int kRemoteTag = 0x7d000000;
constexpr int64_t kRemoteMagic = 0x7464696374000101;

void send_packed_header(const Rank& r, int dst, int64_t announced, const std::string& json) {
  std::vector<at::Tensor> header{at::tensor({kRemoteMagic, announced}, at::kLong)};
  r.group->send(header, dst, kRemoteTag)->wait();
  if (json.empty()) return;
  std::vector<at::Tensor> bytes{at::empty({static_cast<int64_t>(json.size())}, at::kByte)};
  std::memcpy(bytes[0].data_ptr(), json.data(), json.size());
  r.group->send(bytes, dst, kRemoteTag + 1)->wait();
}

std::string repeat(const std::string& s, int n) {
  std::string out;
  out.reserve(s.size() * static_cast<std::size_t>(n));
  for (int i = 0; i < n; ++i) out += s;
  return out;
}

// The consolidated metadata of one uint8 leaf "a" of `bytes` bytes, as tensordict sends it.
td::Json byte_leaf_meta(int64_t bytes) {
  return td::Json::parse(R"({"cls": "TensorDict", "non_tensors": {}, "leaves": {"a": ["torch.uint8", [)" +
                         std::to_string(bytes) + "], 0, " + std::to_string(bytes) +
                         R"(, 0]}, "cls_metadata": {"device": null, "names": [null], "batch_size": [)" +
                         std::to_string(bytes) + R"(], "is_locked": false}, "_total_bytes": )" + std::to_string(bytes) +
                         "}");
}

// Leaves freed memory full of 0xab behind, where the next buffer of `bytes` likely lands.
void dirty_heap(int64_t bytes) {
  for (int i = 0; i < 4; ++i) at::full({bytes}, 0xab, at::kByte);
}

constexpr int64_t k3GiB = int64_t{3} << 30;
// A storage announced as kAnnounced bytes, of which kSent arrive.
constexpr int64_t kAnnounced = 4096, kSent = 8;
const RanksOptions kQuick{.group_timeout = std::chrono::seconds(5), .deadline = std::chrono::seconds(60)};

}  // namespace

TEST_CASE("wire: a packed init_remote header nested 100,000 deep is refused while it is read",
          "[distributed][hostile][init_remote]") {
  constexpr int kDeep = 100000;
  const std::string leaf_level = R"({"batch_size": [], "device": null, "names": null, "entries": []})";
  // The "tensordict" form: each level an entry of the previous one.
  const std::string nested = repeat(R"({"batch_size": [], "device": null, "names": null, "entries": [["a", {"tensordict": )", kDeep) +
                             leaf_level + repeat("}]]}", kDeep);
  // The lazy stack's "members" form.
  const std::string members = repeat(R"({"lazy_stack_dim": 0, "members": [)", kDeep) + leaf_level + repeat("]}", kDeep);
  const std::string failures = run_ranks(2, [&](const Rank& r) {
    if (r.rank == 0) {
      for (const std::string* json : {&nested, &members}) {
        send_packed_header(r, 1, static_cast<int64_t>(json->size()), *json);
      }
      return;
    }
    for (int i = 0; i < 2; ++i) {
      const std::string message =
          message_of([&] { td::from_remote_init(r.group, 0, {.protocol = td::WireProtocol::packed}); });
      check(message == "from_remote_init from rank 0: the structure header nests deeper than 1032 levels", message);
    }
  }, kQuick);
  REQUIRE(failures == "");
}

TEST_CASE("wire: a storage shorter than announced reads as zeros past the cut, never as this process's heap",
          "[distributed][hostile][init_remote][broadcast]") {
  const std::string failures = run_ranks(2, [&](const Rank& r) {
    if (r.rank == 0) {
      std::vector<at::Tensor> cut{at::full({kSent}, 7, at::kByte)};
      // from_remote_init: the metadata, then 8 bytes of the 4,096 announced.
      td::send_object_list({byte_leaf_meta(kAnnounced)}, r.group, 1);
      r.group->send(cut, 1, 0)->wait();
      // broadcast: the same, through broadcast_object_list and a broadcast.
      std::vector<td::Json> meta{byte_leaf_meta(kAnnounced)};
      td::broadcast_object_list(meta, r.group, 0);
      c10d::BroadcastOptions root;
      root.rootRank = 0;
      r.group->broadcast(cut, root)->wait();
      return;
    }
    const auto check_leaf = [](const TensorDict& got, const std::string& call) {
      const at::Tensor a = got.get("a").contiguous();
      check(a.numel() == kAnnounced, call + ": the leaf has the announced size");
      check(a.narrow(0, 0, kSent).eq(7).all().item<bool>(), call + ": the bytes sent arrive");
      const int64_t nonzero = a.narrow(0, kSent, kAnnounced - kSent).ne(0).sum().item<int64_t>();
      check(nonzero == 0, call + ": " + std::to_string(nonzero) + " bytes past the cut are not zero");
    };
    dirty_heap(kAnnounced);
    check_leaf(td::from_remote_init(r.group, 0), "from_remote_init");
    dirty_heap(kAnnounced);
    check_leaf(td::broadcast(TensorDict(), r.group, 0), "broadcast");
  }, kQuick);
  REQUIRE(failures == "");
}

TEST_CASE("wire: object lists refuse 3 GiB announced before allocating it, naming the call, the peer and the size",
          "[distributed][hostile][object_list]") {
  const std::string failures = run_ranks(2, [&](const Rank& r) {
    if (r.rank == 0) {
      std::vector<at::Tensor> sizes{at::full({1}, k3GiB, at::kLong)};
      r.group->send(sizes, 1, 0)->wait();
      c10d::BroadcastOptions root;
      root.rootRank = 0;
      r.group->broadcast(sizes, root)->wait();
      std::vector<std::vector<at::Tensor>> all{{at::zeros({1}, at::kLong), at::zeros({1}, at::kLong)}};
      r.group->allgather(all, sizes)->wait();
      return;
    }
    std::vector<td::Json> got(1);
    const std::string recv = message_of([&] { td::recv_object_list(got, r.group, 0); });
    check(recv == "recv_object_list from rank 0: rank 0 announced pickles of 3221225472 bytes, more than "
                  "max_receive_bytes (1073741824); raise it in the call's options to receive more",
          recv);
    const std::string broadcast = message_of([&] { td::broadcast_object_list(got, r.group, 0); });
    check(broadcast == "broadcast_object_list from rank 0: rank 0 announced pickles of 3221225472 bytes, more than "
                       "max_receive_bytes (1073741824); raise it in the call's options to receive more",
          broadcast);
    std::vector<td::Json> every(2);
    const std::string gather = message_of([&] { td::all_gather_object(every, td::Json(1), r.group); });
    check(gather == "all_gather_object: rank 0 announced pickles of 3221225472 bytes, more than max_receive_bytes "
                    "(1073741824); raise it in the call's options to receive more",
          gather);
  }, kQuick);
  REQUIRE(failures == "");
}

TEST_CASE("wire: a 3 GiB storage announced to from_remote_init, all_gather or gather_and_stack is refused first",
          "[distributed][hostile][init_remote][gather]") {
  const std::string failures = run_ranks(2, [&](const Rank& r) {
    if (r.rank == 0) {
      // from_remote_init: "_total_bytes" of 3 GiB.
      td::send_object_list({byte_leaf_meta(k3GiB)}, r.group, 1);
      // all_gather: the metadata's all_gather_object, with 3 GiB.
      std::vector<td::Json> every(2);
      td::all_gather_object(every, byte_leaf_meta(k3GiB), r.group);
      // gather_and_stack: the header [kind = storage, storage size, size].
      std::vector<at::Tensor> header{at::tensor({int64_t{2}, k3GiB, k3GiB}, at::kLong)};
      std::vector<std::vector<at::Tensor>> headers{{at::zeros({3}, at::kLong), at::zeros({3}, at::kLong)}};
      r.group->allgather(headers, header)->wait();
      return;
    }
    const std::string init = message_of([&] { td::from_remote_init(r.group, 0); });
    check(init == "from_remote_init from rank 0: rank 0 announced a storage of 3221225472 bytes, more than "
                  "max_receive_bytes (1073741824); raise it in the call's options to receive more",
          init);
    const std::string gather = message_of([&] { td::all_gather(TensorDict({{"a", at::zeros({2})}}, {}), r.group); });
    check(gather == "all_gather: rank 0 announced a storage of 3221225472 bytes, more than max_receive_bytes "
                    "(1073741824); raise it in the call's options to receive more",
          gather);
    const std::string stack =
        message_of([&] { td::gather_and_stack(TensorDict({{"a", at::zeros({1, 2})}}, {1}), r.group, 1); });
    check(stack == "gather_and_stack to rank 1: rank 0 announced a storage and metadata of 3221225472 bytes, more "
                   "than max_receive_bytes (1073741824); raise it in the call's options to receive more",
          stack);
  }, kQuick);
  REQUIRE(failures == "");
}

TEST_CASE("wire: a packed init_remote announcing 3 GiB of structure or leaves is refused before allocating",
          "[distributed][hostile][init_remote]") {
  const std::string huge_leaf =
      R"({"batch_size": [], "device": null, "names": null, "entries": [["a", {"dtype": "uint8", "shape": [3221225472]}]]})";
  const std::string failures = run_ranks(2, [&](const Rank& r) {
    if (r.rank == 0) {
      send_packed_header(r, 1, k3GiB, "");
      send_packed_header(r, 1, static_cast<int64_t>(huge_leaf.size()), huge_leaf);
      return;
    }
    const auto packed = [&] {
      return message_of([&] { td::from_remote_init(r.group, 0, {.protocol = td::WireProtocol::packed}); });
    };
    const std::string header = packed();
    check(header == "from_remote_init from rank 0: rank 0 announced a structure header of 3221225472 bytes, more "
                    "than max_receive_bytes (1073741824); raise it in the call's options to receive more",
          header);
    const std::string leaves = packed();
    check(leaves == "from_remote_init from rank 0: rank 0 announced a structure header and leaves of " +
                        std::to_string(k3GiB + static_cast<int64_t>(huge_leaf.size())) +
                        " bytes, more than max_receive_bytes (1073741824); raise it in the call's options to receive "
                        "more",
          leaves);
  }, kQuick);
  REQUIRE(failures == "");
}

TEST_CASE("wire: max_receive_bytes bounds each call, and raising it lets a larger message through",
          "[distributed][hostile][object_list][init_remote]") {
  const td::Json object = td::Json(std::string(200, 'x'));
  const auto pickled = static_cast<int64_t>(td::dist::pickle::dumps(object, td::dist::pickle::Layout::Plain, "t").size());
  const std::string failures = run_ranks(2, [&](const Rank& r) {
    TensorDict sample({{"a", at::ones({1024})}}, {});  // a storage of 4,096 bytes
    if (r.rank == 0) {
      td::send_object_list({object}, r.group, 1);  // refused at 100 bytes
      td::send_object_list({object}, r.group, 1);  // taken at 1,000
      td::init_remote(sample, r.group, 1);         // refused at 2,048
      td::init_remote(sample, r.group, 1);         // taken at 1 MiB
      return;
    }
    std::vector<td::Json> got(1);
    const std::string small = message_of([&] { td::recv_object_list(got, r.group, 0, {.max_receive_bytes = 100}); });
    check(small == "recv_object_list from rank 0: rank 0 announced pickles of " + std::to_string(pickled) +
                       " bytes, more than max_receive_bytes (100); raise it in the call's options to receive more",
          small);
    // The refused message's bytes are still on the wire: drain them.
    std::vector<at::Tensor> rest{at::zeros({pickled}, at::kByte)};
    r.group->recv(rest, 0, 0)->wait();
    td::recv_object_list(got, r.group, 0, {.max_receive_bytes = 1000});
    check(got[0] == object, "the object arrives under a raised limit");
    const std::string storage = message_of([&] { td::from_remote_init(r.group, 0, {.max_receive_bytes = 2048}); });
    check(storage == "from_remote_init from rank 0: rank 0 announced a storage of 4096 bytes, more than "
                     "max_receive_bytes (2048); raise it in the call's options to receive more",
          storage);
    std::vector<at::Tensor> storage_rest{at::zeros({4096}, at::kByte)};
    r.group->recv(storage_rest, 0, 0)->wait();
    const TensorDict got_td = td::from_remote_init(r.group, 0, {.max_receive_bytes = 1 << 20});
    check(got_td.get("a").equal(at::ones({1024})), "the tensordict arrives under a raised limit");
  }, kQuick);
  REQUIRE(failures == "");
}

TEST_CASE("wire: a leaf larger than the template aborts the receiver in tensordict's protocol (documented), and is "
          "an error in the packed protocol",
          "[distributed][hostile]") {
  // tensordict's protocol sends no sizes: Gloo aborts the receiver from its
  // own thread, as it does a Python rank (docs/distributed.md, "Which calls can abort").
  const std::string aborted = run_ranks(2, [&](const Rank& r) {
    if (r.rank == 0) {
      td::send(td::TensorDict({{"a", at::zeros({4}, at::kDouble)}}), r.group, 1);
      return;
    }
    td::TensorDict into({{"a", at::zeros({4}, at::kFloat)}});
    td::recv(into, r.group, 0);
  }, kQuick);
  CHECK(aborted.find("rank 1: killed by signal 6") != std::string::npos);
  // The packed protocol describes the structure first: the same mistake is
  // an error naming the key, and both ranks go on.
  const std::string failures = run_ranks(2, [&](const Rank& r) {
    if (r.rank == 0) {
      td::send(td::TensorDict({{"a", at::zeros({4}, at::kDouble)}}), r.group, 1, packed());
      return;
    }
    td::TensorDict into({{"a", at::zeros({4}, at::kFloat)}});
    const std::string message = message_of([&] { td::recv(into, r.group, 0, packed()); });
    check(message == "recv from rank 0 (tag 0): structure mismatch at key 'a': the sender (rank 0) has float64 [4], "
                     "this tensordict has float32 [4]",
          message);
  }, kQuick);
  CHECK(failures == "");
}

TEST_CASE("wire: a packed header whose dims are not integers is refused by key (found by fuzz_packed_header)",
          "[distributed][hostile][init_remote]") {
  // A JSON float where a dim belongs was converted with a cast: undefined
  // past the integer's range.
  const std::string json = R"({"batch_size": [3], "device": null, "names": null, "entries": [["a", )"
                           R"({"dtype": "float32", "shape": [3.5e66]}]]})";
  const std::string message = message_of([&] {
    td::dist::structure_from_header(json, std::nullopt, int64_t{1} << 30, "from_remote_init from rank 0", "rank 0");
  });
  CHECK(message == "from_remote_init from rank 0: the structure header's shape of key a holds 3.5e+66, not an integer");
  const std::string batch = R"({"batch_size": 3, "device": null, "names": null, "entries": []})";
  CHECK(message_of([&] {
          td::dist::structure_from_header(batch, std::nullopt, int64_t{1} << 30, "from_remote_init from rank 0",
                                          "rank 0");
        }) == "from_remote_init from rank 0: the structure header's batch_size is a JSON number, not a list");
}
