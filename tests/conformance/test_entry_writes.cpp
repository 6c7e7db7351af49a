// Ports of tensordict's tests of writes that name entries: update_at_ (an
// update at a batch index) and cat_tensors / stack_tensors (several entries
// combined into one), each run over every fixture kind where tensordict runs
// it. Expected values are plain libtorch on the fixture's leaves.
#include <functional>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "fixtures.h"

using namespace conformance;
using at::indexing::Slice;
using tensordict::Json;
using tensordict::LockGuard;
using tensordict::NestedKey;
using tensordict::NonTensorData;

namespace {

// The tensordict of tensordict's test_update_at_nested_time_slice: "a" and a
// nested "b"/"c", zeros over batch [4, 3].
TensorDict zeros_over_time() {
  return TensorDict({{"a", at::zeros({4, 3, 5})}, {"b", TensorDict({{"c", at::zeros({4, 3, 2})}}, {4, 3})}}, {4, 3});
}

// Its value at one time step: ones over batch [4].
TensorDict ones_at_one_step() {
  return TensorDict({{"a", at::ones({4, 5})}, {"b", TensorDict({{"c", at::ones({4, 2})}}, {4})}}, {4});
}

// Every tensor leaf of `td` at batch index `index` equals `value`.
bool all_equal_at(const TensorDict& td, int64_t step, double value) {
  bool all = true;
  for (const auto& [key, leaf] : snapshot(td)) all = all && (leaf.select(1, step) == value).all().item<bool>();
  return all;
}

}  // namespace

TEST_CASE("update_at_ writes a zeroed row into row 0 and leaves the others (test_methods.py::test_update_at_)",
          "[conformance][test_methods.py]") {
  for_each_fixture([](const std::string& name, TensorDict& td) {
    const auto before = snapshot(td);
    const TensorDict td0 = td.index({1}).clone().zero_();
    td.update_at_(td0, {0});
    for (const auto& [key, value] : before) {
      CAPTURE(key.repr());
      const at::Tensor now = td.get(key);
      CHECK((now.select(0, 0) == 0).all().item<bool>());
      CHECK(same_tensor(now.slice(0, 1).contiguous(), value.slice(0, 1).contiguous()));
    }
    if (name == "td_with_non_tensor") CHECK(td.get_non_tensor({"data", "non_tensor"}) == Json("some text data"));
  });
}

TEST_CASE("update_at_ of one time step of a nested tensordict, unlocked and locked "
          "(test_methods.py::test_update_at_nested_time_slice, test_update_at_nested_time_slice_locked)",
          "[conformance][test_methods.py]") {
  TensorDict td = zeros_over_time();
  td.update_at_(ones_at_one_step(), {Slice(), 1});
  CHECK(all_equal_at(td, 1, 1));
  CHECK(all_equal_at(td, 0, 0));
  CHECK(all_equal_at(td, 2, 0));

  TensorDict locked = zeros_over_time();
  locked.lock_();
  locked.update_at_(ones_at_one_step(), {Slice(), 2});
  CHECK(all_equal_at(locked, 2, 1));
  CHECK(all_equal_at(locked, 1, 0));
  CHECK(locked.is_locked());
}

TEST_CASE("update_at_ writes non-tensor data at the index (test_methods.py::test_update_at_nontensor_data)",
          "[conformance][test_methods.py]") {
  TensorDict td({{"val", NonTensorData(Json(0))}}, {10});
  const TensorDict newdata({{"val", NonTensorData(Json(1))}}, {5});
  td.update_at_(newdata, {Slice(1, at::indexing::None, 2)});
  CHECK(td.get_non_tensor("val") == Json::array({0, 1, 0, 1, 0, 1, 0, 1, 0, 1}));
}

TEST_CASE("update_at_ of non-tensor data, then memmap_, then update_at_ again (test_nontensor.py::test_shared_stack, "
          "memmap strategy)",
          "[conformance][test_nontensor.py]") {
  td_test::TempDir dir;
  TensorDict td({{"val", NonTensorData(Json(0))}}, {10});
  td.update_at_(TensorDict({{"val", NonTensorData(Json(1))}}, {5}), {Slice(1, at::indexing::None, 2)});
  td.memmap_((dir / "td").string());
  CHECK(td.get_non_tensor("val") == Json::array({0, 1, 0, 1, 0, 1, 0, 1, 0, 1}));
  td.update_at_(TensorDict({{"val", NonTensorData(Json(2))}}, {5}), {Slice(1, at::indexing::None, 2)});
  CHECK(td.get_non_tensor("val") == Json::array({0, 2, 0, 2, 0, 2, 0, 2, 0, 2}));
}

TEST_CASE("update_at_ with keys_to_update writes only those keys, an empty list nothing", "[conformance]") {
  TensorDict td = zeros_over_time();
  td.update_at_(ones_at_one_step(), {Slice(), 0}, std::vector<NestedKey>{{"b", "c"}});
  CHECK((td.get({"b", "c"}).select(1, 0) == 1).all().item<bool>());
  CHECK((td.get("a") == 0).all().item<bool>());
  td.update_at_(ones_at_one_step(), {Slice(), 1}, std::vector<NestedKey>{});
  CHECK((td.get("a") == 0).all().item<bool>());
  CHECK((td.get({"b", "c"}).select(1, 1) == 0).all().item<bool>());
}

TEST_CASE("update_at_ errors: a key the destination lacks, a value of the wrong shape", "[conformance][errors]") {
  TensorDict td = zeros_over_time();
  const TensorDict extra({{"z", at::ones({4})}}, {4});
  CHECK(CONF_MESSAGE(td.update_at_(extra, {Slice(), 0})).find("key 'z' not found") != std::string::npos);
  CHECK_THROWS_AS(td.update_at_(extra, {Slice(), 0}), tensordict::KeyError);
  const TensorDict wrong({{"a", at::ones({4, 7})}}, {4});
  CHECK(CONF_MESSAGE(td.update_at_(wrong, {Slice(), 0})).rfind("update_at_ failed for key 'a'", 0) == 0);
  const TensorDict tensor_for_text({{"a", NonTensorData(Json("x"))}}, {4});
  CHECK(CONF_MESSAGE(td.update_at_(tensor_for_text, {Slice(), 0})) == "key 'a' holds a tensor, not non-tensor data");
  CHECK((td.get("a") == 0).all().item<bool>());
}

namespace {

// tensordict's keep_entries parametrisation ([False, True, None]): `body`
// gets whether the entries are kept and a call of cat_tensors (or
// stack_tensors) of "a" and "a_bis" along -1 into "cat" ("stack") that
// passes the option, or leaves it to its default for None.
void for_each_keep_entries(bool cat,
                           const std::function<void(bool keep, const std::function<void(TensorDict&)>&)>& body) {
  for (const std::optional<bool> keep : {std::optional<bool>(false), std::optional<bool>(true), std::optional<bool>()}) {
    CAPTURE(keep.has_value(), keep.value_or(false));
    body(keep.value_or(false), [&](TensorDict& td) {
      const std::vector<NestedKey> keys{"a", "a_bis"};
      if (keep) {
        cat ? td.cat_tensors(keys, "cat", -1, {.keep_entries = *keep}) : td.stack_tensors(keys, "stack", -1, {.keep_entries = *keep});
      } else {
        cat ? td.cat_tensors(keys, "cat", -1) : td.stack_tensors(keys, "stack", -1);
      }
    });
  }
}

}  // namespace

TEST_CASE("cat_tensors concatenates two entries into a new one, keeping or deleting them "
          "(test_methods.py::test_cat_tensors)",
          "[conformance][test_methods.py]") {
  for_each_keep_entries(/*cat=*/true, [](bool keep, const auto& cat_tensors) {
    for_each_fixture([&](const std::string&, TensorDict& td) {
      LockGuard unlocked(td, LockGuard::Unlock);
      const at::Tensor a = td.pop("a").tensor();
      td.set("a", a.unsqueeze(-1));
      td.set("a_bis", td.get("a") + 1);
      const at::Tensor expected = at::cat({td.get("a"), td.get("a_bis")}, -1);
      cat_tensors(td);
      CHECK(same_tensor(td.get("cat"), expected));
      CHECK(td.contains("a") == keep);
      CHECK(td.contains("a_bis") == keep);
    });
  });
}

TEST_CASE("stack_tensors stacks two entries into a new one, keeping or deleting them "
          "(test_methods.py::test_stack_tensors)",
          "[conformance][test_methods.py]") {
  for_each_keep_entries(/*cat=*/false, [](bool keep, const auto& stack_tensors) {
    for_each_fixture([&](const std::string&, TensorDict& td) {
      LockGuard unlocked(td, LockGuard::Unlock);
      td.set("a_bis", td.get("a") + 1);
      const at::Tensor expected = at::stack({td.get("a"), td.get("a_bis")}, -1);
      stack_tensors(td);
      CHECK(same_tensor(td.get("stack"), expected));
      CHECK(td.contains("a") == keep);
    });
  });
}

TEST_CASE("cat_tensors and stack_tensors: the docstring examples, nested keys, and an out_key among the keys",
          "[conformance]") {
  TensorDict td({{"a", at::zeros({1})}, {"b", at::ones({1})}});
  td.cat_tensors({"a", "b"}, "c");
  CHECK_FALSE(td.contains("a"));
  CHECK(at::equal(td.get("c"), at::tensor({0.0F, 1.0F})));

  TensorDict scalars({{"a", at::zeros({})}, {"b", at::ones({})}});
  scalars.stack_tensors({"a", "b"}, "c");
  CHECK(at::equal(scalars.get("c"), at::tensor({0.0F, 1.0F})));

  TensorDict nested({{"x", TensorDict({{"a", at::zeros({2, 1})}}, {2})}, {"b", at::ones({2, 1})}}, {2});
  nested.cat_tensors({{"x", "a"}, "b"}, {"x", "ab"}, 1);
  CHECK(at::equal(nested.get({"x", "ab"}), at::tensor({0.0F, 1.0F, 0.0F, 1.0F}).view({2, 2})));
  CHECK_FALSE(nested.contains({"x", "a"}));
  CHECK_FALSE(nested.contains("b"));

  // The result replaces the entry it is named after; the other is deleted.
  TensorDict same({{"a", at::zeros({2})}, {"b", at::ones({2})}}, {2});
  same.stack_tensors({"a", "b"}, "a", 1);
  CHECK(at::equal(same.get("a"), at::tensor({0.0F, 1.0F, 0.0F, 1.0F}).view({2, 2})));
  CHECK(same.keys() == std::vector<NestedKey>{"a"});
}

TEST_CASE("cat_tensors and stack_tensors errors change nothing: shapes, batch size, lock, no keys",
          "[conformance][errors]") {
  TensorDict td({{"a", at::zeros({3, 2})}, {"b", at::ones({3, 4})}}, {3});
  const auto keys = td.keys();
  CHECK(CONF_MESSAGE(td.stack_tensors({"a", "b"}, "c")).rfind("stack_tensors of 'a', 'b': stack expects each tensor", 0) == 0);
  CHECK_THROWS_AS(td.stack_tensors({"a", "b"}, "c"), std::runtime_error);
  // Concatenated along dim 0 the result no longer starts with the batch size.
  CHECK(CONF_MESSAGE(td.cat_tensors({"a", "a"}, "c")).rfind("batch size mismatch for key 'c'", 0) == 0);
  CHECK(CONF_MESSAGE(td.cat_tensors({}, "c")) == "cat_tensors: no keys given");
  CHECK_THROWS_AS(td.cat_tensors({}, "c"), tensordict::ValueError);
  CHECK(CONF_MESSAGE(td.cat_tensors({"a", "z"}, "c")).find("key 'z' not found") != std::string::npos);
  td.lock_();
  CHECK(CONF_MESSAGE(td.cat_tensors({"a", "b"}, "c", 1)).rfind("Cannot modify locked TensorDict", 0) == 0);
  CHECK(td.keys() == keys);
  CHECK(at::equal(td.get("b"), at::ones({3, 4})));
}
