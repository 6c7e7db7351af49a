// Exception kinds follow tensordict's (errors.h: KeyError, IndexError,
// ValueError and TypeError are tensordict:: classes of those names,
// RuntimeError is std::runtime_error), each with the message a user reads.
#include "fixtures.h"

using namespace conformance;

namespace {
// Whether fn() throws an E (the kinds are checked by what they are not, too).
template <class E, class Fn>
bool throws_as(Fn&& fn) {
  try {
    fn();
  } catch (const E&) {
    return true;
  } catch (...) {
  }
  return false;
}

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
  CHECK(
      CONF_MESSAGE(td.update_(TensorDict({{"a", at::zeros({2, 4})}}, {2}))).rfind("update_ failed for key 'a': ", 0) ==
      0);
  CHECK(at::equal(td.get("a"), at::zeros({2, 3})));  // nothing written
}

TEST_CASE("permute and transpose with bad dims are ValueErrors (test_generic.py::test_permute_exceptions)",
          "[conformance][test_generic.py]") {
  const TensorDict td = sample();
  CHECK_THROWS_AS(td.permute({3}), tensordict::ValueError);
  CHECK(CONF_MESSAGE(td.permute({3})) ==
        "permute: dim 3 is out of range for a tensordict with 1 batch dims (expected a dim in [-1, 0])");
  CHECK_THROWS_AS(td.transpose(0, 3), tensordict::ValueError);
  // The cases of test_permute_exceptions, on batch (4, 5, 6).
  const TensorDict td1({{"a", at::randn({4, 5, 6, 7})}, {"b", at::randn({4, 5, 6, 8, 9})}}, {4, 5, 6});
  for (const std::vector<int64_t>& dims :
       {std::vector<int64_t>{1, 1, 0}, {3, 2, 1, 0}, {2, -1, 0}, {2, 3, 0}, {2, -4, 0}, {2, 1}}) {
    INFO("dims " << at::IntArrayRef(dims));
    CHECK_THROWS_AS(td1.permute(dims), tensordict::ValueError);
  }
}

TEST_CASE("a key collision in flatten_keys is a KeyError (_td.py flatten_keys)", "[conformance]") {
  const TensorDict td({{"a.b", at::zeros({2})}, {"a", TensorDict({{"b", at::zeros({2})}}, {2})}}, {2});
  CHECK_THROWS_AS(td.flatten_keys(), tensordict::KeyError);
  CHECK(CONF_MESSAGE(td.flatten_keys()) == "flatten_keys: key ('a', 'b') flattens to 'a.b', which already exists");
}

TEST_CASE("a locked rename_key_ reports the lock first (test_methods.py::test_rename_key)",
          "[conformance][test_methods.py]") {
  TensorDict td({{"a", at::zeros({2})}}, {2});
  td.lock_();
  CHECK(CONF_MESSAGE(td.rename_key_("missing", "b")).rfind("Cannot modify locked TensorDict.", 0) == 0);
  CHECK(CONF_MESSAGE(td.rename_key_("a", "b")).rfind("Cannot modify locked TensorDict.", 0) == 0);
}

TEST_CASE(
    "an unflattened key that would override an entry is a KeyError "
    "(test_generic.py::test_flatten_unflatten_key_collision)",
    "[conformance][test_generic.py]") {
  const auto z = [] { return at::zeros({3}); };
  const std::vector<TensorDict> collide{
      TensorDict({{"a.b.c", z()}, {"a", TensorDict({{"b", TensorDict({{"c", z()}}, {})}}, {})}}, {}),
      TensorDict({{"a.b", z()}, {"a", TensorDict({{"b", z()}}, {})}, {"g", TensorDict({{"d", z()}}, {})}}, {}),
      TensorDict({{"a.b.c", z()}, {"a", TensorDict({{"b", TensorDict({{"c", z()}, {"d", z()}}, {})}}, {})}}, {}),
      TensorDict({{"a.b.c.d", z()}, {"a", TensorDict({{"b", TensorDict({{"c", z()}}, {})}}, {})}}, {}),
      TensorDict({{"a.b", z()}, {"a", TensorDict({{"b", TensorDict({{"c", z()}}, {})}}, {})}}, {})};
  for (std::size_t i = 0; i < collide.size(); ++i) {
    INFO("td" << i + 1);
    CHECK_THROWS_AS(collide[i].unflatten_keys(), tensordict::KeyError);
    CHECK_THAT(CONF_MESSAGE(collide[i].unflatten_keys()),
               Catch::Contains("Unflattening key(s) in tensordict will override an existing for unflattened key"));
    TensorDict copy(collide[i].clone());
    CHECK_THROWS_AS(copy.unflatten_keys_(), tensordict::KeyError);
  }
  // td4 and td5 flatten without a collision.
  CHECK(collide[3].flatten_keys().contains("a.b.c.d"));
  CHECK(collide[3].flatten_keys().contains("a.b.c"));
  CHECK(collide[4].flatten_keys().contains("a.b"));
  CHECK(collide[4].flatten_keys().contains("a.b.c"));
}

TEST_CASE("pad with a bad pad size is a RuntimeError (test_methods.py::test_pad, test_generic.py::test_pad)",
          "[conformance][test_methods.py][test_generic.py]") {
  const TensorDict td({{"a", at::zeros({4, 3, 2})}}, {4, 3});
  CHECK_THROWS_AS(tensordict::pad(td, std::vector<int64_t>(100, 0)), std::runtime_error);
  CHECK_THROWS_AS(tensordict::pad(td, {0}), std::runtime_error);
  CHECK(CONF_MESSAGE(tensordict::pad(td, {0})) ==
        "pad: pad_size [0] must have an even length of at most 2 * 2 (the batch dims)");
  CHECK_THROWS_AS(tensordict::pad(td, {-10, 0}), std::runtime_error);
  CHECK(CONF_MESSAGE(tensordict::pad(td, {-10, 0})) == "pad: padding [-10, 0] crops batch dim 0 below zero");
}

TEST_CASE("an index with two ellipses is a RuntimeError (test_generic.py::test_getitem_range, ellipsis_index)",
          "[conformance][test_generic.py]") {
  const TensorDict td({{"a", at::zeros({4, 3, 2, 1})}}, {4, 3, 2, 1});
  using at::indexing::Ellipsis;
  CHECK_THROWS_AS(td.index({Ellipsis, 0, Ellipsis}), std::runtime_error);
  CHECK(CONF_MESSAGE(td.index({0, Ellipsis, 0, Ellipsis})) == "an index can only have a single ellipsis (got 2)");
  // Not an IndexError or a ValueError: tensordict's RuntimeError.
  CHECK_FALSE(throws_as<std::invalid_argument>([&] { (void)td.index({Ellipsis, 0, Ellipsis}); }));
  CHECK_FALSE(throws_as<std::out_of_range>([&] { (void)td.index({Ellipsis, 0, Ellipsis}); }));
}

TEST_CASE(
    "split sizes that do not sum to the dim are a RuntimeError, a dim out of range an IndexError "
    "(test_generic.py::test_split_with_invalid_arguments)",
    "[conformance][test_generic.py]") {
  const TensorDict td({{"a", at::zeros({3, 2})}}, {3, 2});
  CHECK_THROWS_AS(td.split(std::vector<int64_t>{}, 0), std::runtime_error);
  CHECK_THROWS_AS(td.split(std::vector<int64_t>{1, 1}, 0), std::runtime_error);
  CHECK(CONF_MESSAGE(td.split(std::vector<int64_t>{1, 1}, 0)) ==
        "split: sizes [1, 1] sum to 2 but batch dim 0 has size 3");
  CHECK_THROWS_AS(td.split(1, 2), tensordict::IndexError);
  CHECK_THROWS_AS(td.split(1, -3), tensordict::IndexError);
}

TEST_CASE("a strict load_state_dict with other keys is a RuntimeError (test_methods.py::test_state_dict_strict)",
          "[conformance][test_methods.py]") {
  for (const auto& name : fixture_names()) {
    INFO(name);
    Fixture f = make_fixture(name);
    auto sd = f.td.state_dict();
    CHECK(sd.erase("a") == 1);
    TensorDict zero = f.td.clone().zero_();
    CHECK_NOTHROW(zero.load_state_dict(sd, {.strict = false}));
    CHECK_THROWS_AS(zero.load_state_dict(sd, {.strict = true}), std::runtime_error);
    CHECK_FALSE(throws_as<std::out_of_range>([&] { zero.load_state_dict(sd, {.strict = true}); }));  // not a KeyError
  }
}

TEST_CASE("refine_names against an existing name is a RuntimeError (test_nameddims.py::test_refine_names)",
          "[conformance][test_nameddims.py]") {
  TensorDict td({}, {3, 4, 5, 6});
  td.refine_names({std::nullopt, std::nullopt, "c", "d"});
  CHECK_THROWS_AS(td.refine_names({std::nullopt, std::nullopt, "d", "d"}), std::runtime_error);
  CHECK(CONF_MESSAGE(td.refine_names({std::nullopt, std::nullopt, "d", "d"})) ==
        "refine_names: dim 2 is named 'c' and cannot be refined to 'd'");
}

TEST_CASE("appending a member of another batch size or device is a ValueError (test_lazy.py::test_append)",
          "[conformance][test_lazy.py]") {
  auto lazy =
      tensordict::lazy_stack({TensorDict({{"a", at::ones({4})}}, {4}), TensorDict({{"a", at::ones({4})}}, {4})});
  CHECK_THROWS_AS(lazy.append(TensorDict({{"a", at::ones({17})}}, {17})), tensordict::ValueError);
  CHECK(CONF_MESSAGE(lazy.append(TensorDict({{"a", at::ones({17})}}, {17}))) ==
        "Batch sizes in tensordicts differs: stack has batch_size=[4], new_value has batch_size=[17]");
  CHECK_THROWS_AS(lazy.insert(0, TensorDict({{"a", at::ones({17})}}, {17})), tensordict::ValueError);
  CHECK_THROWS_AS(lazy.append(TensorDict({{"a", at::ones({4})}}, {4}, at::Device(at::kCPU))), tensordict::ValueError);
  CHECK(CONF_MESSAGE(lazy.append(TensorDict({{"a", at::ones({4})}}, {4}, at::Device(at::kCPU)))) ==
        "Devices differ: stack has device=None, new value has device=cpu");
  CHECK(lazy.tensordicts().size() == 2);  // nothing added
}

TEST_CASE(
    "stacking, concatenating or padding no tensordicts is a RuntimeError (_torch_func.py:441, 689, "
    "_lazy.py:1530, functional.py:460, 623)",
    "[conformance]") {
  CHECK_THROWS_AS(tensordict::stack({}), std::runtime_error);
  CHECK_THROWS_AS(tensordict::cat({}, 0), std::runtime_error);
  CHECK_THROWS_AS(tensordict::lazy_stack({}), std::runtime_error);
  CHECK_THROWS_AS(tensordict::pad_sequence({}), std::runtime_error);
  CHECK_THROWS_AS(tensordict::merge_tensordicts({TensorDict({}, {})}), std::runtime_error);
  CHECK_FALSE(throws_as<std::invalid_argument>([] { (void)tensordict::stack({}); }));
  CHECK_FALSE(throws_as<std::invalid_argument>([] { (void)tensordict::lazy_stack({}); }));
  CHECK_FALSE(throws_as<std::invalid_argument>([] { (void)tensordict::pad_sequence({}); }));
}

TEST_CASE(
    "resetting the batch size checks every leaf, and a lazy stack refuses it (test_generic.py::test_batchsize_reset)",
    "[conformance][test_generic.py]") {
  TensorDict td({{"a", at::randn({3, 4, 5, 6})}, {"b", at::randn({3, 4, 5})}}, {3, 4});
  td.set_batch_size({3});
  CHECK(td.batch_size().vec() == std::vector<int64_t>{3});
  // Incompatible size: RuntimeError naming the key and its shape.
  CHECK_THROWS_AS(td.set_batch_size({3, 5}), std::runtime_error);
  CHECK_FALSE(throws_as<std::invalid_argument>([&] { td.set_batch_size({3, 5}); }));
  CHECK(CONF_MESSAGE(td.set_batch_size({3, 5})) == "cannot set batch size [3, 5]: key 'a' has shape [3, 4, 5, 6]");
  CHECK(td.batch_size().vec() == std::vector<int64_t>{3});  // unchanged
  td.set("c", at::randn({3}));
  // Indexing: more indices than batch dims is an IndexError.
  using at::indexing::Slice;
  CHECK_NOTHROW(td.index({at::tensor({1, 2})}));
  CHECK_THROWS_AS(td.index({Slice(), 0}), tensordict::IndexError);
  CHECK_THAT(CONF_MESSAGE(td.index({Slice(), 0})),
             Catch::StartsWith("too many indices for a tensordict with batch_size [3]"));
  // A greater batch size, then a leaf that does not start with it: RuntimeError.
  TensorDict td2({{"a", at::randn({3, 4, 5, 6})}, {"b", at::randn({3, 4, 5})}}, {3, 4});
  td2.set_batch_size({3, 4, 5});
  td2.set("c", at::randn({3, 4, 5, 6}));
  CHECK_THROWS_AS(td2.set("d", at::randn({3, 4, 2})), std::runtime_error);
  CHECK(CONF_MESSAGE(td2.set("d", at::randn({3, 4, 2}))) ==
        "batch size mismatch for key 'd': the tensor's shape [3, 4, 2] does not start with the batch size [3, 4, 5]");
  CHECK_FALSE(td2.contains("d"));
  // A lazy stack takes its batch size from its members.
  auto stack =
      tensordict::lazy_stack({TensorDict({{"a", at::randn({3})}}, {3}), TensorDict({{"a", at::randn({3})}}, {3})});
  CHECK_THROWS_AS(stack.set_batch_size({2}), std::runtime_error);
  CHECK(CONF_MESSAGE(stack.set_batch_size({2})) ==
        "a LazyStackedTensorDict takes its batch size and device from its members; change them on the members or on "
        "contiguous()");
}

TEST_CASE(
    "set_ of a missing key is a KeyError naming it (test_generic.py::test_tensordict_set, "
    "test_methods.py::test_tensordict_set)",
    "[conformance][test_generic.py][test_methods.py]") {
  for_each_fixture([](const std::string&, TensorDict& td) {
    const std::vector<int64_t> shape = [&] {
      std::vector<int64_t> s = td.batch_size().vec();
      s.push_back(3);
      return s;
    }();
    CHECK_THROWS_AS(td.set_("smartypants", at::ones(shape)), tensordict::KeyError);
    CHECK_THAT(CONF_MESSAGE(td.set_("smartypants", at::ones(shape))),
               Catch::StartsWith("key 'smartypants' not found in "));
    CHECK_FALSE(td.contains("smartypants"));
  });
}

TEST_CASE("rename_key_ with safe=true onto an existing key is a KeyError (test_methods.py::test_rename_key)",
          "[conformance][test_methods.py]") {
  for_each_fixture([](const std::string& name, TensorDict& td) {
    // A locked fixture (memmap_td) reports the lock first (the rename_key_
    // case above); an h5 file is opened read-only.
    if (td.is_locked() || name == "td_h5") return;
    CHECK_THROWS_AS(td.rename_key_("a", "b", /*safe=*/{.safe = true}), tensordict::KeyError);
    CHECK(CONF_MESSAGE(td.rename_key_("a", "b", {.safe = true})) == "key b already present in TensorDict.");
    CHECK(td.contains("a"));  // nothing renamed
  });
}

TEST_CASE("duplicate or too many dim names are ValueErrors (test_nameddims.py::test_error_similar)",
          "[conformance][test_nameddims.py]") {
  CHECK_THROWS_AS(TensorDict({}, {3, 4}, std::nullopt, {"a", "a"}), tensordict::ValueError);
  CHECK(CONF_MESSAGE(TensorDict({}, {3, 4}, std::nullopt, {"a", "a"})) == "Some dimension names are non-unique: ['a', 'a'].");
  CHECK_THROWS_AS(TensorDict({}, {3, 4}, std::nullopt, {"a", "b", "c"}), tensordict::ValueError);
  CHECK(CONF_MESSAGE(TensorDict({}, {3, 4}, std::nullopt, {"a", "b", "c"})) ==
        "got 3 names for 2 batch dims; give one name (or none) per batch dim");
  // The test's other three ways to a duplicate name.
  TensorDict td({}, {3, 4, 1, 6});
  CHECK_THROWS_AS(td.rename_({"a", "b", "c", "a"}), tensordict::ValueError);
  CHECK_THROWS_AS(td.refine_names({"a", "a", "..."}), tensordict::ValueError);
  CHECK_FALSE(td.has_names());  // nothing named by the refused calls
  TensorDict named({}, {3, 4, 1, 6}, std::nullopt, {"a", "b", "c", "z"});
  CHECK_THROWS_AS(named.rename_("a", "z"), tensordict::ValueError);
  CHECK(named.names()[0] == std::optional<std::string>("a"));
}

TEST_CASE("update_ of a key the destination lacks is a KeyError, and writes nothing (test_generic.py::test_update_)",
          "[conformance][test_generic.py]") {
  TensorDict dest({{"a", at::zeros({})}}, {});
  const TensorDict source({{"b", at::ones({})}}, {});
  CHECK_THROWS_AS(dest.update_(source), tensordict::KeyError);
  CHECK(CONF_MESSAGE(dest.update_(source)) == "key 'b' not found in TensorDict with keys [a]");
  CHECK_FALSE(dest.contains("b"));
  // A nested key the destination lacks names its path.
  TensorDict nested_dest({{"n", TensorDict({{"a", at::zeros({})}}, {})}}, {});
  const TensorDict nested_source({{"n", TensorDict({{"b", at::ones({})}}, {})}}, {});
  CHECK_THROWS_AS(nested_dest.update_(nested_source), tensordict::KeyError);
  CHECK(CONF_MESSAGE(nested_dest.update_(nested_source)) ==
        "key ('n', 'b') not found in TensorDict at 'n' with keys [a]");
}

// tensordict raises every lock error as a RuntimeError (_LOCK_ERROR, base.py;
// _SubTensorDict.lock_/unlock_, _td.py:4816; the locked graph, base.py:17297):
// std::runtime_error here, none of the logic_error kinds (KeyError, ValueError,
// TypeError, IndexError). Each refused call leaves the tensordict unchanged.
TEST_CASE(
    "lock errors are RuntimeErrors (test_methods.py::test_lock_write, test_lock, test_errors.py::test_lock_two_roots)",
    "[conformance][test_methods.py][test_errors.py]") {
  const std::string lock_error = "Cannot modify locked TensorDict";
  TensorDict td = sample();
  td.lock_();
  const std::vector<std::pair<std::string, std::function<void()>>> refused = {
      {"set of an existing key",
       [&] {
         td.set("a", at::ones({2, 3}));
       }},
      {"set of a new key", [&] { td.set("new", at::ones({2})); }},
      {"set of a new nested key",
       [&] {
         td.set({"n", "new"}, at::ones({2}));
       }},
      {"update", [&] { td.update(sample()); }},
      {"del_", [&] { td.del_("a"); }},
      {"pop", [&] { td.pop("a"); }},
      {"rename_key_", [&] { td.rename_key_("a", "z"); }},
      {"select_", [&] { td.select_({"a"}); }},
      {"exclude_", [&] { td.exclude_({"a"}); }},
      {"flatten_keys_", [&] { td.flatten_keys_(); }},
  };
  for (const auto& entry : refused) {
    const auto& what = entry.first;
    const auto& call = entry.second;  // a plain local: lambdas below capture it (clang 14)
    INFO(what);
    CHECK(throws_as<std::runtime_error>(call));
    CHECK_FALSE(throws_as<std::logic_error>(call));
    CHECK_THAT(CONF_MESSAGE(call()), Catch::Matchers::Contains(lock_error));
  }
  CHECK(td.keys({.include_nested = true, .leaves_only = true}).size() == 2);
  CHECK(td.get("a").eq(0).all().item<bool>());

  // Locking or unlocking a sub-tensordict itself.
  TensorDict source = sample();
  auto sub = source.get_sub_tensordict({0});
  CHECK(throws_as<std::runtime_error>([&] { sub.lock_(); }));
  CHECK_FALSE(throws_as<std::logic_error>([&] { sub.lock_(); }));
  source.lock_();
  CHECK(throws_as<std::runtime_error>([&] { sub.unlock_(); }));
  CHECK_FALSE(throws_as<std::logic_error>([&] { sub.unlock_(); }));

  // Unlocking a root whose child another locked root holds.
  TensorDict root = sample();
  root.lock_();
  TensorDict other({{"n", root.get_td("n")}}, {2});
  other.lock_();
  CHECK(throws_as<std::runtime_error>([&] { root.unlock_(); }));
  CHECK_FALSE(throws_as<std::logic_error>([&] { root.unlock_(); }));
  CHECK(root.is_locked());
}
