// Ports of tensordict's tests of the functions that combine or split
// tensordicts: where with a pad, merge_tensordicts, split_keys in place
// (test_methods.py, test_generic.py, test_errors.py).
#include <tensordict/functional.h>

#include "fixtures.h"

using namespace conformance;
using tensordict::MissingKeys;
using tensordict::NestedKey;
using Catch::Contains;

TEST_CASE("where with a pad fills the keys one side lacks (test_methods.py::test_where_pad)", "[conformance][test_methods.py]") {
  for_each_fixture([](const std::string& name, TensorDict& td) {
    at::manual_seed(1);
    const at::Tensor mask = at::zeros(td.batch_size(), at::kBool).bernoulli_();
    const at::Tensor unmasked = mask.logical_not();
    // Each tensor leaf read where ~mask is 1 (the pad); elsewhere it is td's.
    auto check = [&](const TensorDict& result) {
      CHECK(result.batch_size() == td.batch_size());
      for (const auto& [key, value] : result.items({.include_nested = true, .leaves_only = true})) {
        if (!value.is_tensor()) continue;
        CAPTURE(key.repr());
        const at::Tensor& v = value.tensor();
        const at::Tensor source = td.get(key);
        CHECK(v.scalar_type() == source.scalar_type());
        CHECK((v.index({unmasked}) == 1).all().item<bool>());
        CHECK(v.index({mask}).equal(source.index({mask})));
      }
    };
    check(td.where(mask, td.empty(), MissingKeys::fill(1)));
    check(td.empty().where(unmasked, td, MissingKeys::fill(1)));
    // Without a pad, a key of one side only is a KeyError naming it.
    CHECK_THROWS_AS(td.where(mask, td.empty()), tensordict::KeyError);
    CHECK_THROWS_WITH(td.where(mask, td.empty()), Contains("where: key 'a' is in the first tensordict but not in the second") &&
                                                      Contains("MissingKeys::fill(value)"));
    CHECK_THROWS_WITH(td.empty().where(mask, td), Contains("where: key 'a' is in the second tensordict but not in the first"));
    (void)name;
  });
}

TEST_CASE("where's pad is cast to each leaf's dtype and reaches nested keys of one side only (test_methods.py::test_where_pad)",
          "[conformance][test_methods.py]") {
  TensorDict a({{"x", at::tensor({1, 2, 3})}, {"only_a", at::tensor({1, 1, 1})}}, {3});
  a.set({"n", "y"}, at::tensor({4, 4, 4}));
  TensorDict b({{"x", at::tensor({9, 9, 9})}, {"only_b", at::tensor({5, 5, 5})}}, {3});
  b.set({"n", "z"}, at::tensor({7, 7, 7}));
  const at::Tensor cond = at::tensor({1, 0, 1}).to(at::kBool);
  const TensorDict r = a.where(cond, b, MissingKeys::fill(-1.5));
  // tensordict's verified result: self's keys first, then the other's only.
  CHECK(r.keys({.include_nested = true, .leaves_only = true}) == std::vector<NestedKey>{"x", "only_a", {"n", "y"}, {"n", "z"}, "only_b"});
  CHECK(r.get("x").equal(at::tensor({1, 9, 3})));
  CHECK(r.get("only_a").equal(at::tensor({1, -1, 1})));  // -1.5 cast to int64 is -1
  CHECK(r.get({"n", "y"}).equal(at::tensor({4, -1, 4})));
  CHECK(r.get({"n", "z"}).equal(at::tensor({-1, 7, -1})));
  CHECK(r.get("only_b").equal(at::tensor({-1, 5, -1})));
}

TEST_CASE("merge_tensordicts: the first tensordict holding a key gives it, unless a callback combines every value "
          "(test_generic.py::test_merge_tensordicts)",
          "[conformance][test_generic.py]") {
  auto scalar = [](int64_t v) { return at::scalar_tensor(v, at::kLong); };
  auto make = [&](const std::string& b, const std::vector<std::string>& deep, int64_t v) {
    TensorDict td({{"common", scalar(v)}}, {});
    td.set({"a", b}, scalar(v));
    td.set(NestedKey(deep), scalar(v));
    return td;
  };
  const TensorDict td0 = make("b0", {"c", "d", "e"}, 0);
  const TensorDict td1 = make("b1", {"f", "g", "h"}, 1);
  const TensorDict td2 = make("b2", {"f", "g", "h"}, 2);
  const tensordict::MergeCallback stack_values = [](const std::vector<at::Tensor>& v) { return at::stack(v); };
  for (bool per_key : {false, true}) {
    CAPTURE(per_key);
    const TensorDict td = per_key ? tensordict::merge_tensordicts({td0, td1, td2}, std::map<NestedKey, tensordict::MergeCallback>{{"common", stack_values}})
                                  : tensordict::merge_tensordicts({td0, td1, td2}, stack_values);
    CHECK(td.get({"a", "b0"}).item<int64_t>() == 0);
    CHECK(td.get({"a", "b1"}).item<int64_t>() == 1);
    CHECK(td.get({"a", "b2"}).item<int64_t>() == 2);
    CHECK(td.get("common").equal(at::arange(3)));
    CHECK(td.get({"c", "d", "e"}).item<int64_t>() == 0);
    CHECK(td.get({"f", "g", "h"}).item<int64_t>() == 1);
  }
  // A key absent from one tensordict is not given to the callback.
  const TensorDict td = tensordict::merge_tensordicts({td0, td1, td2}, stack_values);
  CHECK(td.get({"f", "g", "h"}).dim() == 0);
  // Without a callback, the first value wins.
  CHECK(tensordict::merge_tensordicts({td0, td1, td2}).get("common").item<int64_t>() == 0);
  CHECK(CONF_MESSAGE(tensordict::merge_tensordicts({td0})) == "merge_tensordicts: at least 2 tensordicts must be provided, got 1");
}

TEST_CASE("split_keys in place: the keys taken leave the tensordict (test_methods.py::test_split_keys)",
          "[conformance][test_methods.py]") {
  for (const char* name : {"td", "nested_td", "memmap_td", "td_with_non_tensor"}) {
    CAPTURE(name);
    Fixture f = make_fixture(name);
    TensorDict& td = f.td;
    const at::Tensor a = td.get("a");
    const at::Tensor b = td.get("b");
    if (td.is_locked()) {
      CHECK_THROWS_WITH(td.split_keys_({{"a"}, {"b"}}), Contains("Cannot modify locked TensorDict"));
      CHECK(td.contains("a"));  // nothing moved
      td.unlock_();
    }
    // strict: a missing key is a KeyError and nothing moves.
    CHECK_THROWS_AS(td.split_keys_({{"a"}, {"nope"}}), tensordict::KeyError);
    CHECK(td.contains("a"));
    const auto parts = td.split_keys_({{"a"}, {"b"}});
    REQUIRE(parts.size() == 2);
    CHECK(parts[0].keys() == std::vector<NestedKey>{"a"});
    CHECK(parts[1].keys() == std::vector<NestedKey>{"b"});
    CHECK(same_tensor(parts[0].get("a"), a));
    CHECK(same_tensor(parts[1].get("b"), b));
    CHECK_FALSE(td.contains("a"));
    CHECK_FALSE(td.contains("b"));
    CHECK(td.contains("c"));
    // strict=false skips missing keys.
    const auto loose = td.split_keys_({{"c", "nope"}}, {.strict = false});
    CHECK(loose[0].keys() == std::vector<NestedKey>{"c"});
    CHECK_FALSE(td.contains("c"));
  }
}

TEST_CASE("split_keys (not in place) leaves the source whole (test_generic.py::test_split_keys)", "[conformance][test_generic.py]") {
  Fixture f = make_fixture("nested_td");
  const auto parts = f.td.split_keys({{"a"}, {{"my_nested_td", "inner"}}});
  REQUIRE(parts.size() == 3);
  CHECK(parts[0].keys() == std::vector<NestedKey>{"a"});
  CHECK(parts[1].keys({.include_nested = true, .leaves_only = true}) == std::vector<NestedKey>{{"my_nested_td", "inner"}});
  CHECK(parts[2].contains("b"));
  CHECK_FALSE(parts[2].contains("a"));
  CHECK(f.td.contains("a"));
  CHECK(f.td.contains({"my_nested_td", "inner"}));
}

TEST_CASE("stack and cat with out write into out's tensors (test_generic.py::test_cat_td, test_methods.py::test_stack_onto)",
          "[conformance][test_generic.py]") {
  TensorDict td1({{"a", at::randn({4, 5})}, {"b", TensorDict({{"c", at::randn({4, 2})}}, {4})}}, {4});
  TensorDict td2({{"a", at::randn({4, 5})}, {"b", TensorDict({{"c", at::randn({4, 2})}}, {4})}}, {4});
  // cat: out's storage is kept and filled.
  TensorDict cat_target({{"a", at::zeros({8, 5})}, {"b", TensorDict({{"c", at::zeros({8, 2})}}, {8})}}, {8});
  const auto ptr_a = cat_target.get("a").data_ptr();
  const auto ptr_c = cat_target.get({"b", "c"}).data_ptr();
  cat_target.lock_();  // in place: a locked out is fine, as in tensordict
  TensorDict& returned = tensordict::cat_out(cat_target, {td1, td2}, 0);
  CHECK(returned.impl() == cat_target.impl());
  CHECK(cat_target.get("a").data_ptr() == ptr_a);
  CHECK(cat_target.get({"b", "c"}).data_ptr() == ptr_c);
  CHECK(cat_target.get("a").equal(at::cat({td1.get("a"), td2.get("a")})));
  CHECK(cat_target.get({"b", "c"}).equal(at::cat({td1.get({"b", "c"}), td2.get({"b", "c"})})));
  // stack into a dim-1 stack, including into a lazy stack's members.
  TensorDict stack_target({{"a", at::zeros({4, 2, 5})}, {"b", TensorDict({{"c", at::zeros({4, 2, 2})}}, {4, 2})}}, {4, 2});
  tensordict::stack_out(stack_target, {td1, td2}, 1);
  CHECK(stack_target.get("a").equal(at::stack({td1.get("a"), td2.get("a")}, 1)));
  CHECK(stack_target.get({"b", "c"}).equal(at::stack({td1.get({"b", "c"}), td2.get({"b", "c"})}, 1)));
  TensorDict m0 = td1.clone();
  TensorDict m1 = td1.clone();
  m0.zero_();
  m1.zero_();
  tensordict::LazyStackedTensorDict lazy_target = tensordict::lazy_stack({m0, m1}, 0);
  tensordict::stack_out(lazy_target, {td1, td2}, 0);
  CHECK(m0.get("a").equal(td1.get("a")));
  CHECK(m1.get({"b", "c"}).equal(td2.get({"b", "c"})));
  // Errors: the batch size (tensordict's message) and a key out lacks.
  TensorDict wrong({{"a", at::zeros({3, 2, 5})}}, {3, 2});
  CHECK(CONF_MESSAGE(tensordict::stack_out(wrong, {td1, td2}, 1)) ==
        "stack: out.batch_size and stacked batch size must match, got out.batch_size=[3, 2] and batch_size=[4, 2]");
  CHECK(CONF_MESSAGE(tensordict::cat_out(wrong, {td1, td2}, 0)) ==
        "cat: out.batch_size and cat batch size must match, got out.batch_size=[3, 2] and batch_size=[8]");
  TensorDict lacking({{"a", at::zeros({8, 5})}}, {8});
  CHECK_THROWS_AS(tensordict::cat_out(lacking, {td1, td2}, 0), tensordict::KeyError);
}
