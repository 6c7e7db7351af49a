// tensordict's protocol for init_remote / from_remote_init, broadcast,
// all_gather and gather_and_stack, and the object-list calls, between C++
// ranks (tests/distributed/mixed runs the same calls against Python ranks):
// the receivers build consolidated tensordicts from the pickled metadata and
// the storage; a hostile peer's metadata or sizes fail with the call, the
// peer and the key.
#include <catch2/catch.hpp>

#include <nlohmann/json.hpp>

#include <chrono>
#include <thread>

#include "../message_of.h"
#include "distributed/object_lists.h"
#include "distributed/pickle.h"
#include "samples.h"

using namespace td_test;
namespace td = tensordict;

namespace {

// The tensordict of tensordict's TestInitRemote: ("a", "b"), "c" and ("d", "e", "f"), all ones, batch [1, 2].
TensorDict ones_sample() {
  return TensorDict({{"a", TensorDict({{"b", at::ones({1, 2})}}, {1, 2})},
                     {"c", at::ones({1, 2})},
                     {"d", TensorDict({{"e", TensorDict({{"f", at::ones({1, 2, 2})}}, {1, 2})}}, {1, 2})}},
                    {1, 2});
}

// A level's keys as tensordict's rebuild orders them: its non-tensor
// entries, then its leaves, then its nested levels, each in insertion order.
std::vector<td::NestedKey> rebuilt_order(std::initializer_list<const char*> keys) {
  std::vector<td::NestedKey> out;
  for (const char* k : keys) out.emplace_back(k);
  return out;
}

// `rebuilt`: a tensordict rebuilt from the metadata (the source of a
// broadcast returns its own, consolidated, in its own order).
void check_all_ones(const TensorDict& got, const std::string& what, bool rebuilt = true) {
  check(got.keys() == (rebuilt ? rebuilt_order({"c", "a", "d"}) : ones_sample().keys()),
        what + ": keys (leaf c, then the nested a and d, when rebuilt)");
  check(got.batch_size() == std::vector<int64_t>{1, 2}, what + ": batch size");
  check_equal(got, ones_sample(), what);
  check(got.is_consolidated(), what + ": consolidated");
}

}  // namespace

TEST_CASE("init_remote sends the consolidated metadata and storage: the result is consolidated",
          "[distributed][init_remote][test_distributed.py::TestInitRemote::test_init_remote]") {
  const std::string failures = run_ranks(2, [](const Rank& r) {
    if (r.rank == 0) {
      td::init_remote(ones_sample(), r.group, 1);
    } else {
      check_all_ones(td::from_remote_init(r.group, 0), "from_remote_init");
    }
  });
  REQUIRE(failures == "");
}

TEST_CASE("init_remote carries non-tensor entries, names, lazy stacks and the key order",
          "[distributed][init_remote][test_distributed.py::TestInitRemoteNonTensor::test_init_remote_non_tensor]") {
  const std::string failures = run_ranks(2, [](const Rank& r) {
    auto make = [] {
      TensorDict td({{"a", at::ones({3})}, {"c", at::full({3, 2}, 2.0)}}, {3}, std::nullopt, {"env"});
      td.set_non_tensor("label", td::Json("hello"));
      return td;
    };
    if (r.rank == 0) {
      td::init_remote(make(), r.group, 1);
      td::init_remote(lazy_sample(4), r.group, 1);
    } else {
      const TensorDict got = td::from_remote_init(r.group, 0);
      check(got.keys() == rebuilt_order({"label", "a", "c"}), "non-tensor entries, leaves, nested levels");
      check(got.names() == make().names(), "names");
      check(got.get_non_tensor("label") == td::Json("hello"), "non-tensor entry");
      check_equal(got, make(), "values");
      check(got.is_consolidated(), "consolidated");
      const TensorDict lazy = td::from_remote_init(r.group, 0);
      check(lazy.kind() == td::Kind::LazyStack, "a lazy stack stays lazy");
      for (int i = 0; i < 2; ++i) {
        check_equal(td::LazyStackedTensorDict(lazy).tensordicts()[i], lazy_sample(4).tensordicts()[i], "lazy member");
      }
    }
  });
  REQUIRE(failures == "");
}

TEST_CASE("init_remote with use_broadcast reaches every rank",
          "[distributed][init_remote][test_distributed.py::TestInitRemoteBroadcast::test_init_remote_broadcast]") {
  const std::string failures = run_ranks(3, [](const Rank& r) {
    if (r.rank == 0) {
      td::init_remote(ones_sample(), r.group, /*dst=*/-1, {.use_broadcast = true});
    } else {
      check_all_ones(td::from_remote_init(r.group, 0, {.use_broadcast = true}), "from_remote_init(use_broadcast)");
    }
  });
  REQUIRE(failures == "");
}

TEST_CASE("broadcast returns the source's tensordict on every rank",
          "[distributed][broadcast][test_distributed.py::TestBroadcast::test_broadcast]") {
  const std::string failures = run_ranks(3, [](const Rank& r) {
    const TensorDict mine = r.rank == 1 ? ones_sample() : TensorDict({}, {});
    const TensorDict got = td::broadcast(mine, r.group, /*src=*/1);
    check_all_ones(got, "broadcast", /*rebuilt=*/r.rank != 1);
  });
  REQUIRE(failures == "");
}

TEST_CASE("all_gather returns every rank's tensordict in rank order, structures may differ",
          "[distributed][all_gather][test_distributed.py::TestAllGather::test_all_gather]") {
  const std::string failures = run_ranks(3, [](const Rank& r) {
    TensorDict mine({{"a", at::full({3}, double(r.rank))}, {"b", at::full({3, 2}, double(r.rank + 10))}}, {3});
    if (r.rank == 2) mine.set("extra", at::arange(6, at::kLong).reshape({3, 2}));
    const std::vector<TensorDict> all = td::all_gather(mine, r.group);
    check(all.size() == 3, "one tensordict per rank");
    for (int i = 0; i < 3; ++i) {
      const TensorDict& got = all[static_cast<std::size_t>(i)];
      check(at::equal(got.get("a"), at::full({3}, double(i))), "a of rank " + std::to_string(i));
      check(at::equal(got.get("b"), at::full({3, 2}, double(i + 10))), "b of rank " + std::to_string(i));
      check(got.contains(td::NestedKey("extra")) == (i == 2), "extra only from rank 2");
      check(got.is_consolidated(), "consolidated");
    }
  });
  REQUIRE(failures == "");
}

TEST_CASE("gather_and_stack stacks the other ranks' storages into the destination",
          "[distributed][gather][test_distributed.py::TestGather::test_gather]") {
  const std::string failures = run_ranks(3, [](const Rank& r) {
    const int dst = 1;
    if (r.rank == dst) {
      TensorDict stacked = td::stack({sample_template(), sample_template()}, 0);  // batch [world - 1, 3]
      td::gather_and_stack(stacked, r.group, dst);
      check_equal(stacked.index({0}), sample(10), "from rank 0");
      check_equal(stacked.index({1}), sample(12), "from rank 2");
    } else {
      td::gather_and_stack(sample(10 + r.rank), r.group, dst);
    }
  });
  REQUIRE(failures == "");
}

TEST_CASE("object lists: send, recv, broadcast and all_gather of dicts, lists, strings and numbers",
          "[distributed][object_list]") {
  const std::string failures = run_ranks(3, [](const Rank& r) {
    const td::Json a = td::Json::parse(R"({"x": [1, 2.5, "three", null, true], "y": {"z": -7}})");
    if (r.rank == 0) {
      td::send_object_list({a, td::Json("second")}, r.group, 2);
    } else if (r.rank == 2) {
      std::vector<td::Json> got(2);
      check(td::recv_object_list(got, r.group, 0) == 0, "recv_object_list returns the sender");
      check(got[0] == a && got[1] == td::Json("second"), "recv_object_list");
    }
    std::vector<td::Json> list = r.rank == 1 ? std::vector<td::Json>{td::Json(42), a} : std::vector<td::Json>(2);
    td::broadcast_object_list(list, r.group, 1);
    check(list[0] == td::Json(42) && list[1] == a, "broadcast_object_list");
    std::vector<td::Json> all(3);
    td::all_gather_object(all, td::Json::array({r.rank, std::string(static_cast<std::size_t>(r.rank) * 5, 'x')}), r.group);
    for (int i = 0; i < 3; ++i) {
      check(all[static_cast<std::size_t>(i)] == td::Json::array({i, std::string(static_cast<std::size_t>(i) * 5, 'x')}),
            "all_gather_object of rank " + std::to_string(i));
    }
    std::vector<td::Json> wrong(2);
    check(td_test::message_of([&] { td::all_gather_object(wrong, 1, r.group); }) ==
              "all_gather_object: object_list has 2 elements, expected one per rank (3)",
          "all_gather_object refuses a list of the wrong size");
  });
  REQUIRE(failures == "");
}

TEST_CASE("from_remote_init refuses a malformed metadata pickle, naming the call, the peer and the key",
          "[distributed][init_remote][errors]") {
  const std::string failures = run_ranks(2, [](const Rank& r) {
    // The receiver reads the storage only once the metadata parsed (as
    // Python's does): a pickle it refuses comes alone.
    const auto send_raw = [&](const std::string& pickle, std::optional<int64_t> storage_bytes) {
      td::dist::send_pickles({pickle}, r.group, 1, at::kCPU, "test");
      if (!storage_bytes) return;
      std::vector<at::Tensor> storage{at::zeros({*storage_bytes}, at::kByte)};
      r.group->send(storage, 1, 0)->wait();
    };
    const auto meta = [](const std::string& leaf) {
      return td::Json::parse(R"({"cls": "TensorDict", "non_tensors": {}, "leaves": {"obs": )" + leaf +
                             R"(}, "cls_metadata": {"device": null, "names": [null], "batch_size": [2],
                             "is_locked": false}, "_total_bytes": 16})");
    };
    using td::dist::pickle::Layout;
    if (r.rank == 0) {
      // Not a pickle at all, then a leaf past the storage, then a pickle with
      // an os.system reference.
      send_raw("\x80\x04garbage", std::nullopt);
      send_raw(td::dist::pickle::dumps(meta(R"(["torch.float32", [2, 4], 0, 32, 0])"), Layout::ConsolidatedMetadata, "t"), 16);
      send_raw(std::string("\x80\x04\x8c\x02os\x8c\x06system\x93.", 16), std::nullopt);
    } else {
      const auto message = [&] { return td_test::message_of([&] { td::from_remote_init(r.group, 0); }); };
      const std::string garbage = message();
      check(garbage == "from_remote_init from rank 0: malformed pickle at byte 2 (opcode 0x67): this opcode is outside "
                       "the subset tensordict's metadata uses (dict, list, tuple, str, int, float, bool, None)",
            garbage);
      const std::string past = message();
      check(past == "malformed metadata (from_remote_init from rank 0): the top level: leaf 'obs' spans bytes 0..32, "
                    "outside the file's 16 bytes of data",
            past);
      const std::string global = message();
      check(global == "from_remote_init from rank 0: refused pickle: a class reference os.system outside a \"cls\" "
                      "entry",
            global);
    }
  });
  REQUIRE(failures == "");
}

TEST_CASE("object lists refuse a negative size from the peer", "[distributed][object_list][errors]") {
  const std::string failures = run_ranks(2, [](const Rank& r) {
    if (r.rank == 0) {
      std::vector<at::Tensor> sizes{at::full({1}, int64_t(-5), at::kLong)};
      r.group->send(sizes, 1, 0)->wait();
    } else {
      std::vector<td::Json> got(1);
      const std::string message = td_test::message_of([&] { td::recv_object_list(got, r.group, 0); });
      check(message == "recv_object_list from rank 0: rank 0 announced an object of -5 bytes (object 0), which no "
                       "pickle has",
            message);
    }
  });
  REQUIRE(failures == "");
}

TEST_CASE("gather_and_stack refuses a destination of the wrong batch size", "[distributed][gather][errors]") {
  const std::string failures = run_ranks(1, [](const Rank& r) {
    TensorDict wrong({{"x", at::zeros({3, 2})}}, {3});
    const std::string message = td_test::message_of([&] { td::gather_and_stack(wrong, r.group, 0); });
    check(message == "gather_and_stack to rank 0: the destination's batch size [3] must start with world_size - 1 = 0",
          message);
  });
  REQUIRE(failures == "");
}

TEST_CASE("from_remote_init and all_gather left waiting fail at the group's timeout, naming the call",
          "[distributed][init_remote][errors]") {
  const std::string failures = run_ranks(2, [](const Rank& r) {
    if (r.rank == 0) {
      std::this_thread::sleep_for(std::chrono::milliseconds(2500));  // alive, silent
      return;
    }
    const auto start = std::chrono::steady_clock::now();
    const std::string message = td_test::message_of([&] { td::from_remote_init(r.group, 0); });
    check(contains(message, "from_remote_init from rank 0: ") && (contains(message, "imed out") || contains(message, "imeout")),
          "a timeout naming the call: " + message);
    check(std::chrono::steady_clock::now() - start < std::chrono::seconds(5), "within the group's timeout");
  }, {.group_timeout = std::chrono::seconds(1), .deadline = std::chrono::seconds(30)});
  REQUIRE(failures == "");
}

TEST_CASE("gather_and_stack names the rank and key of a row that does not fit the destination",
          "[distributed][gather][errors]") {
  const std::string failures = run_ranks(2, [](const Rank& r) {
    if (r.rank == 0) {
      TensorDict out({{"a", at::zeros({1, 3})}}, {1});
      const std::string message = td_test::message_of([&] { td::gather_and_stack(out, r.group, 0); });
      check(message == "gather_and_stack to rank 0: rank 1 sent Float [4] for key 'a', the destination holds rows of "
                       "Float [3]",
            message);
    } else {
      td::gather_and_stack(TensorDict({{"a", at::zeros({4})}}, {}), r.group, 0);
    }
  });
  REQUIRE(failures == "");
}
