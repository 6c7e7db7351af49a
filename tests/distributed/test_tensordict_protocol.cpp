// tensordict's own protocol between C++ ranks (the default): one message per
// leaf with tensordict's tags, the consolidated storage as one message,
// per-leaf reductions; ports of tensordict's test_distributed.py cases.
// The same calls against Python ranks: tests/distributed/mixed.
#include <catch2/catch.hpp>

#include "../message_of.h"
#include "samples.h"

using namespace td_test;
namespace td = tensordict;

namespace {

// tensordict's TestSend.make_td: ones or zeros at ('a','b'), 'c', ('d','e','f'), '_'.
TensorDict send_td(bool ones) {
  auto fill = [&](std::vector<int64_t> shape) { return ones ? at::ones(shape) : at::zeros(shape); };
  TensorDict td({{"a", TensorDict({{"b", fill({2})}}, {2})},
                 {"c", fill({2, 3})},
                 {"d", TensorDict({{"e", TensorDict({{"f", fill({2, 2})}}, {2})}}, {2})}},
                {2});
  td.set("_", fill({2, 1, 5}));
  return td;
}

// TestSendLazyStackRoot.make_td: two members whose 'c' differ in shape, the second with a 'g'.
TensorDict lazy_send_td(bool ones) {
  TensorDict first = send_td(ones);
  TensorDict second = send_td(ones).clone();
  second.set("c", ones ? at::ones({2, 3, 2}) : at::zeros({2, 3, 2}));
  second.set("g", ones ? at::ones({2, 1, 5}) : at::zeros({2, 1, 5}));
  return td::lazy_stack({first, second}, 0);
}

void check_all(const TensorDict& td, double value, const std::string& what) {
  if (td.kind() == td::Kind::LazyStack) {
    for (const auto& m : td::LazyStackedTensorDict(td).tensordicts()) check_all(m, value, what);
    return;
  }
  for (const auto& [key, v] : td.items()) {
    if (v.is_tensor()) check(v.tensor().eq(value).all().item<bool>(), what + ": key " + key.repr());
    if (v.is_tensordict()) check_all(v.tensordict(), value, what);
  }
}

}  // namespace

TEST_CASE("send and recv one message per leaf, tensordict's tags, as root, lazy root and lazy nested",
          "[distributed][tensordict_protocol][ports:test_distributed.py::TestSend::test_send]"
          "[ports:test_distributed.py::TestSendLazyStackRoot::test_send]"
          "[ports:test_distributed.py::TestSendLazyStackNest::test_send]") {
  const bool pseudo_rand = GENERATE(false, true);
  const int shape = GENERATE(0, 1, 2);  // root, lazy root, lazy nested
  auto make = [&](bool ones) {
    if (shape == 0) return send_td(ones);
    if (shape == 1) return lazy_send_td(ones);
    TensorDict outer = send_td(ones);
    outer.set("lazy", lazy_send_td(ones));
    return outer;
  };
  const std::string failures = run_ranks(2, [&](const Rank& r) {
    if (r.rank == 1) {
      td::send(make(true), r.group, 0, {.pseudo_rand = pseudo_rand});
    } else {
      TensorDict got = make(false);
      td::recv(got, r.group, 1, {.pseudo_rand = pseudo_rand});
      check_all(got, 1.0, "received");
    }
  });
  REQUIRE(failures == "");
}

TEST_CASE("isend and irecv: every leaf posted at once, wait() until done",
          "[distributed][tensordict_protocol][ports:test_distributed.py::TestiSend::test_isend]"
          "[ports:test_distributed.py::TestiRecv::test_irecv]"
          "[ports:test_distributed.py::TestiRecvLazyStackNest::test_irecv]") {
  const bool pseudo_rand = GENERATE(false, true);
  const std::string failures = run_ranks(2, [&](const Rank& r) {
    if (r.rank == 1) {
      td::isend(lazy_send_td(true), r.group, 0, {.pseudo_rand = pseudo_rand}).wait();
    } else {
      TensorDict got = lazy_send_td(false);
      td::Work work = td::irecv(got, r.group, 1, {.pseudo_rand = pseudo_rand});
      work.wait();
      check(work.is_completed(), "completed");
      check_all(got, 1.0, "received");
    }
  });
  REQUIRE(failures == "");
}

TEST_CASE("the leaves travel in sorted order with tags from init_tag, or tensordict's pseudo-random chain",
          "[distributed][tensordict_protocol]") {
  // tensordict 0.15.3's own tags (its _send: t = init_tag - 1, then t = _int_generator(t + 1)
  // per leaf), printed by the venv's Python:
  //   init_tag 0  -> 9651, 3450, 3834, 3840
  //   init_tag 10 -> 6756, 6546, 9770, 8695
  const bool pseudo_rand = GENERATE(false, true);
  const int init_tag = GENERATE(0, 10);
  std::vector<int> tags;
  if (!pseudo_rand) {
    for (int i = 0; i < 4; ++i) tags.push_back(init_tag + i);
  } else if (init_tag == 0) {
    tags = {9651, 3450, 3834, 3840};
  } else {
    tags = {6756, 6546, 9770, 8695};
  }
  const std::string failures = run_ranks(2, [&](const Rank& r) {
    // Keys inserted out of order; 'n' nests two leaves where its key sorts.
    TensorDict sent({{"z", at::full({2}, 4.0)},
                     {"n", TensorDict({{"y", at::full({2}, 3.0)}, {"x", at::full({2}, 2.0)}}, {2})},
                     {"a", at::full({2}, 1.0)}},
                    {2});
    if (r.rank == 0) {
      check(td::send(sent, r.group, 1, {.init_tag = init_tag, .pseudo_rand = pseudo_rand}) == tags.back(),
            "send returns the last tag");
    } else {
      // Plain c10d receives, one per expected tag: a, (n, x), (n, y), z.
      for (int i = 0; i < 4; ++i) {
        std::vector<at::Tensor> one{at::zeros({2})};
        r.group->recv(one, 0, tags[i])->wait();
        check(at::equal(one[0], at::full({2}, double(i + 1))), "leaf " + std::to_string(i) + " with its tag");
      }
    }
  });
  REQUIRE(failures == "");
}

TEST_CASE("send(consolidated) sends the storage as one message into the receiver's consolidated storage",
          "[distributed][tensordict_protocol][consolidate][ports:test_distributed.py::TestSendConsolidated::test_send_consolidated]") {
  const std::string failures = run_ranks(2, [](const Rank& r) {
    TensorDict td({{"a", TensorDict({{"b", at::ones({2})}}, {2})}, {"c", at::ones({2, 3})}}, {2});
    if (r.rank == 0) {
      td.set({"a", "b"}, at::full({2}, 2.0));
      td.set("c", at::full({2, 3}, 2.0));
      check(td::send(td, r.group, 1, {.consolidated = true}) == 0, "send(consolidated) returns tag 0");
    } else {
      TensorDict got = td.consolidate();
      td::recv(got, r.group, 0, {.consolidated = true});
      check_all(got, 2.0, "received into the storage");
      check(got.is_consolidated(), "still consolidated");
    }
  });
  REQUIRE(failures == "");
}

TEST_CASE("all_reduce and reduce per leaf, and per bucket with bucket_bytes",
          "[distributed][tensordict_protocol][all_reduce][ports:test_distributed.py::TestAllReduce::test_all_reduce]"
          "[ports:test_distributed.py::TestReduce::test_gather]") {
  const bool product = GENERATE(false, true);
  const std::optional<int64_t> bucket_bytes = GENERATE(std::optional<int64_t>(), std::optional<int64_t>(16));
  const bool async_op = GENERATE(false, true);
  const std::string failures = run_ranks(3, [&](const Rank& r) {
    auto make = [] {
      return TensorDict({{"a", TensorDict({{"b", at::ones({2})}}, {2})},
                         {"c", at::ones({2, 3})},
                         {"d", TensorDict({{"e", TensorDict({{"f", at::ones({2, 2})}}, {2})}}, {2})}},
                        {2});
    };
    const td::ReduceOpOptions options{.op = product ? c10d::ReduceOp::PRODUCT : c10d::ReduceOp::SUM,
                                      .async_op = async_op,
                                      .bucket_bytes = bucket_bytes};
    TensorDict all = make();
    td::all_reduce(all, r.group, options).wait();
    check_all(all, product ? 1.0 : 3.0, "all_reduce");
    TensorDict one = make();
    td::reduce(one, r.group, 0, options).wait();
    if (r.rank == 0) check_all(one, product ? 1.0 : 3.0, "reduce on dst");
  });
  REQUIRE(failures == "");
}

TEST_CASE("tensordict's protocol: what a caller gets wrong is a clear error", "[distributed][tensordict_protocol][errors]") {
  const std::string failures = run_ranks(1, [](const Rank& r) {
    TensorDict plain({{"a", at::ones({2})}}, {});
    const std::string not_consolidated = message_of([&] { td::recv(plain, r.group, 0, {.consolidated = true}); });
    check_message(not_consolidated, {"recv(consolidated=True) from rank 0: the tensordict is not consolidated"});
    const std::string negative = message_of([&] { td::send(plain, r.group, 0, {.init_tag = -1, .pseudo_rand = true}); });
    check_message(negative, {"send: with pseudo_rand, init_tag seeds numpy's generator and must be non-negative, got -1"});
    const std::string packed_pseudo = message_of([&] {
      td::send(plain, r.group, 0, {.pseudo_rand = true, .protocol = td::WireProtocol::packed});
    });
    check_message(packed_pseudo, {"send: pseudo_rand and consolidated belong to WireProtocol::tensordict"});
    const std::string bucket = message_of([&] { td::all_reduce(plain, r.group, {.bucket_bytes = 0}); });
    check_message(bucket, {"all_reduce: bucket_bytes must be a positive number of bytes, got 0"});
    const std::string packed_bucket = message_of([&] {
      td::reduce(plain, r.group, 0, {.bucket_bytes = 8, .protocol = td::WireProtocol::packed});
    });
    check_message(packed_bucket, {"reduce: bucket_bytes belongs to WireProtocol::tensordict"});
  });
  REQUIRE(failures == "");
}

TEST_CASE("a leaf that never arrives fails at the group's timeout, naming the call, the peer, the tag and the key",
          "[distributed][tensordict_protocol][errors]") {
  const std::string failures = run_ranks(
      2,
      [](const Rank& r) {
        if (r.rank == 0) {
          td::send(TensorDict({{"a", at::ones({2})}}, {}), r.group, 1);
        } else {
          TensorDict got({{"a", at::zeros({2})}, {"b", at::zeros({2})}}, {});  // 'b' is never sent
          const std::string message = message_of([&] { td::recv(got, r.group, 0); });
          check_message(message, {"recv from rank 0 (tag 1, key 'b')"});
        }
      },
      {.group_timeout = std::chrono::seconds(3)});
  REQUIRE(failures == "");
}
