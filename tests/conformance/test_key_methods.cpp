// Ports of tensordict's tests of set(inplace), update's keywords, the
// in-place key ops (select/exclude/flatten_keys/unflatten_keys with
// inplace=True), to_dict/from_dict and to_lazystack (test_methods.py,
// test_generic.py, test_errors.py).
#include <ATen/core/Dict.h>
#include <nlohmann/json.hpp>
#include <ATen/core/ivalue.h>

#include "fixtures.h"

using namespace conformance;
using tensordict::LazyStackedTensorDict;
using tensordict::NestedKey;
using tensordict::UpdateOptions;
using Catch::Contains;

namespace {
TensorDict abc() {
  TensorDict td({{"a", at::zeros({3, 4})}}, {3});
  td.set({"b", "c"}, at::ones({3, 2}));
  td.set({"b", "d"}, at::ones({3}));
  return td;
}
}  // namespace

TEST_CASE("set(inplace=true) copies into an existing tensor and sets a missing key (test_generic.py::test_consolidated_locking_behavior)",
          "[conformance][test_generic.py]") {
  TensorDict td = abc();
  const auto ptr = td.get("a").data_ptr();
  td.set("a", at::ones({3, 4}, at::kLong), {.inplace = true});
  CHECK(td.get("a").data_ptr() == ptr);          // storage kept
  CHECK(td.get("a").scalar_type() == at::kFloat);  // and dtype (copy_)
  CHECK(td.get("a").equal(at::ones({3, 4})));
  td.set("new", at::ones({3}), {.inplace = true});
  CHECK(td.contains("new"));
  // A nested tensordict is updated in place: same object, new keys added.
  const auto nested = td.get_td("b").impl();
  td.set("b", TensorDict({{"c", at::full({3, 2}, 7.0)}, {"x", at::zeros({3})}}, {3}), {.inplace = true});
  CHECK(td.get_td("b").impl() == nested);
  CHECK(td.get({"b", "c"}).eq(7).all().item<bool>());
  CHECK(td.contains({"b", "x"}));
  // Locked: in place on an existing key works, a missing key is the lock error.
  td.lock_();
  td.set("a", at::zeros({3, 4}), {.inplace = true});
  CHECK(td.get("a").eq(0).all().item<bool>());
  CHECK_THROWS_WITH(td.set("missing", at::zeros({3}), {.inplace = true}), Contains("Cannot modify locked TensorDict. For in-place modification"));
  // A copy that cannot happen is a ValueError naming the key.
  CHECK_THROWS_AS(td.set("a", at::zeros({3, 5}), {.inplace = true}), std::invalid_argument);
}

TEST_CASE("update with keys_to_update, clone and inplace (test_methods.py::test_update_select)", "[conformance][test_methods.py]") {
  TensorDict dest = abc();
  TensorDict source = abc().apply([](const at::Tensor& t) { return t + 5; });
  const auto a_ptr = dest.get("a").data_ptr();
  dest.update(source, UpdateOptions{false, false, std::vector<NestedKey>{{"b", "c"}}, false});
  CHECK(dest.get({"b", "c"}).eq(6).all().item<bool>());
  CHECK(dest.get({"b", "d"}).eq(1).all().item<bool>());  // not selected
  CHECK(dest.get("a").eq(0).all().item<bool>());
  // inplace: existing tensors keep their storage.
  dest.update(source, UpdateOptions{false, true, std::nullopt, false});
  CHECK(dest.get("a").data_ptr() == a_ptr);
  CHECK(dest.get("a").eq(5).all().item<bool>());
  // clone: the values are not the source's.
  TensorDict fresh = abc();
  fresh.update(source, UpdateOptions{true, false, std::nullopt, false});
  CHECK(fresh.get("a").data_ptr() != source.get("a").data_ptr());
  TensorDict shared = abc();
  shared.update(source);
  CHECK(shared.get("a").data_ptr() == source.get("a").data_ptr());
}

TEST_CASE("update with update_batch_size takes the source's batch size, keeping nested objects (test_generic.py::test_update_batch_size, "
          "test_update_batch_size_errors)",
          "[conformance][test_generic.py]") {
  TensorDict dest = abc();
  const auto nested = dest.get_td("b").impl();
  TensorDict source({{"a", at::ones({5, 4})}}, {5});
  source.set({"b", "c"}, at::ones({5, 2}));
  source.set({"b", "d"}, at::ones({5}));
  UpdateOptions rebatch;
  rebatch.update_batch_size = true;
  CHECK_THROWS_WITH(TensorDict(abc()).update(source, UpdateOptions{}), Contains("update_batch_size"));
  UpdateOptions inplace = rebatch;
  inplace.inplace = true;
  CHECK_THROWS_WITH(TensorDict(abc()).update(source, inplace), Contains("inplace"));
  UpdateOptions keys = rebatch;
  keys.keys_to_update = std::vector<NestedKey>{"a"};
  CHECK_THROWS_WITH(TensorDict(abc()).update(source, keys), Contains("keys_to_update"));
  TensorDict more = abc();
  more.set("extra", at::zeros({3}));
  CHECK_THROWS_WITH(more.update(source, rebatch), Contains("'extra'"));
  TensorDict locked = abc();
  locked.lock_();
  CHECK_THROWS_WITH(locked.update(source, rebatch), Contains("lock"));

  dest.update(source, rebatch);
  CHECK(dest.batch_size() == at::IntArrayRef({5}));
  CHECK(dest.get_td("b").batch_size() == at::IntArrayRef({5}));
  CHECK(dest.get_td("b").impl() == nested);
  CHECK(dest.get({"b", "c"}).sizes() == at::IntArrayRef({5, 2}));
  CHECK(source.batch_size() == at::IntArrayRef({5}));  // the source is unaltered
}

TEST_CASE("select_, exclude_, flatten_keys_ and unflatten_keys_ rearrange the tensordict itself (test_generic.py::test_select_nested, "
          "test_exclude_nested, test_methods.py::test_flatten_keys, test_unflatten_keys)",
          "[conformance][test_generic.py]") {
  TensorDict td = abc();
  const auto nested = td.get_td("b").impl();
  CHECK(&td.select_({NestedKey{"b", "c"}}) == &td);
  CHECK(td.keys({.include_nested = true, .leaves_only = true}) == std::vector<NestedKey>{NestedKey{"b", "c"}});
  CHECK(td.get_td("b").impl() == nested);  // pruned in place
  CHECK_THROWS_AS(td.select_({"nope"}), tensordict::KeyError);
  td.select_({"nope", NestedKey{"b", "c"}}, {.strict = false});
  CHECK(td.contains({"b", "c"}));

  TensorDict ex = abc();
  ex.exclude_({NestedKey{"b", "d"}, "a", "absent"});
  CHECK(ex.keys({.include_nested = true, .leaves_only = true}) == std::vector<NestedKey>{NestedKey{"b", "c"}});

  TensorDict flat = abc();
  flat.flatten_keys_();
  CHECK(flat.sorted_keys() == std::vector<std::string>{"a", "b.c", "b.d"});  // top-level leaves stay
  flat.unflatten_keys_();
  CHECK(flat.keys({.include_nested = true, .leaves_only = true}) == abc().keys({.include_nested = true, .leaves_only = true}));

  TensorDict locked = abc();
  locked.lock_();
  for (auto op : std::vector<std::function<void()>>{[&] { locked.select_({"a"}); }, [&] { locked.exclude_({"a"}); },
                                                     [&] { locked.flatten_keys_(); }, [&] { locked.unflatten_keys_(); }}) {
    CHECK_THROWS_WITH(op(), Contains("Cannot modify locked TensorDict"));
  }
  CHECK(locked.keys({.include_nested = true, .leaves_only = true}) == abc().keys({.include_nested = true, .leaves_only = true}));
}

TEST_CASE("to_dict and from_dict round-trip tensors, nesting and non-tensor data (test_methods.py::test_to_dict_nested, "
          "test_generic.py::test_from_dict)",
          "[conformance][test_methods.py]") {
  TensorDict td = abc();
  td.set_non_tensor({"b", "text"}, "some text data");
  td.set_non_tensor("n", nullptr);
  td.set_non_tensor("list", tensordict::Json::array({1, 2.5, "x"}));
  const auto dict = td.to_dict();
  CHECK(dict.at("a").toTensor().data_ptr() == td.get("a").data_ptr());  // shared, not copied
  const auto b = c10::impl::toTypedDict<std::string, c10::IValue>(dict.at("b").toGenericDict());
  CHECK(b.at("text").toStringRef() == "some text data");
  CHECK(dict.at("n").isNone());
  CHECK(dict.at("list").toListRef().size() == 3);

  const TensorDict back = TensorDict::from_dict(dict, {.batch_size = std::vector<int64_t>{3}});
  CHECK(back.batch_size() == at::IntArrayRef({3}));
  CHECK(back.get_td("b").batch_size() == at::IntArrayRef({3}));
  CHECK((back == td).select({"a", NestedKey{"b", "c"}, NestedKey{"b", "d"}}).all());
  CHECK(back.get_non_tensor({"b", "text"}) == "some text data");
  CHECK(back.get_non_tensor("list") == tensordict::Json::array({1, 2.5, "x"}));

  // Batch size: [] by default, the longest shared prefix with batch_dims or auto.
  auto raw = TensorDict().to_dict();  // an empty c10::Dict<std::string, IValue>
  raw.insert("a", at::zeros({3, 4}));
  auto inner = TensorDict().to_dict();
  inner.insert("c", at::zeros({3, 4, 5}));
  raw.insert("b", inner);
  CHECK(TensorDict::from_dict(raw).batch_size().empty());
  const TensorDict autod = TensorDict::from_dict(raw, {.auto_batch_size = true});
  CHECK(autod.batch_size() == at::IntArrayRef({3, 4}));
  CHECK(autod.get_td("b").batch_size() == at::IntArrayRef({3, 4, 5}));
  const TensorDict one = TensorDict::from_dict(raw, {.batch_dims = 1});
  CHECK(one.batch_size() == at::IntArrayRef({3}));
  CHECK_THROWS_WITH(TensorDict::from_dict(raw, {.batch_size = std::vector<int64_t>{3}, .batch_dims = 1}), Contains("both"));
  auto bad = TensorDict().to_dict();
  bad.insert("t", c10::ivalue::Tuple::create({c10::IValue(1)}));
  CHECK_THROWS_WITH(TensorDict::from_dict(bad), Contains("from_dict: key 't' holds a Tuple"));
  // A lazy stack whose members hold different keys has no dict form.
  auto lazy = tensordict::lazy_stack({TensorDict({{"x", at::zeros({1})}}, {}), TensorDict({{"y", at::zeros({1})}}, {})}, 0);
  CHECK_THROWS_WITH(lazy.to_dict(), "the method to_dict cannot complete when there are exclusive keys.");
}

TEST_CASE("to_lazystack stacks the slices along a dim lazily (base.py to_lazystack)", "[conformance][test_methods.py]") {
  for (const char* name : {"td", "nested_td", "stacked_td", "sub_td"}) {
    CAPTURE(name);
    Fixture f = make_fixture(name);
    const LazyStackedTensorDict lazy = f.td.to_lazystack(1);
    CHECK(lazy.stack_dim() == 1);
    CHECK(lazy.tensordicts().size() == 3);
    CHECK(lazy.batch_size() == f.td.batch_size());
    CHECK((lazy == f.td).all());
  }
}

TEST_CASE("indexed assignment into an empty preallocated tensordict creates entries of the full batch "
          "(test_generic.py::test_tensordict_prealloc_nested, base.py:18405)",
          "[conformance][test_generic.py]") {
  const int64_t N = 3, B = 5, T = 4;
  TensorDict buffer({}, {B, N});
  TensorDict td_0({{"env.time", at::rand({N, 1})},
                   {"agent.obs", TensorDict({{"image", at::rand({N, T, 64})}, {"state", at::rand({N, T, 3, 8, 8})}}, {N, T})}},
                  {N});
  const TensorDict td_1 = td_0.clone();
  buffer.index_put_({0}, td_0);
  buffer.index_put_({1}, td_1);
  CHECK(buffer.batch_size() == at::IntArrayRef({B, N}));
  CHECK(buffer.get_td("agent.obs").batch_size() == at::IntArrayRef({B, N, T}));
  CHECK(buffer.get({"agent.obs", "image"}).sizes() == at::IntArrayRef({B, N, T, 64}));
  CHECK(buffer.get({"agent.obs", "state"}).sizes() == at::IntArrayRef({B, N, T, 3, 8, 8}));
  CHECK(buffer.get("env.time").sizes() == at::IntArrayRef({B, N, 1}));
  CHECK(buffer.get({"agent.obs", "image"})[0].equal(td_0.get({"agent.obs", "image"})));
  CHECK(buffer.get({"agent.obs", "state"})[1].equal(td_1.get({"agent.obs", "state"})));
  CHECK((buffer.get("env.time").index({at::indexing::Slice(2)}) == 0).all().item<bool>());
  // A locked buffer refuses the new keys (tensordict's lock error).
  TensorDict locked({}, {B});
  locked.lock_();
  CHECK_THROWS_WITH(locked.index_put_({0}, TensorDict({{"a", at::ones({2})}}, {})), Contains("Cannot modify locked TensorDict"));
}
