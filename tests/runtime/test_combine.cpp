// stack and cat compared with at::stack / at::cat on the leaves.
#include "helpers.h"

using namespace tensordict;
using namespace td_test;
using Catch::Matchers::Contains;

namespace {
// sample() with every leaf shifted, so members differ.
TensorDict shifted(at::IntArrayRef batch, double by) {
  auto td = sample(batch);
  for (const auto& [key, value] : td.items({.include_nested = true, .leaves_only = true})) td.set(key, value.tensor() + by);
  return td;
}
}  // namespace

TEST_CASE("stack adds a batch dim at any position") {
  auto a = sample({2, 3});
  auto b = shifted({2, 3}, 100);
  for (int64_t dim : {0, 1, 2, -1, -3}) {
    DYNAMIC_SECTION("dim " << dim) {
      auto s = stack({a, b}, dim);
      // .vec(): sizes() of a temporary dangles (found by the ASan suite).
      auto expected = at::stack({at::zeros({2, 3}), at::zeros({2, 3})}, dim).sizes().vec();
      REQUIRE(s.batch_size() == expected);
      REQUIRE(s.get_td("nested").batch_size() == expected);
      for (const auto& key : a.keys({.include_nested = true, .leaves_only = true})) {
        const int64_t batch_position = dim < 0 ? dim + 3 : dim;  // counted within the batch dims
        REQUIRE(at::equal(s.get(key), at::stack({a.get(key), b.get(key)}, batch_position)));
      }
    }
  }
}

TEST_CASE("stack of many members and of one") {
  std::vector<TensorDict> members;
  for (int i = 0; i < 64; ++i) members.push_back(shifted({3}, i));
  auto s = stack(members);
  REQUIRE(s.batch_size() == at::IntArrayRef({64, 3}));
  REQUIRE(at::equal(s.get("b").index({17}), members[17].get("b")));
  auto single = stack({members[0]}, 1);
  REQUIRE(single.batch_size() == at::IntArrayRef({3, 1}));
}

TEST_CASE("stack keeps a common device and common names") {
  TensorDict a({{"x", at::zeros({2})}}, {2}, at::Device(at::kCPU), {"env"});
  TensorDict b({{"x", at::ones({2})}}, {2}, at::Device(at::kCPU), {"env"});
  auto s = stack({a, b}, 1);
  REQUIRE(s.device() == at::Device(at::kCPU));
  REQUIRE((s.names() == Names{"env", std::nullopt}));
}

TEST_CASE("stack errors name the member and what differs") {
  auto a = sample({2});
  REQUIRE_THAT(TD_MESSAGE(stack({})), Contains("stack needs at least one tensordict"));
  REQUIRE_THAT(TD_MESSAGE(stack({a, sample({3})})), Contains("tensordict 1 has batch size [3] but tensordict 0 has [2]"));
  auto missing = sample({2});
  missing.del_("b");
  missing.set("z", at::zeros({2}));
  REQUIRE_THAT(TD_MESSAGE(stack({a, missing})), Contains("tensordict 1 has different keys") && Contains("missing [b]") &&
                                                    Contains("extra [z]"));
  auto nested_missing = sample({2});
  nested_missing.del_({"nested", "c"});
  REQUIRE_THAT(TD_MESSAGE(stack({a, nested_missing})), Contains("at 'nested'") && Contains("missing [c]"));
  auto kinds = sample({2});
  kinds.set("b", TensorDict({}, {2}));
  REQUIRE_THAT(TD_MESSAGE(stack({a, kinds})), Contains("key 'b' is a tensor in tensordict 0 but a tensordict in tensordict 1"));
  auto shapes = sample({2});
  shapes.set("a", at::zeros({2, 7}));
  REQUIRE_THAT(TD_MESSAGE(stack({a, shapes})), Contains("stack failed for key 'a'"));
  REQUIRE_THAT(TD_MESSAGE(stack({a, a}, 3)), Contains("stack: dim 3 is out of range"));
}

TEST_CASE("cat joins along an existing batch dim") {
  auto a = sample({2, 3});
  auto b = shifted({4, 3}, 50);
  auto c = cat({a, b}, 0);
  REQUIRE(c.batch_size() == at::IntArrayRef({6, 3}));
  REQUIRE(c.get_td("nested").batch_size() == at::IntArrayRef({6, 3}));
  for (const auto& key : a.keys({.include_nested = true, .leaves_only = true})) REQUIRE(at::equal(c.get(key), at::cat({a.get(key), b.get(key)}, 0)));
  auto d = cat({sample({2, 1}), shifted({2, 5}, 1)}, -1);
  REQUIRE(d.batch_size() == at::IntArrayRef({2, 6}));
  REQUIRE_THAT(TD_MESSAGE(cat({a, sample({2, 4})}, 0)), Contains("cat: tensordict 1 has batch size [2, 4] but tensordict 0 has [2, 3]"));
  REQUIRE_THAT(TD_MESSAGE(cat({a, sample({2})}, 0)), Contains("cat: tensordict 1 has batch size [2]"));
  REQUIRE_THAT(TD_MESSAGE(cat({}, 0)), Contains("cat needs at least one tensordict"));
  REQUIRE_THAT(TD_MESSAGE(cat({a, a}, 2)), Contains("cat: dim 2 is out of range"));
}
