// all_reduce, reduce, broadcast, gather_and_stack, init_remote / from_remote_init.
#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

#include "../message_of.h"
#include "samples.h"
#include "tensordict/non_tensor.h"

using namespace td_test;
namespace td = tensordict;

namespace {

// Each rank's contribution: sample(rank + 1) without the bool leaf (Gloo reduces no bools).
TensorDict numbers(int rank) { return TensorDict(sample(rank + 1).exclude({"c"})); }

// What a SUM over `world` ranks gives, computed leaf by leaf here.
TensorDict expected_sum(int world) {
  TensorDict out(numbers(0).clone());
  for (int r = 1; r < world; ++r) {
    const TensorDict other = numbers(r);
    for (const auto& key : out.keys({.include_nested = true, .leaves_only = true})) out.set(key, out.get(key) + other.get(key));
  }
  return out;
}

}  // namespace

// tensordict test/test_distributed.py TestAllReduce
TEST_CASE("all_reduce sums every leaf on every rank, one call per dtype", "[distributed][all_reduce]") {
  const std::string failures = run_ranks(3, [](const Rank& r) {
    TensorDict mine = numbers(r.rank);
    td::all_reduce(mine, r.group, packed_reduce());
    check_equal(mine, expected_sum(r.world), "SUM");

    TensorDict peak = numbers(r.rank);
    td::all_reduce(peak, r.group, packed_reduce({.op = c10d::ReduceOp::MAX, .async_op = true})).wait();
    check_equal(peak, numbers(r.world - 1), "MAX");  // every leaf grows with the rank
  });
  REQUIRE(failures == "");
}

TEST_CASE("all_reduce of a consolidated one-dtype tensordict reduces its storage in place", "[distributed][all_reduce][consolidate]") {
  const std::string failures = run_ranks(2, [](const Rank& r) {
    auto make = [](float v) {
      return TensorDict({{"a", at::full({3}, v)}, {"b", TensorDict({{"c", at::full({2, 2}, 2 * v)}}, {})}}, {});
    };
    TensorDict mine = make(static_cast<float>(r.rank + 1)).consolidate();
    const void* storage = mine.consolidated_storage()->data_ptr();
    td::all_reduce(mine, r.group, packed_reduce());
    check_equal(mine, make(3.0f), "sum");
    check(mine.consolidated_storage()->data_ptr() == storage, "same storage");
  });
  REQUIRE(failures == "");
}

// tensordict test/test_distributed.py TestReduce
TEST_CASE("reduce lands the sum on the destination and leaves the others unchanged", "[distributed][reduce]") {
  const std::string failures = run_ranks(3, [](const Rank& r) {
    TensorDict mine = numbers(r.rank);
    td::reduce(mine, r.group, /*dst=*/1, packed_reduce());
    check_equal(mine, r.rank == 1 ? expected_sum(r.world) : numbers(r.rank), "after reduce");
  });
  REQUIRE(failures == "");
}

TEST_CASE("broadcast copies the source's leaves everywhere, lazy stacks included", "[distributed][broadcast]") {
  const std::string failures = run_ranks(3, [](const Rank& r) {
    TensorDict mine = r.rank == 2 ? sample(9) : sample_template();
    td::broadcast(mine, r.group, /*src=*/2, {.protocol = td::WireProtocol::packed});
    check_equal(mine, sample(9), "dense");

    auto lazy = lazy_sample(r.rank == 0 ? 5 : 0);
    td::broadcast(lazy, r.group, 0, {.protocol = td::WireProtocol::packed});
    for (int i = 0; i < 2; ++i) check_equal(lazy.tensordicts()[i], lazy_sample(5).tensordicts()[i], "lazy member");
  });
  REQUIRE(failures == "");
}

// tensordict test/test_distributed.py TestGather (gather_and_stack)
TEST_CASE("gather_and_stack stacks every other rank's tensordict on the destination", "[distributed][gather]") {
  const std::string failures = run_ranks(3, [](const Rank& r) {
    const int dst = 1;
    if (r.rank == dst) {
      TensorDict stacked = td::stack({sample_template(), sample_template()}, 0);  // batch [world - 1, 3]
      td::gather_and_stack(stacked, r.group, dst, {.protocol = td::WireProtocol::packed});
      check_equal(stacked.index({0}), sample(10), "from rank 0");
      check_equal(stacked.index({1}), sample(12), "from rank 2");
    } else {
      td::gather_and_stack(sample(10 + r.rank), r.group, dst, {.protocol = td::WireProtocol::packed});
    }
  });
  REQUIRE(failures == "");
}

TEST_CASE("gather_and_stack in a group of one leaves the destination's empty stack as it is", "[distributed][gather]") {
  const std::string failures = run_ranks(1, [](const Rank& r) {
    TensorDict none({{"x", at::full({0, 3}, 5.0)}}, {0});
    td::gather_and_stack(none, r.group, 0, {.protocol = td::WireProtocol::packed});
    check(none.get("x").sizes() == at::IntArrayRef({0, 3}), "nothing gathered");
    TensorDict one({{"x", at::zeros({1, 3})}}, {1});
    check(message_of([&] { td::gather_and_stack(one, r.group, 0, {.protocol = td::WireProtocol::packed}); }) ==
              "gather_and_stack to rank 0: the destination's batch size [1] must start with world_size - 1 = 0",
          "a destination with rows in a group of one");
  });
  REQUIRE(failures == "");
}

TEST_CASE("init_remote sends the structure: from_remote_init needs no template", "[distributed][init_remote]") {
  const std::string failures = run_ranks(2, [](const Rank& r) {
    auto make = [] {
      TensorDict td({{"zeta", at::arange(4, at::kFloat).reshape({2, 2})},
                     {"nested", TensorDict({{"ids", at::arange(2, at::kInt)}}, {2})},
                     {"stack", TensorDict({{"obs", at::ones({2, 3})}}, {2})}},
                    {2}, std::nullopt, {"env"});
      td.set_non_tensor("task", td::Json("walk"));
      return td;
    };
    if (r.rank == 0) {
      td::init_remote(make(), r.group, 1, {.protocol = td::WireProtocol::packed});
      td::init_remote(TensorDict({{"inner", lazy_sample(3)}}, {2}), r.group, 1, {.protocol = td::WireProtocol::packed});
    } else {
      const td::TensorDict got = td::from_remote_init(r.group, 0, {.protocol = td::WireProtocol::packed});
      const TensorDict expected = make();
      const auto keys = got.keys();
      check(keys.size() == 4 && keys[0] == td::NestedKey("zeta") && keys[1] == td::NestedKey("nested") &&
                keys[2] == td::NestedKey("stack") && keys[3] == td::NestedKey("task"),
            "keys in the sender's order");
      check(got.batch_size() == expected.batch_size(), "batch size");
      check(got.names() == expected.names(), "names");
      check(got.get_non_tensor("task") == td::Json("walk"), "non-tensor data");
      check(at::equal(got.get("zeta"), expected.get("zeta")), "zeta");
      check(at::equal(got.get({"nested", "ids"}), expected.get({"nested", "ids"})), "nested ids");
      check(at::equal(got.get({"stack", "obs"}), at::ones({2, 3})), "nested obs");

      const td::TensorDict holder = td::from_remote_init(r.group, 0, {.protocol = td::WireProtocol::packed});
      check(holder.get_td("inner").kind() == tensordict::Kind::LazyStack, "a lazy stack stays lazy");
      const td::LazyStackedTensorDict stack(holder.get_td("inner"));
      for (int i = 0; i < 2; ++i) check_equal(stack.tensordicts()[i], lazy_sample(3).tensordicts()[i], "lazy member");
    }
  });
  REQUIRE(failures == "");
}
