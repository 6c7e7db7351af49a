// Batch indexing, indexed assignment, get_at / set_at_.
#include "helpers.h"

using namespace tensordict;
using namespace td_test;
using Catch::Matchers::Contains;
using at::indexing::Ellipsis;
using at::indexing::None;
using at::indexing::Slice;

namespace {

struct IndexCase {
  std::string name;
  std::vector<int64_t> batch;
  std::vector<TensorIndex> index;
};

std::vector<IndexCase> index_cases() {
  auto mask1 = mask({1, 0, 1, 1});
  auto mask2 = mask({1, 0, 1, 0, 0, 1}).reshape({2, 3});
  auto longs = at::tensor({2, 0, -1}, at::kLong);
  auto longs2d = at::tensor({0, 1, 1, 0}, at::kLong).reshape({2, 2});
  return {
      {"int", {4, 3}, {1}},
      {"negative int", {4, 3}, {-1}},
      {"int on second dim", {4, 3}, {Slice(), 2}},
      {"slice with step", {6, 3}, {Slice(1, None, 2)}},
      {"slice clamped", {4, 3}, {Slice(-10, 100)}},
      {"empty slice", {4, 3}, {Slice(3, 1)}},
      {"none", {4, 3}, {None}},
      {"none in the middle", {4, 3}, {Slice(), None, 0}},
      {"ellipsis then int", {4, 3, 2}, {Ellipsis, 0}},
      {"int ellipsis int", {4, 3, 2}, {1, Ellipsis, -1}},
      {"ellipsis alone", {4, 3}, {Ellipsis}},
      {"bool mask over dim 0", {4, 3}, {mask1}},
      {"bool mask over two dims", {2, 3, 5}, {mask2}},
      {"bool mask after slice", {5, 4}, {Slice(), mask1}},
      {"long tensor", {4, 3}, {longs}},
      {"2-d long tensor", {4, 3}, {longs2d}},
      {"two adjacent long tensors", {4, 3}, {at::tensor({0, 3}, at::kLong), at::tensor({2, 1}, at::kLong)}},
      {"separated long tensors", {4, 3, 5}, {at::tensor({0, 3}, at::kLong), Slice(), at::tensor({4, 1}, at::kLong)}},
      {"int and long tensor", {4, 3, 5}, {1, Slice(), at::tensor({4, 1}, at::kLong)}},
      {"bool scalar true", {4, 3}, {true}},
      {"bool scalar false", {4, 3}, {false}},
      {"none and long tensor", {4, 3}, {None, longs}},
  };
}

}  // namespace

TEST_CASE("indexing gives torch's batch size and indexes every leaf as torch would") {
  for (const auto& c : index_cases()) {
    DYNAMIC_SECTION(c.name) {
      // Two leaves: one of exactly the batch shape, one with a feature dim.
      at::Tensor plain = iota(c.batch);
      at::Tensor feature = at::stack({plain, plain * 10}, -1);
      TensorDict td({{"plain", plain}, {"n", TensorDict({{"feature", feature}}, c.batch)}}, c.batch);

      const std::vector<int64_t> expected_batch = at::zeros(c.batch).index(c.index).sizes().vec();
      auto out = td.index(c.index);
      REQUIRE(out.batch_size() == expected_batch);
      REQUIRE(BatchIndex(c.index, c.batch).result_batch_size() == expected_batch);
      REQUIRE(at::equal(out.get("plain"), plain.index(c.index)));
      const at::Tensor expected_feature = at::stack({plain.index(c.index), plain.index(c.index) * 10}, -1);
      REQUIRE(at::equal(out.get({"n", "feature"}), expected_feature));
      REQUIRE(out.get_td("n").batch_size() == expected_batch);
    }
  }
}

TEST_CASE("int32 index tensors act as long ones, an empty index is the identity") {
  auto td = sample({4, 3});
  auto as_int = td.index({at::tensor({3, 1}, at::kInt)});
  auto as_long = td.index({at::tensor({3, 1}, at::kLong)});
  for (const auto& key : td.keys({.include_nested = true, .leaves_only = true})) REQUIRE(at::equal(as_int.get(key), as_long.get(key)));
  auto same = td.index({});
  REQUIRE(same.batch_size() == td.batch_size());
  REQUIRE(same.get("a").data_ptr() == td.get("a").data_ptr());
}

TEST_CASE("basic indices give views, advanced ones copy") {
  auto td = sample({4, 3});
  auto view = td.index({1, Slice(0, 2)});
  view.get("a").fill_(-5);
  REQUIRE(td.get("a").index({1, Slice(0, 2)}).eq(-5).all().item<bool>());
  auto gathered = td.index({at::tensor({0, 1}, at::kLong)});
  gathered.get("a").fill_(-42);
  REQUIRE_FALSE(td.get("a").eq(-42).any().item<bool>());
}

TEST_CASE("indexing a nested tensordict with a longer batch keeps its extra dims") {
  TensorDict td({{"n", TensorDict({{"x", iota({4, 3, 2})}}, {4, 3})}}, {4});
  auto out = td.index({mask({1, 0, 1, 0})});
  REQUIRE(out.batch_size() == at::IntArrayRef({2}));
  REQUIRE(out.get_td("n").batch_size() == at::IntArrayRef({2, 3}));
  REQUIRE(at::equal(out.get({"n", "x"}), iota({4, 3, 2}).index({at::tensor({0, 2}, at::kLong)})));
}

TEST_CASE("indexing an empty tensordict still computes the batch size") {
  TensorDict td({}, {5, 2});
  REQUIRE(td.index({Slice(1, 4), None}).batch_size() == at::IntArrayRef({3, 1, 2}));
  REQUIRE(td.index({mask({1, 1, 0, 0, 1})}).batch_size() == at::IntArrayRef({3, 2}));
}

TEST_CASE("indexing errors say what was wrong") {
  auto td = sample({4, 3});
  REQUIRE_THROWS_AS(td.index({4}), std::out_of_range);
  REQUIRE_THAT(TD_MESSAGE(td.index({4})), Contains("index 4 is out of range for batch dim 0 of size 4") && Contains("[4, 3]"));
  REQUIRE_THAT(TD_MESSAGE(td.index({0, -4})), Contains("index -4 is out of range for batch dim 1 of size 3"));
  REQUIRE_THAT(TD_MESSAGE(td.index({0, 0, 0})), Contains("too many indices") && Contains("3 batch dims indexed but only 2"));
  REQUIRE_THAT(TD_MESSAGE(td.index({Ellipsis, 0, Ellipsis})), Contains("single ellipsis"));
  REQUIRE_THAT(TD_MESSAGE(td.index({Slice(None, None, -1)})), Contains("slice step must be positive"));
  REQUIRE_THAT(TD_MESSAGE(td.index({mask({1, 0})})), Contains("mask of shape [2] does not match") && Contains("[4]"));
  REQUIRE_THAT(TD_MESSAGE(td.index({at::tensor({0.5})})), Contains("index tensors must be long, int or bool"));
  REQUIRE_THAT(TD_MESSAGE(td.index({at::tensor({7}, at::kLong)})), Contains("index failed for key 'a'") && Contains("out of bounds"));
  // libtorch's IndexError stays an index error (it escaped as a runtime_error before).
  REQUIRE_THROWS_AS(td.index({at::tensor({7}, at::kLong)}), std::out_of_range);
  REQUIRE_THROWS_AS(td.index({Slice(), at::tensor({-4}, at::kLong)}), std::out_of_range);
  REQUIRE_THAT(TD_MESSAGE(td.index({at::tensor({0, 1}, at::kLong), at::tensor({0, 1, 2}, at::kLong)})),
               Contains("cannot be broadcast"));
}

TEST_CASE("index_put_ with a tensordict broadcasts it over the indexed batch") {
  auto td = sample({4, 3});
  TensorDict value({{"a", at::full({4}, 1.5)}, {"b", at::full({}, 7, at::kLong)}, {"nested", TensorDict({{"c", at::ones({2, 3})}}, {})}},
                   {});
  td.index_put_({Slice(1, 3)}, value);
  auto expected_a = iota({4, 3, 4});
  expected_a.index_put_({Slice(1, 3)}, 1.5);
  REQUIRE(at::equal(td.get("a"), expected_a));
  auto expected_b = iota({4, 3}, at::kLong) * 10;
  expected_b.index_put_({Slice(1, 3)}, 7);
  REQUIRE(at::equal(td.get("b"), expected_b));
  REQUIRE(td.get({"nested", "c"}).index({Slice(1, 3)}).eq(1).all().item<bool>());
  REQUIRE(td.get({"nested", "c"}).index({0}).ne(1).any().item<bool>());
}

TEST_CASE("index_put_ creates missing keys, zero outside the index") {
  TensorDict td({{"a", at::zeros({4})}}, {4});
  TensorDict value({{"a", at::ones({2})}, {"fresh", at::full({2, 3}, 2.0)}}, {2});
  auto m = mask({0, 1, 0, 1});
  td.index_put_({m}, value);
  REQUIRE(at::equal(td.get("a"), at::tensor({0.f, 1.f, 0.f, 1.f})));
  auto expected = at::zeros({4, 3});
  expected.index_put_({m}, 2.0);
  REQUIRE(at::equal(td.get("fresh"), expected));
}

TEST_CASE("index_put_ with a tensor or a scalar writes every leaf") {
  auto td = sample({4, 3});
  td.index_put_({at::tensor({3, 0}, at::kLong), 1}, 9);
  REQUIRE(td.get("a").index({3, 1}).eq(9).all().item<bool>());
  REQUIRE(td.get("b").index({0, 1}).item<int64_t>() == 9);
  REQUIRE(td.get({"nested", "c"}).index({0, 1}).eq(9).all().item<bool>());
  REQUIRE(td.get("b").index({1, 1}).item<int64_t>() == 40);

  TensorDict flat({{"x", at::zeros({3, 2})}, {"y", at::zeros({3, 2})}}, {3});
  flat.index_put_({Slice(0, 2)}, at::tensor({1.f, 2.f}));
  REQUIRE(at::equal(flat.get("y"), at::tensor({1.f, 2.f, 1.f, 2.f, 0.f, 0.f}).reshape({3, 2})));
}

TEST_CASE("index_put_ errors name the key and the shapes") {
  auto td = sample({4, 3});
  TensorDict wrong({{"a", at::ones({5, 4})}}, {5});
  REQUIRE_THAT(TD_MESSAGE(td.index_put_({Slice(0, 2)}, wrong)),
               Contains("index_put_") && Contains("[5]") && Contains("[2, 3]"));
  TensorDict bad_feature({{"a", at::ones({2, 3, 7})}}, {2, 3});
  REQUIRE_THAT(TD_MESSAGE(td.index_put_({Slice(0, 2)}, bad_feature)), Contains("index_put_ failed for key 'a'"));
  REQUIRE_THAT(TD_MESSAGE(td.index_put_({Slice(0, 2)}, at::ones({9}))), Contains("index_put_ failed for key 'a'"));
}

TEST_CASE("get_at and set_at_") {
  auto td = sample({4, 3});
  REQUIRE(at::equal(td.get_at("a", {Slice(), -1}), iota({4, 3, 4}).index({Slice(), -1})));
  REQUIRE(at::equal(td.get_at({"nested", "c"}, {2}), (iota({4, 3, 2, 3}) + 0.5).index({2})));
  td.set_at_("b", at::full({3}, -1, at::kLong), {0});
  REQUIRE(td.get("b").index({0}).eq(-1).all().item<bool>());
  REQUIRE(td.get("b").index({1}).ne(-1).all().item<bool>());
  REQUIRE_THAT(TD_MESSAGE(td.set_at_("b", at::ones({5}), {0})), Contains("set_at_ failed for key 'b'"));
  REQUIRE_THROWS_AS(td.get_at("zzz", {0}), KeyError);
}

// Found by fuzz_batch_index: a 0-dim integer tensor was taken as an advanced
// index, so with an empty companion index (a False) an out-of-range value
// was not refused, and the result dims differed from torch's.
TEST_CASE("a 0-dim integer tensor index acts as an int: bounds-checked, removes the dim") {
  TensorDict td({{"a", at::arange(6).reshape({2, 3})}}, {2, 3});
  auto one = td.index({at::scalar_tensor(1, at::kLong)});
  REQUIRE(one.batch_size() == std::vector<int64_t>{3});
  REQUIRE(at::equal(one.get("a"), at::arange(3, 6)));
  auto neg = td.index({Slice(), at::scalar_tensor(-1, at::kInt)});
  REQUIRE(at::equal(neg.get("a"), at::arange(6).reshape({2, 3}).select(1, 2)));
  REQUIRE_THROWS_AS(td.index({at::scalar_tensor(-5, at::kLong), false, false}), std::out_of_range);
  REQUIRE_THROWS_AS(td.index({at::scalar_tensor(2, at::kLong)}), std::out_of_range);
}

// Found by fuzz_h5: BatchIndex built its views directly from the steps
// resolved for the batch size; a leaf that does not start with that batch
// size got a view outside its storage. Now refused.
TEST_CASE("a batch index applied to a leaf that does not fit its batch size throws") {
  BatchIndex index({3}, {4});
  REQUIRE_THROWS_WITH(index.apply(at::zeros({0})), Contains("does not start with the batch size"));
  REQUIRE_THROWS_AS(index.apply(at::zeros({})), std::invalid_argument);
  BatchIndex slice({Slice(1, 4)}, {4});
  REQUIRE_THROWS_AS(slice.apply(at::zeros({2, 3})), std::invalid_argument);
  REQUIRE_THROWS_AS(slice.put(at::zeros({2}), at::ones({})), std::invalid_argument);
  REQUIRE(at::equal(slice.apply(at::arange(4)), at::arange(1, 4)));
}
