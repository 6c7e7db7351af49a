// Generated fields without batch dims (`unbatched: true`, tensordict's
// UnbatchedTensor as a tensorclass field, test_nontensor.py
// TestUnbatchedTensor::test_unbatched_tensorclass_attr_returns_unbatched):
// validated against their whole shape, carried unchanged by batch ops,
// computed on by value ops, and an UnbatchedTensor in the tensordict form.
#include <ATen/ATen.h>
#include <catch2/catch.hpp>
#include <tensordict/tensordict.h>

#include "../message_of.h"
#include "../temp_dir.h"
#include "tc_header.tc.h"
#include "tc_unbatched.tc.h"

using tct::unbatched::Policy;
using Catch::Matchers::Contains;
using td_test::message_of;
using tensordict::TensorDict;
using namespace at::indexing;

namespace {

Policy policy(int64_t n = 3) {
  return Policy({.obs = at::arange(n * 3, at::kFloat).view({n, 3}), .table = at::randn({5, 4}), .bias = at::ones({5})},
                {n});
}

void require_carried(const Policy& result, const Policy& source) {
  REQUIRE(result.table.data_ptr() == source.table.data_ptr());
  REQUIRE(result.bias.data_ptr() == source.bias.data_ptr());
}

}  // namespace

TEST_CASE("an unbatched field is checked against its whole shape (test_nontensor.py::TestUnbatchedTensor::"
          "test_unbatched_tensorclass_attr_returns_unbatched)",
          "[tensorclass][unbatched]") {
  const Policy p = policy();
  REQUIRE(p.table.sizes() == at::IntArrayRef({5, 4}));
  // The declared dims are all its dims; the symbol K binds across fields.
  REQUIRE_THAT(message_of([] { Policy({.obs = at::zeros({3, 3}), .table = at::zeros({3, 5, 4})}, {3}); }),
               Contains("Policy.table: expected 2 dims (0 batch + 2 declared) but got shape [3, 5, 4]"));
  REQUIRE_THAT(message_of([] { Policy({.obs = at::zeros({3, 3}), .table = at::zeros({5, 4}), .bias = at::zeros({6})}, {3}); }),
               Contains("symbolic dim K is 5 in table but 6 in bias"));
  REQUIRE_THAT(message_of([] { Policy({.obs = at::zeros({3, 3}), .table = at::zeros({5, 4}, at::kDouble)}, {3}); }),
               Contains("Policy.table: dtype must be float32 (got float64)"));
  // In the tensordict form it is an UnbatchedTensor.
  const TensorDict form = p.tensordict();
  REQUIRE(form.is_unbatched("table"));
  REQUIRE_FALSE(form.is_unbatched("obs"));
  REQUIRE(form.get("table").data_ptr() == p.table.data_ptr());
  const Policy back = Policy::from_tensordict(form);
  REQUIRE(back.table.data_ptr() == p.table.data_ptr());
}

TEST_CASE("batch ops carry an unbatched field, value ops compute on it", "[tensorclass][unbatched]") {
  const Policy p = policy();
  require_carried(p.index({0}), p);
  require_carried(p.index({Slice(0, 2)}), p);
  require_carried(p.reshape({1, 3}), p);
  require_carried(p.unsqueeze(0), p);
  require_carried(p.expand({2, 3}), p);
  for (const auto& piece : p.unbind(0)) require_carried(piece, p);
  for (const auto& piece : p.split(2, 0)) require_carried(piece, p);
  const Policy stacked = Policy::stack({p, p}, 0);
  REQUIRE(stacked.batch_size() == at::IntArrayRef({2, 3}));
  require_carried(stacked, p);
  require_carried(Policy::cat({p, p}, 0), p);
  REQUIRE(stacked.obs.sizes() == at::IntArrayRef({2, 3, 3}));

  const Policy cloned = p.clone();
  REQUIRE(cloned.table.data_ptr() != p.table.data_ptr());
  REQUIRE(at::equal(cloned.table, p.table));
  const Policy moved = p.to(at::Device(at::kCPU));
  REQUIRE(moved.table.sizes() == at::IntArrayRef({5, 4}));
  const Policy plus = p.apply([](const at::Tensor& t) { return t + 1; });
  REQUIRE(at::allclose(plus.table, p.table + 1));
}

TEST_CASE("indexed writes write an unbatched field whole, and only from a value that has it",
          "[tensorclass][unbatched]") {
  Policy p = policy();
  const at::Tensor before = p.table.clone();
  p.index_put_({0}, 7.0);  // a broadcast value: no batch dims to reach it
  REQUIRE(at::equal(p.table, before));
  REQUIRE(p.obs.index({0}).eq(7).all().item<bool>());
  Policy other = policy(1);
  other.table.fill_(2.0);
  p.index_put_({Slice(1, 2)}, other);
  REQUIRE(p.table.eq(2).all().item<bool>());  // written whole
  REQUIRE(at::equal(p.obs.index({1}), other.obs.index({0})));
}

TEST_CASE("an unbatched field is refused by memmap and consolidate, shown whole by repr", "[tensorclass][unbatched]") {
  td_test::TempDir dir;
  const Policy p = policy();
  REQUIRE_THAT(message_of([&] { p.memmap((dir / "p").string()); }),
               Contains("UnbatchedTensor entries cannot be memory-mapped yet, but 'table' is one"));
  REQUIRE_THAT(message_of([&] { p.consolidate(); }), Contains("UnbatchedTensor entries cannot be consolidated yet"));
  REQUIRE_THAT(p.repr(), Contains("table: f32[5,4]") && Contains("obs: f32[3]"));
}

TEST_CASE("TC_FIELD(unbatched) makes a header's field unbatched", "[tensorclass][unbatched]") {
  auto agent_with = [](at::Tensor frame) {
    tch::Agent agent;
    agent.pos = at::zeros({4, 2});
    agent.frame = std::move(frame);
    agent.init_({4});
    return agent;
  };
  const tch::Agent agent = agent_with(at::eye(2));
  REQUIRE(agent.tensordict().is_unbatched("frame"));
  REQUIRE(agent.index({1}).frame.data_ptr() == agent.frame.data_ptr());
  REQUIRE_THAT(message_of([&] { agent_with(at::eye(3)); }), Contains("Agent.frame: dim 0 must be 2 (got 3)"));
}
