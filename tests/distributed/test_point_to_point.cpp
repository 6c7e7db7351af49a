// send, recv, isend, irecv between forked ranks on loopback.
#include <catch2/catch.hpp>

#include "samples.h"

using namespace td_test;
namespace td = tensordict;

// tensordict test/test_distributed.py TestSend (send / recv of a nested tensordict)
TEST_CASE("send and recv a nested tensordict, keys inserted in another order", "[distributed][send]") {
  const std::string failures = run_ranks(2, [](const Rank& r) {
    if (r.rank == 0) {
      check(td::send(sample(2), r.group, 1, packed()) == 1, "send returns the last tag");
    } else {
      TensorDict got = sample_template();
      const at::Tensor b_before = got.get("b");
      check(td::recv(got, r.group, 0, packed()) == 1, "recv returns the last tag");
      check_equal(got, sample(2), "received");
      check(got.get("b").data_ptr() == b_before.data_ptr(), "recv writes into the existing leaves");
    }
  });
  REQUIRE(failures == "");
}

// tensordict test/test_distributed.py TestiSend (isend / irecv)
TEST_CASE("isend and irecv return waitable work", "[distributed][isend]") {
  const std::string failures = run_ranks(2, [](const Rank& r) {
    if (r.rank == 0) {
      auto work = td::isend(sample(3), r.group, 1, packed(10));
      work.wait();
      check(work.is_completed(), "completed after wait");
    } else {
      TensorDict got = sample_template();
      auto work = td::irecv(got, r.group, 0, packed(10));
      work.wait();
      work.wait();  // a second wait is a no-op
      check_equal(got, sample(3), "received");
    }
  });
  REQUIRE(failures == "");
}

TEST_CASE("a consolidated tensordict is sent from and received into its storage", "[distributed][send][consolidate]") {
  const std::string failures = run_ranks(2, [](const Rank& r) {
    // Inserted in sorted order, so that the storage's layout is the wire's.
    auto make = [](double seed) {
      return TensorDict({{"a", at::arange(6, at::kFloat) * seed}, {"b", at::ones({2, 3}, at::kDouble) * seed}}, {});
    };
    if (r.rank == 0) {
      td::send(make(5).consolidate(), r.group, 1, packed());
      td::send(make(6).consolidate(), r.group, 1, packed(3));
      // Over the first message's 1 MiB: the leaves go in a second message, from the storage itself.
      td::send(TensorDict({{"big", at::arange(600000, at::kFloat)}, {"small", at::ones({3})}}, {}).consolidate(), r.group, 1, packed(5));
    } else {
      TensorDict got = make(0).consolidate();
      const void* storage = got.consolidated_storage()->data_ptr();
      td::recv(got, r.group, 0, packed());
      check_equal(got, make(5), "received");
      check(got.is_consolidated() && got.consolidated_storage()->data_ptr() == storage, "still the same storage");
      auto work = td::irecv(got, r.group, 0, packed(3));
      work.wait();
      check_equal(got, make(6), "received by irecv");
      TensorDict big = TensorDict({{"big", at::zeros({600000})}, {"small", at::zeros({3})}}, {}).consolidate();
      const void* big_storage = big.consolidated_storage()->data_ptr();
      td::recv(big, r.group, 0, packed(5));
      check(at::equal(big.get("big"), at::arange(600000, at::kFloat)) && at::equal(big.get("small"), at::ones({3})),
            "large consolidated payload");
      check(big.consolidated_storage()->data_ptr() == big_storage, "received into the storage");
    }
  });
  REQUIRE(failures == "");
}

TEST_CASE("lazy stacks travel member after member", "[distributed][send][lazy]") {
  const std::string failures = run_ranks(2, [](const Rank& r) {
    if (r.rank == 0) {
      td::send(lazy_sample(4), r.group, 1, packed());
      // A dense tensordict holding a lazy stack.
      td::send(TensorDict({{"z", at::full({2}, 7.0)}, {"stack", lazy_sample(8)}}, {2}), r.group, 1, packed(3));
    } else {
      auto got = lazy_sample(0);
      td::recv(got, r.group, 0, packed());
      const auto expected = lazy_sample(4);
      for (int i = 0; i < 2; ++i) check_equal(got.tensordicts()[i], expected.tensordicts()[i], "member");
      TensorDict outer({{"z", at::zeros({2})}, {"stack", lazy_sample(0)}}, {2});
      td::recv(outer, r.group, 0, packed(3));
      check(at::equal(outer.get("z"), at::full({2}, 7.0)), "z");
      const td::LazyStackedTensorDict inner(outer.get_td("stack"));
      check_equal(inner.tensordicts()[1], lazy_sample(8).tensordicts()[1], "nested member");
    }
  });
  REQUIRE(failures == "");
}

TEST_CASE("non-contiguous leaves and leaves that require grad are sent and received", "[distributed][send]") {
  const std::string failures = run_ranks(2, [](const Rank& r) {
    const at::Tensor base = at::arange(12, at::kFloat).reshape({4, 3});
    if (r.rank == 0) {
      td::send(TensorDict({{"t", base.t()}, {"w", base.clone().requires_grad_(true)}}, {}), r.group, 1, packed());
    } else {
      TensorDict got({{"t", at::zeros({3, 4})}, {"w", at::zeros({4, 3}).requires_grad_(true)}}, {});
      td::recv(got, r.group, 0, packed());
      check(at::equal(got.get("t"), base.t()), "transposed leaf");
      check(at::equal(got.get("w").detach(), base) && got.get("w").requires_grad(), "leaf requiring grad");
    }
  });
  REQUIRE(failures == "");
}

TEST_CASE("1000 isend/irecv in flight arrive complete and in order, whatever the order of the waits", "[distributed][isend][stress]") {
  const std::string failures = run_ranks(2, [](const Rank& r) {
    constexpr int kMessages = 1000;
    auto message = [](int i) {
      return TensorDict({{"i", at::full({2}, i, at::kLong)}, {"x", at::arange(10, at::kFloat).reshape({2, 5}) + i}}, {2});
    };
    std::vector<td::Work> works;
    if (r.rank == 0) {
      std::vector<TensorDict> outgoing;  // alive until their sends complete
      for (int i = 0; i < kMessages; ++i) {
        outgoing.push_back(message(i));
        works.push_back(td::isend(outgoing.back(), r.group, 1, packed()));  // one tag: order is all that tells them apart
      }
      for (auto& w : works) w.wait();
    } else {
      std::vector<TensorDict> incoming;
      for (int i = 0; i < kMessages; ++i) {
        incoming.push_back(TensorDict({{"i", at::full({2}, -1, at::kLong)}, {"x", at::zeros({2, 5})}}, {2}));
        works.push_back(td::irecv(incoming.back(), r.group, 0, packed()));
      }
      // Waited last first: each still gets its own message (posting order decides).
      for (auto w = works.rbegin(); w != works.rend(); ++w) w->wait();
      for (int i = 0; i < kMessages; ++i) check_equal(incoming[i], message(i), "message " + std::to_string(i));
    }
  });
  REQUIRE(failures == "");
}
