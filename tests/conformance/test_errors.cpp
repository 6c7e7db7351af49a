// Exception kinds follow tensordict's (errors.h: KeyError, IndexError,
// ValueError and TypeError are tensordict:: classes of those names,
// RuntimeError is std::runtime_error), each with the message a user reads.
#include "fixtures.h"

using namespace conformance;

namespace {
TensorDict sample() {
  return TensorDict({{"a", at::zeros({2, 3})}, {"n", TensorDict({{"b", at::zeros({2})}}, {2})}}, {2});
}
}  // namespace

TEST_CASE("a key path through a tensor is a ValueError (_td.py _get_tuple)", "[conformance]") {
  TensorDict td = sample();
  CHECK_THROWS_AS(td.get({"a", "b"}), tensordict::ValueError);
  CHECK(CONF_MESSAGE(td.get({"a", "b"})) == "key ('a', 'b') cannot be reached: 'a' is a tensor, not a tensordict");
  CHECK_THROWS_AS(td.set({"a", "b"}, at::zeros({2})), tensordict::ValueError);
  CHECK_FALSE(td.contains({"a", "b"}));
}

TEST_CASE("a failed in-place write is a ValueError (_td.py set_/update_)", "[conformance]") {
  TensorDict td = sample();
  CHECK_THROWS_AS(td.set_("a", at::zeros({2, 4})), tensordict::ValueError);
  CHECK(CONF_MESSAGE(td.set_("a", at::zeros({2, 4}))).rfind("set_ failed for key 'a': ", 0) == 0);
  CHECK_THROWS_AS(td.update_(TensorDict({{"a", at::zeros({2, 4})}}, {2})), tensordict::ValueError);
  CHECK(CONF_MESSAGE(td.update_(TensorDict({{"a", at::zeros({2, 4})}}, {2}))).rfind("update_ failed for key 'a': ", 0) == 0);
  CHECK(at::equal(td.get("a"), at::zeros({2, 3})));  // nothing written
}

TEST_CASE("permute and transpose with bad dims are ValueErrors (test_generic.py::test_permute_exceptions)",
          "[conformance][test_generic.py]") {
  const TensorDict td = sample();
  CHECK_THROWS_AS(td.permute({3}), tensordict::ValueError);
  CHECK(CONF_MESSAGE(td.permute({3})) == "permute: dim 3 is out of range for a tensordict with 1 batch dims (expected a dim in [-1, 0])");
  CHECK_THROWS_AS(td.transpose(0, 3), tensordict::ValueError);
  // The cases of test_permute_exceptions, on batch (4, 5, 6).
  const TensorDict td1({{"a", at::randn({4, 5, 6, 7})}, {"b", at::randn({4, 5, 6, 8, 9})}}, {4, 5, 6});
  for (const std::vector<int64_t>& dims : {std::vector<int64_t>{1, 1, 0}, {3, 2, 1, 0}, {2, -1, 0}, {2, 3, 0}, {2, -4, 0}, {2, 1}}) {
    INFO("dims " << at::IntArrayRef(dims));
    CHECK_THROWS_AS(td1.permute(dims), tensordict::ValueError);
  }
}

TEST_CASE("a key collision in flatten_keys is a KeyError (_td.py flatten_keys)", "[conformance]") {
  const TensorDict td({{"a.b", at::zeros({2})}, {"a", TensorDict({{"b", at::zeros({2})}}, {2})}}, {2});
  CHECK_THROWS_AS(td.flatten_keys(), tensordict::KeyError);
  CHECK(CONF_MESSAGE(td.flatten_keys()) == "flatten_keys: key ('a', 'b') flattens to 'a.b', which already exists");
}

TEST_CASE("a locked rename_key_ reports the lock first (test_methods.py::test_rename_key)", "[conformance][test_methods.py]") {
  TensorDict td({{"a", at::zeros({2})}}, {2});
  td.lock_();
  CHECK(CONF_MESSAGE(td.rename_key_("missing", "b")).rfind("Cannot modify locked TensorDict.", 0) == 0);
  CHECK(CONF_MESSAGE(td.rename_key_("a", "b")).rfind("Cannot modify locked TensorDict.", 0) == 0);
}
