// Ports of tensordict's TestGeneric tests (test_generic.py) on hand-built
// tensordicts: nested get/set, split, unbind, masks, permute, indexing,
// sub-tensordict writes, filling an empty tensordict, state dicts.
#include <tensordict/state_dict.h>
#include <nlohmann/json.hpp>

#include <set>
#include <string>
#include <vector>

#include "fixtures.h"

using namespace conformance;
using at::indexing::None;
using at::indexing::Slice;
using tensordict::NestedKey;
using tensordict::NonTensorData;

namespace {

bool same_td(const TensorDict& a, const TensorDict& b) { return a.impl() == b.impl(); }

}  // namespace

TEST_CASE("clone of an empty tensordict (test_generic.py::test_clone_empty)", "[conformance][test_generic.py]") {
  for (bool recurse : {true, false}) {
    CHECK(TensorDict().clone({.recurse = recurse}).is_empty());
    CHECK(TensorDict({}, {}, at::Device(at::kCPU)).clone({.recurse = recurse}).device() == at::Device(at::kCPU));
    CHECK(TensorDict({}, {2}).clone({.recurse = recurse}).batch_size() == at::IntArrayRef({2}));
    CHECK(TensorDict({}, {2}, at::Device(at::kCPU)).clone({.recurse = recurse}).batch_size() == at::IntArrayRef({2}));
  }
}

TEST_CASE("expand of singleton batch dims (test_generic.py::test_expand_with_singleton)",
          "[conformance][test_generic.py]") {
  const TensorDict td({{"key1", at::randn({1, 5, 6})}, {"key2", at::randn({1, 5, 10})}}, {1, 5});
  const TensorDict expanded = td.expand({3, 7, 4, 5});
  CHECK(expanded.batch_size() == at::IntArrayRef({3, 7, 4, 5}));
  CHECK(expanded.get("key1").sizes() == at::IntArrayRef({3, 7, 4, 5, 6}));
  CHECK(expanded.get("key2").sizes() == at::IntArrayRef({3, 7, 4, 5, 10}));
}

TEST_CASE(
    "nested tensordicts set by key and by path are the objects given (test_generic.py::test_getitem_nested, "
    "test_setitem_nested, test_set_nested_keys)",
    "[conformance][test_generic.py]") {
  const at::Tensor tensor = at::randn({4, 5, 6, 7});
  TensorDict sub_sub({{"c", tensor}}, {4, 5, 6});
  TensorDict sub_sub2({{"c", at::ones({4, 5, 6, 7})}}, {4, 5, 6});
  TensorDict sub({}, {4, 5});
  TensorDict td({}, {4});
  sub.set("b", sub_sub);
  td.set("a", sub);
  CHECK((td.get_td("a") == sub).all());
  CHECK((td.get_td({"a", "b"}) == sub_sub).all());
  CHECK(same_tensor(td.get({"a", "b", "c"}), tensor));
  CHECK(same_td(td.get_td({"a", "b"}), sub_sub));
  CHECK(td.batch_size() == at::IntArrayRef({4}));
  CHECK(sub.batch_size() == at::IntArrayRef({4, 5}));
  CHECK(sub_sub.batch_size() == at::IntArrayRef({4, 5, 6}));
  td.set({"a", "b"}, sub_sub2);
  CHECK(same_td(td.get_td({"a", "b"}), sub_sub2));
  CHECK((td.get({"a", "b", "c"}) == 1).all().item<bool>());
}

TEST_CASE("is_empty looks through empty nested tensordicts (test_generic.py::test_is_empty)",
          "[conformance][test_generic.py]") {
  TensorDict empty({}, {});
  empty.create_nested({"a", "b"});
  CHECK(empty.is_empty());
  TensorDict with_string = empty.clone();
  with_string.set({"a", "c"}, NonTensorData(tensordict::Json("a string!")));
  CHECK_FALSE(with_string.is_empty());
  TensorDict with_number = empty.clone();
  with_number.set({"a", "c"}, at::scalar_tensor(1));
  CHECK_FALSE(with_number.is_empty());
}

TEST_CASE("a tensordict built without a batch size has batch [] (test_generic.py::test_no_batch_size)",
          "[conformance][test_generic.py]") {
  CHECK(TensorDict({{"a", at::zeros({3, 4})}}).batch_size().empty());
}

TEST_CASE("select with strict=false keeps the nested keys that exist (test_generic.py::test_select_nested_missing)",
          "[conformance][test_generic.py]") {
  TensorDict td({}, {});
  td.set({"a", "b"}, at::tensor(std::vector<int64_t>{1}));
  td.set({"a", "c"}, at::tensor(std::vector<int64_t>{2}));
  const TensorDict selected = td.select({NestedKey({"a", "b"}), "r", NestedKey({"a", "z"})}, /*strict=*/{.strict = false});
  const auto keys = selected.keys({.include_nested = true, .leaves_only = true});
  CHECK(std::find(keys.begin(), keys.end(), NestedKey({"a", "b"})) != keys.end());
  CHECK(keys.size() == 1);
}

TEST_CASE("a new key set through a sub-tensordict lands in the source, zero elsewhere (test_generic.py::test_set_sub_key)",
          "[conformance][test_generic.py]") {
  for (bool index0 : {false, true}) {
    INFO("index0 " << (index0 ? "slice(None)" : "None"));
    TensorDict td({{"a", at::randn({10, 10, 10})}, {"b", at::ones({10, 10, 2})}}, {10, 10});
    const std::vector<tensordict::TensorIndex> idx0 =
        index0 ? std::vector<tensordict::TensorIndex>{Slice(), 0} : std::vector<tensordict::TensorIndex>{0};
    const std::vector<tensordict::TensorIndex> idx =
        index0 ? std::vector<tensordict::TensorIndex>{Slice(), Slice(2, 4)}
               : std::vector<tensordict::TensorIndex>{Slice(2, 4)};
    TensorDict td0 = td.get_sub_tensordict(idx0);
    TensorDict sub = td.get_sub_tensordict(idx);
    const at::Tensor c = index0 ? at::randn({10, 2, 10}) : at::randn({2, 10, 10});
    sub.set("c", c);
    CHECK(same_tensor(td.get("c").index(idx), sub.get("c")));
    CHECK(same_tensor(sub.get("c"), c));
    CHECK((td.get("c").index(idx0) == 0).all().item<bool>());
    CHECK((td.get_sub_tensordict(idx0).get("c") == 0).all().item<bool>());
    CHECK((td0.get("c") == 0).all().item<bool>());
  }
}

TEST_CASE(
    "split into uneven pieces, of an empty tensordict and along a negative dim (test_generic.py::test_split_uneven, "
    "test_split_with_empty_tensordict, test_split_with_negative_dim)",
    "[conformance][test_generic.py]") {
  const TensorDict td({{"a", at::arange(6).unsqueeze(-1).expand({6, 3})},
                       {"b", at::arange(18).view({6, 3})},
                       {"c", at::arange(36).view({6, 3, 2})}},
                      {6, 3});
  for (int64_t dim : {0, -2}) {
    const auto pieces = td.split(5, dim);
    REQUIRE(pieces.size() == 2);
    CHECK(pieces[0].batch_size() == at::IntArrayRef({5, 3}));
    CHECK(pieces[1].batch_size() == at::IntArrayRef({1, 3}));
    CHECK(pieces[0].get("c").sizes() == at::IntArrayRef({5, 3, 2}));
    CHECK(pieces[1].get("c").sizes() == at::IntArrayRef({1, 3, 2}));
  }
  for (int64_t dim : {1, -1}) {
    const auto pieces = td.split(2, dim);
    REQUIRE(pieces.size() == 2);
    CHECK(pieces[0].batch_size() == at::IntArrayRef({6, 2}));
    CHECK(pieces[1].batch_size() == at::IntArrayRef({6, 1}));
    CHECK(pieces[0].get("a").sizes() == at::IntArrayRef({6, 2}));
    CHECK(pieces[1].get("c").sizes() == at::IntArrayRef({6, 1, 2}));
  }

  const TensorDict empty({}, {10});
  auto pieces = empty.split(4, 0);
  REQUIRE(pieces.size() == 3);
  CHECK(pieces[2].batch_size() == at::IntArrayRef({2}));
  pieces = empty.split(std::vector<int64_t>{1, 9}, 0);
  REQUIRE(pieces.size() == 2);
  CHECK(pieces[1].batch_size() == at::IntArrayRef({9}));
  const TensorDict empty3({}, {10, 10, 3});
  pieces = empty3.split(4, 1);
  REQUIRE(pieces.size() == 3);
  CHECK(pieces[2].batch_size() == at::IntArrayRef({10, 2, 3}));
  pieces = empty3.split(std::vector<int64_t>{1, 9}, 1);
  CHECK(pieces[0].batch_size() == at::IntArrayRef({10, 1, 3}));

  const TensorDict neg({{"a", at::zeros({5, 4, 2, 1})}, {"b", at::zeros({5, 4, 1})}}, {5, 4});
  pieces = neg.split(std::vector<int64_t>{1, 3}, -1);
  REQUIRE(pieces.size() == 2);
  CHECK(pieces[0].get("a").sizes() == at::IntArrayRef({5, 1, 2, 1}));
  CHECK(pieces[1].get("b").sizes() == at::IntArrayRef({5, 3, 1}));
}

TEST_CASE("unbind gives each slice its batch size, nested ones too (test_generic.py::test_unbind_batchsize, test_unbind_td)",
          "[conformance][test_generic.py]") {
  const TensorDict td({{"a", TensorDict({{"b", at::zeros({2, 3})}}, {2, 3})}}, {2});
  const auto slices = td.unbind(0);
  CHECK(slices[0].batch_size().empty());
  CHECK(slices[0].get_td("a").batch_size() == at::IntArrayRef({3}));

  const TensorDict two({{"key1", at::randn({4, 5, 6})}, {"key2", at::randn({4, 5, 10})}}, {4, 5});
  CHECK(two.unbind(1)[0].batch_size() == two.index({Slice(), 0}).batch_size());
}

TEST_CASE("masked_select flattens the masked batch dims (test_generic.py::test_mask_td)", "[conformance][test_generic.py]") {
  at::manual_seed(1);
  const TensorDict td({{"key1", at::randn({4, 5, 6})}, {"key2", at::randn({4, 5, 10})}}, {4, 5});
  const at::Tensor mask = at::zeros({4, 5}, at::kBool).bernoulli_();
  const TensorDict masked = td.masked_select(mask);
  CHECK(masked.get("key1").size(0) == masked.batch_size()[0]);
  CHECK(masked.batch_size()[0] == mask.sum().item<int64_t>());
}

TEST_CASE("permute with positive and negative dims (test_generic.py::test_permute)", "[conformance][test_generic.py]") {
  const TensorDict td(
      {{"a", at::randn({4, 5, 6, 9})}, {"b", at::randn({4, 5, 6, 7})}, {"c", at::randn({4, 5, 6})}}, {4, 5, 6});
  TensorDict p = td.permute({2, 1, 0});
  CHECK(p.batch_size() == at::IntArrayRef({6, 5, 4}));
  CHECK(p.get("a").sizes() == at::IntArrayRef({6, 5, 4, 9}));
  p = td.permute({-1, -3, -2});
  CHECK(p.batch_size() == at::IntArrayRef({6, 4, 5}));
  CHECK(p.get("c").sizes() == at::IntArrayRef({6, 4, 5}));
  CHECK(td.permute({0, 1, 2}).get("a").sizes() == at::IntArrayRef({4, 5, 6, 9}));
}

TEST_CASE("indexing, stacking the slices back, and set_ through an index (test_generic.py::test_tensordict_indexing)",
          "[conformance][test_generic.py]") {
  TensorDict td({}, {4, 5});
  td.set("key1", at::randn({4, 5, 1}));
  td.set("key2", at::randn({4, 5, 6}, at::kDouble));
  CHECK(td.index({2, 2}).batch_size().empty());
  CHECK(td.index({2, Slice(None, 2)}).batch_size() == at::IntArrayRef({2}));
  CHECK(td.index({None, Slice(None, 2)}).batch_size() == at::IntArrayRef({1, 2, 5}));
  CHECK((tensordict::stack(td.unbind(0), 0) == td).all());
  std::vector<TensorDict> rows;
  for (const auto& row : td.unbind(0)) rows.push_back(tensordict::stack(row.unbind(0), 0));
  CHECK((tensordict::stack(rows, 0) == td).all());

  TensorDict zeros({{"key1", at::zeros({3, 4, 5})}}, {3, 4});
  const at::Tensor x = at::randn({4, 5});
  zeros.index({0}).set_("key1", x);
  CHECK(same_tensor(zeros.get("key1")[0], x));
  const at::Tensor y = at::randn({3, 5});
  zeros.index({Slice(), 0}).set_("key1", y);
  CHECK(same_tensor(zeros.get("key1").index({Slice(), 0}), y));
}

TEST_CASE("an empty tensordict filled slice by slice, by indexed writes or sub-tensordict updates "
          "(test_generic.py::test_filling_empty_tensordict)",
          "[conformance][test_generic.py]") {
  for (bool update : {false, true}) {
    for (bool lazy : {false, true}) {
      INFO((update ? "update" : "index_put_") << (lazy ? " of a lazy stack" : " of a tensordict"));
      TensorDict td = TensorDict({}, {16});
      if (lazy) {
        std::vector<TensorDict> members(16, TensorDict({}, {}));
        for (auto& m : members) m = TensorDict({}, {});
        td = tensordict::lazy_stack(members, 0);
      }
      TensorDict other({}, {});
      for (int64_t i = 0; i < 16; ++i) {
        other = TensorDict({{"a", at::randn({10})}, {"b", at::ones({1})}}, {});
        if (update) {
          td.get_sub_tensordict({i}).update(other);
        } else {
          td.index_put_({i}, other);
        }
      }
      CHECK(td.get("a").sizes() == at::IntArrayRef({16, 10}));
      CHECK((td.get("b") == 1).all().item<bool>());
      if (lazy) CHECK((td.index({-1}) == other).all());
    }
  }
}

TEST_CASE("state_dict round trips, flat and nested, load_state_dict of a part (test_generic.py::"
          "test_state_dict_flat_roundtrip, test_state_dict_nested_roundtrip, test_load_state_dict_incomplete)",
          "[conformance][test_generic.py]") {
  TensorDict td({{"a", at::scalar_tensor(1)}}, {});
  td.set({"b", "c"}, at::scalar_tensor(2));
  td.set({"b", "d", "e"}, at::scalar_tensor(3));
  const auto flat = td.state_dict({.flatten = true});
  std::set<std::string> keys;
  for (const auto& entry : flat) keys.insert(entry.key());
  // The batch size and device are entries here, not a _metadata attribute
  // (docs/differences.md).
  CHECK(keys == std::set<std::string>{"a", "b.c", "b.d.e", "__batch_size", "__device"});
  for (bool flatten : {true, false}) {
    TensorDict zero = td.clone();
    zero.zero_();
    zero.load_state_dict(td.state_dict({.keep_vars = false, .flatten = flatten}), {.strict = true, .assign = false, .from_flatten = flatten});
    CHECK((zero == td).all());
  }
  const auto nested = td.state_dict({.flatten = false});
  keys.clear();
  for (const auto& entry : nested) keys.insert(entry.key());
  CHECK(keys == std::set<std::string>{"a", "b", "__batch_size", "__device"});

  TensorDict data({{"d", at::scalar_tensor(1)}}, {});
  data.create_nested({"a", "b", "c"});
  data.load_state_dict(TensorDict({{"d", at::scalar_tensor(0)}}, {}).state_dict(), /*strict=*/{.strict = true});
  CHECK(data.get("d").item<double>() == 0);
  TensorDict source({{"d", at::scalar_tensor(1)}}, {});
  source.create_nested({"a", "b", "c"});
  TensorDict small({{"d", at::scalar_tensor(0)}}, {});
  small.load_state_dict(source.state_dict(), {.strict = true});
  CHECK(small.get("d").item<double>() == 1);
}

TEST_CASE("consolidate of a leaf that requires grad gives a value that does not (test_generic.py::TestGeneric::test_consolidate_non_contiguous_requires_grad)",
          "[conformance][test_generic.py][ports:test_generic.py::TestGeneric::test_consolidate_non_contiguous_requires_grad]") {
  const at::Tensor base = at::arange(24, at::kFloat).requires_grad_();
  const at::Tensor transposed = base.reshape({2, 3, 4}).transpose(0, 1);
  const TensorDict td({{"value", transposed}}, {});
  const TensorDict consolidated = td.consolidate();
  const at::Tensor actual = consolidated.get("value");
  CHECK(at::equal(actual, transposed));
  CHECK_FALSE(actual.requires_grad());
  CHECK(consolidated.is_consolidated());
  CHECK_FALSE(consolidated.consolidated_storage()->requires_grad());
  // The source keeps its graph.
  transposed.sum().backward();
  CHECK(at::equal(base.grad(), at::ones_like(base)));
  // A leaf requiring grad itself, next to one that does not (tensordict
  // 0.15.3: neither consolidated value requires grad).
  const at::Tensor x = at::randn({3, 4}).requires_grad_();
  TensorDict mixed({{"a", x}}, {3});
  mixed.set({"b", "c"}, at::ones({3, 2}));
  const TensorDict c = mixed.consolidate();
  CHECK_FALSE(c.get("a").requires_grad());
  CHECK_FALSE(c.get({"b", "c"}).requires_grad());
  CHECK(at::equal(c.get("a"), x));
}
