// Ports of tensordict's tests of UnbatchedTensor (test_nontensor.py
// TestUnbatchedTensor, and test_methods.py on its td_with_unbatched
// fixture): an entry without the batch dims, which batch ops carry unchanged
// and value ops apply to.
#include <tensordict/persistent.h>
#include <nlohmann/json.hpp>
#include <tensordict/print_options.h>
#include <tensordict/repr.h>

#include "../builders.h"
#include "../warnings.h"
#include "fixtures.h"

using namespace conformance;
using at::indexing::Slice;
using Catch::Matchers::Contains;
using tensordict::lazy_stack;
using tensordict::UnbatchedTensor;

namespace {

// tensordict's fixture td_with_unbatched (test/_utils_internal.py).
TensorDict td_with_unbatched() {
  at::manual_seed(0);
  return TensorDict({{"a", at::randn({4, 3, 2, 1, 5})},
                     {"b", at::randn({4, 3, 2, 1, 10})},
                     {"c", at::randint(10, {4, 3, 2, 1, 3}, at::kLong)},
                     {"unbatched", UnbatchedTensor(at::randn({7, 11}))}},
                    {4, 3, 2, 1});
}

// TestUnbatchedTensor's td: "a" unbatched of shape [10], batch size [3].
TensorDict small() {
  return TensorDict({{"a", UnbatchedTensor(at::randn({10}))}, {"b", at::randn({3})}}, {3});
}

// The unbatched entry of `result` is `source`'s, untouched.
void require_carried(const TensorDict& result, const TensorDict& source, const tensordict::NestedKey& key = "a") {
  INFO("batch size " << result.batch_size());
  REQUIRE(result.is_unbatched(key));
  REQUIRE(result.get(key).data_ptr() == source.get(key).data_ptr());
  REQUIRE(result.get(key).sizes() == source.get(key).sizes());
}

// The n tensordicts of test_unbatched_stack_updates_batch_size_metadata.
std::vector<TensorDict> items(at::IntArrayRef batch, const at::Tensor& data, int n = 3) {
  std::vector<TensorDict> out;
  for (int i = 0; i < n; ++i) out.push_back(TensorDict({{"x", at::zeros(batch)}, {"ub", UnbatchedTensor(data)}}, batch));
  return out;
}

const char* kStackWarning = "Stacking UnbatchedTensors with different data storage";

}  // namespace

TEST_CASE("an UnbatchedTensor entry has any shape and get() gives its payload "
          "(test_nontensor.py::TestUnbatchedTensor::test_unbatched, test_unbatched_getitem_returns_unbatched)",
          "[conformance][test_nontensor.py][unbatched]") {
  const at::Tensor data = at::randn({7, 11});
  TensorDict td({{"a", UnbatchedTensor(data)}, {"b", at::randn({3, 4})}}, {3, 4});
  REQUIRE(td.is_unbatched("a"));
  REQUIRE_FALSE(td.is_unbatched("b"));
  REQUIRE(td.get_value("a")->is_unbatched());
  REQUIRE(td.get_value("a")->is_tensor());  // it is a tensor, as tensordict's is a torch.Tensor
  REQUIRE(td.get("a").data_ptr() == data.data_ptr());
  // A plain tensor still must start with the batch size.
  REQUIRE_THAT(CONF_MESSAGE(td.set("c", at::randn({7}))), Contains("does not start with the batch size [3, 4]"));
  REQUIRE_THAT(CONF_MESSAGE(td.is_unbatched("missing")), Contains("key 'missing' not found"));
  // A batch size change leaves it alone.
  td.set_batch_size({3});
  REQUIRE(td.get("a").sizes() == data.sizes());
}

TEST_CASE("auto_batch_size_ ignores UnbatchedTensor entries (test_nontensor.py::TestUnbatchedTensor::test_auto_batch_size)",
          "[conformance][test_nontensor.py][unbatched]") {
  TensorDict td({{"a", UnbatchedTensor(at::scalar_tensor(0, at::kLong))}, {"b", at::randn({2, 3})}});
  td.auto_batch_size_(2);
  REQUIRE(td.batch_size() == at::IntArrayRef({2, 3}));
  REQUIRE(td.get("a").item<int64_t>() == 0);
}

TEST_CASE("shape ops carry an UnbatchedTensor unchanged (test_nontensor.py::TestUnbatchedTensor::test_unbatched_shape_ops)",
          "[conformance][test_nontensor.py][unbatched]") {
  const TensorDict td = small();
  require_carried(td.index({0}), td);
  require_carried(td.index({Slice()}), td);
  const auto unbound = td.unbind(0);
  REQUIRE(unbound[0].batch_size().empty());
  require_carried(unbound[0], td);
  const auto split = td.split(1, 0);
  REQUIRE(split[0].batch_size() == at::IntArrayRef({1}));
  require_carried(split[0], td);
  require_carried(td.split(std::vector<int64_t>{2, 1}, 0)[0], td);
  const TensorDict reshaped = td.reshape({1, 3});
  REQUIRE(reshaped.batch_size() == at::IntArrayRef({1, 3}));
  require_carried(reshaped, td);
  REQUIRE(reshaped.transpose(0, 1).batch_size() == at::IntArrayRef({3, 1}));
  require_carried(reshaped.transpose(0, 1), td);
  REQUIRE(reshaped.permute({1, 0}).batch_size() == at::IntArrayRef({3, 1}));
  require_carried(reshaped.permute({1, 0}), td);
  REQUIRE(reshaped.squeeze().batch_size() == at::IntArrayRef({3}));
  require_carried(reshaped.squeeze(), td);
  require_carried(td.view({1, 3}), td);
  REQUIRE(td.unsqueeze(0).batch_size() == at::IntArrayRef({1, 3}));
  require_carried(td.unsqueeze(0), td);
  const TensorDict gathered = td.gather(0, at::tensor({0}, at::kLong));
  REQUIRE(gathered.batch_size() == at::IntArrayRef({1}));
  require_carried(gathered, td);
  const TensorDict unflattened = td.unflatten(0, {1, 3});
  REQUIRE(unflattened.batch_size() == at::IntArrayRef({1, 3}));
  require_carried(unflattened, td);
  REQUIRE(unflattened.flatten(0, 1).batch_size() == at::IntArrayRef({3}));
  require_carried(unflattened.flatten(0, 1), td);
  require_carried(td.expand({5, 3}), td);
}

TEST_CASE("stack, cat and ones_like with an UnbatchedTensor (test_nontensor.py::TestUnbatchedTensor::test_unbatched_torch_func)",
          "[conformance][test_nontensor.py][unbatched]") {
  const TensorDict td = small();
  const TensorDict stacked = tensordict::stack({td, td}, 0);
  REQUIRE(stacked.batch_size() == at::IntArrayRef({2, 3}));
  require_carried(stacked, td);
  require_carried(stacked.index({0}), td);
  const TensorDict catted = tensordict::cat({td, td}, 0);
  REQUIRE(catted.batch_size() == at::IntArrayRef({6}));
  require_carried(catted.index({0}), td);
  const TensorDict ones = tensordict::ones_like(td);
  REQUIRE(ones.is_unbatched("a"));
  REQUIRE(ones.get("a").eq(1).all().item<bool>());
  REQUIRE(ones.get("a").sizes() == at::IntArrayRef({10}));
}

TEST_CASE("value ops apply to an UnbatchedTensor and keep it unbatched (test_nontensor.py::TestUnbatchedTensor::test_unbatched_other_ops)",
          "[conformance][test_nontensor.py][unbatched]") {
  TensorDict td({{"a", UnbatchedTensor(at::randn({10}))}, {"b", at::randn({3})}, {"c_d", UnbatchedTensor(at::randn({10}))}},
                {3});
  require_carried(td.clone({.recurse = false}), td);
  const TensorDict as_int = td.to(at::kInt);
  REQUIRE(as_int.is_unbatched("a"));
  REQUIRE(as_int.get("a").scalar_type() == at::kInt);
  REQUIRE(at::equal(as_int.get("a"), td.get("a").to(at::kInt)));
  require_carried(td.select({"a"}), td);
  require_carried(td.exclude({"b"}), td);
  const TensorDict unflat = td.unflatten_keys("_");
  REQUIRE(unflat.is_unbatched({"c", "d"}));
  REQUIRE(unflat.get({"c", "d"}).data_ptr() == td.get("c_d").data_ptr());
  REQUIRE(unflat.flatten_keys(".").get("c.d").data_ptr() == td.get("c_d").data_ptr());

  // clone, arithmetic and apply compute on the payload, whatever its shape
  // (tensordict: they return an UnbatchedTensor).
  const TensorDict cloned = td.clone();
  REQUIRE(cloned.is_unbatched("a"));
  REQUIRE(cloned.get("a").data_ptr() != td.get("a").data_ptr());
  REQUIRE(at::equal(cloned.get("a"), td.get("a")));
  const TensorDict plus = td + 1;
  REQUIRE(plus.is_unbatched("a"));
  REQUIRE(at::allclose(plus.get("a"), td.get("a") + 1));
  const TensorDict doubled = td + td;
  REQUIRE(doubled.is_unbatched("a"));
  REQUIRE(at::allclose(doubled.get("a"), td.get("a") * 2));
  const TensorDict summed = td.apply([](const at::Tensor& t) { return t * 2; });
  REQUIRE(summed.is_unbatched("a"));
  REQUIRE(at::allclose(summed.get("a"), td.get("a") * 2));
  TensorDict zeroed = td.clone();
  zeroed.zero_();
  REQUIRE(zeroed.is_unbatched("a"));
  REQUIRE(zeroed.get("a").eq(0).all().item<bool>());
}

TEST_CASE("stacking UnbatchedTensors of one storage gives no warning, of different storages warns "
          "(test_nontensor.py::TestUnbatchedTensor::test_unbatched_stack_same_data_no_warning, "
          "test_unbatched_stack_different_data_warns)",
          "[conformance][test_nontensor.py][unbatched]") {
  const at::Tensor data = at::randn({5});
  TensorDict td1({{"a", at::ones({3})}, {"ub", UnbatchedTensor(data)}}, {3});
  TensorDict td2({{"a", at::ones({3})}, {"ub", UnbatchedTensor(data)}}, {3});
  std::optional<TensorDict> stacked;
  REQUIRE(td_test::warnings_of([&] { stacked = tensordict::stack({td1, td2}, 0); }).empty());
  REQUIRE(stacked->get("ub").data_ptr() == data.data_ptr());

  TensorDict other({{"a", at::ones({3})}, {"ub", UnbatchedTensor(at::ones({5}))}}, {3});
  const auto warnings = td_test::warnings_of([&] { stacked = tensordict::stack({td1, other}, 0); });
  REQUIRE(warnings.size() == 1);
  REQUIRE_THAT(warnings[0], Contains(kStackWarning) && Contains("Only the first element's data will be kept"));
  REQUIRE(stacked->get("ub").data_ptr() == data.data_ptr());  // the first one's
}

TEST_CASE("stack gives the UnbatchedTensor the stacked batch size and keeps its shape "
          "(test_nontensor.py::TestUnbatchedTensor::test_unbatched_stack_updates_batch_size_metadata)",
          "[conformance][test_nontensor.py][unbatched]") {
  struct Case {
    std::vector<int64_t> batch;
    int64_t dim;
    std::vector<int64_t> expected;
  };
  for (const Case& c : {Case{{}, 0, {3}}, Case{{2}, 0, {3, 2}}, Case{{2}, 1, {2, 3}}, Case{{2, 1}, -1, {2, 1, 3}}}) {
    const at::Tensor data = at::scalar_tensor(1, at::kLong);
    const auto parts = items(c.batch, data);
    const TensorDict result = tensordict::stack(parts, c.dim);
    REQUIRE(result.batch_size() == at::IntArrayRef(c.expected));
    REQUIRE(result.is_unbatched("ub"));
    REQUIRE(result.get("ub").dim() == 0);
    REQUIRE(result.get("ub").data_ptr() == data.data_ptr());
    for (const auto& p : parts) REQUIRE(p.batch_size() == at::IntArrayRef(c.batch));
  }
}

TEST_CASE("stack and cat into out= keep out's UnbatchedTensor "
          "(test_nontensor.py::TestUnbatchedTensor::test_unbatched_stack_out_updates_batch_size_metadata, "
          "test_unbatched_cat_updates_batch_size_metadata)",
          "[conformance][test_nontensor.py][unbatched]") {
  const at::Tensor data = at::scalar_tensor(1, at::kLong);
  TensorDict out({{"x", at::empty({3, 2})}, {"ub", UnbatchedTensor(data)}}, {3, 2});
  TensorDict& stacked = tensordict::stack_out(out, items({2}, data), 0);
  REQUIRE(&stacked == &out);
  REQUIRE(out.is_unbatched("ub"));
  REQUIRE(out.get("ub").data_ptr() == data.data_ptr());

  const TensorDict catted = tensordict::cat(items({2}, data), 0);
  REQUIRE(catted.batch_size() == at::IntArrayRef({6}));
  REQUIRE(catted.get("ub").data_ptr() == data.data_ptr());
  TensorDict cat_into({{"x", at::empty({6})}, {"ub", UnbatchedTensor(data)}}, {6});
  tensordict::cat_out(cat_into, items({2}, data), 0);
  REQUIRE(cat_into.is_unbatched("ub"));
  REQUIRE(cat_into.get("ub").dim() == 0);
  REQUIRE(cat_into.get("ub").data_ptr() == data.data_ptr());
}

TEST_CASE("a lazy stack's UnbatchedTensor is its members' "
          "(test_nontensor.py::TestUnbatchedTensor::test_lazy_stack_unbatched_updates_batch_size_metadata)",
          "[conformance][test_nontensor.py][unbatched]") {
  const at::Tensor data = at::scalar_tensor(1, at::kLong);
  const TensorDict lazy = lazy_stack(items({2}, data), 0);
  REQUIRE(lazy.batch_size() == at::IntArrayRef({3, 2}));
  REQUIRE(lazy.is_unbatched("ub"));
  REQUIRE(lazy.get("ub").dim() == 0);
  REQUIRE(lazy.get("ub").data_ptr() == data.data_ptr());
  require_carried(lazy.index({1, 0}), lazy, "ub");
  // Members holding different storages: the first one's, with tensordict's warning.
  auto parts = items({2}, data, 2);
  parts[1].set("ub", UnbatchedTensor(at::scalar_tensor(2, at::kLong)));
  const TensorDict mixed = lazy_stack(parts, 0);
  std::optional<at::Tensor> got;
  const auto warnings = td_test::warnings_of([&] { got = mixed.get("ub"); });
  REQUIRE(warnings.size() == 1);
  REQUIRE_THAT(warnings[0], Contains(kStackWarning));
  REQUIRE(got->item<int64_t>() == 1);
  // Set into a lazy stack, every member shares it.
  TensorDict into = lazy_stack(items({2}, data, 2), 0);
  const at::Tensor table = at::randn({4, 4});
  into.set("table", UnbatchedTensor(table));
  for (const auto& m : tensordict::LazyStackedTensorDict(into).tensordicts()) {
    REQUIRE(m.is_unbatched("table"));
    REQUIRE(m.get("table").data_ptr() == table.data_ptr());
  }
}

TEST_CASE("indexing ops carry the UnbatchedTensor "
          "(test_nontensor.py::TestUnbatchedTensor::test_unbatched_indexing_updates_batch_size_metadata)",
          "[conformance][test_nontensor.py][unbatched]") {
  const at::Tensor data = at::scalar_tensor(1, at::kLong);
  const TensorDict td({{"x", at::zeros({2, 3})}, {"ub", UnbatchedTensor(data)}}, {2, 3});
  std::vector<TensorDict> results = {td.index({0}), td.index({Slice(), Slice(0, 2)}),
                                     td.gather(0, at::zeros({1, 3}, at::kLong))};
  for (const auto& r : td.split(1, 0)) results.push_back(r);
  for (const auto& r : td.chunk(2, 0)) results.push_back(r);
  results.push_back(td.masked_select(td_test::mask({1, 0, 1, 0, 1, 0}).reshape({2, 3})));
  REQUIRE(results.back().batch_size() == at::IntArrayRef({3}));
  for (const auto& r : results) {
    REQUIRE(r.is_unbatched("ub"));
    REQUIRE(r.get("ub").dim() == 0);
    REQUIRE(r.get("ub").data_ptr() == data.data_ptr());
  }
}

TEST_CASE("gather, masked assignment and pad on td_with_unbatched "
          "(test_methods.py::test_gather, test_masking_set, test_pad)",
          "[conformance][test_methods.py][unbatched]") {
  TensorDict td = td_with_unbatched();
  const at::Tensor original = td.get("unbatched");
  for (int64_t dim : {0, 1, 2, 3, -1, -2, -3}) {
    INFO("dim " << dim);
    const int64_t other = dim < 0 ? dim + 4 : dim;
    std::vector<at::indexing::TensorIndex> idx(static_cast<std::size_t>(other), Slice());
    idx.emplace_back(Slice(0, 2));
    const at::Tensor index = at::ones(td.batch_size(), at::kLong).index(idx).cumsum(other) - 1;
    require_carried(td.gather(dim, index), td, "unbatched");
  }
  // td[mask] = other without the key leaves it as it is.
  const at::Tensor m = at::zeros(td.batch_size(), at::kBool).bernoulli_(0.8);
  const int64_t n = m.sum().item<int64_t>();
  const TensorDict pseudo = td.exclude({"unbatched"}).apply(
      [&](const at::Tensor& item) { return at::zeros(td_test::cat_shape({n}, item.sizes().slice(4)), item.options()); },
      std::vector<int64_t>{n});
  td.index_put_({m}, pseudo);
  REQUIRE(td.get("unbatched").data_ptr() == original.data_ptr());
  REQUIRE(at::equal(td.get("unbatched"), original));
  REQUIRE(td.get("a").index({m}).eq(0).all().item<bool>());
  // pad leaves it as it is.
  require_carried(tensordict::pad(td, {0, 1, 0, 2}), td, "unbatched");
}

TEST_CASE("indexed assignment writes an UnbatchedTensor whole (tensordict's UnbatchedTensor docstring)",
          "[conformance][unbatched]") {
  auto make = [] {
    return TensorDict({{"a", UnbatchedTensor(at::arange(12.).reshape({3, 4}))}, {"b", at::zeros({2, 3})}}, {2});
  };
  TensorDict td = make();
  td.index_put_({0}, TensorDict({{"a", UnbatchedTensor(at::ones({3, 4}))}, {"b", at::ones({3})}}, {}));
  REQUIRE(td.get("a").sum().item<double>() == 12.0);  // the whole payload
  REQUIRE(td.get("b").sum().item<double>() == 3.0);   // row 0 only
  TensorDict untouched = make();
  untouched.index_put_({0}, TensorDict({{"b", at::ones({3})}}, {}));
  REQUIRE(untouched.get("a").sum().item<double>() == 66.0);
  untouched.index_put_({1}, 5.0);  // a broadcast value has no batch dims to reach it
  REQUIRE(untouched.get("a").sum().item<double>() == 66.0);
  TensorDict wrong = make();
  REQUIRE_THAT(CONF_MESSAGE(wrong.index_put_({0}, TensorDict({{"a", UnbatchedTensor(at::ones({2}))}}, {}))),
               Contains("index_put_ failed for key 'a'"));
  // Through a sub-tensordict too.
  TensorDict viewed = make();
  viewed.get_sub_tensordict({1}).set_("a", at::full({3, 4}, 2.0));
  REQUIRE(viewed.get("a").eq(2).all().item<bool>());
  require_carried(viewed.get_sub_tensordict({1}), viewed);
}

TEST_CASE("an UnbatchedTensor is not memory-mapped nor consolidated, as in tensordict 0.15.3 "
          "(_td.py _memmap_, _consolidate)",
          "[conformance][unbatched]") {
  td_test::TempDir dir;
  TensorDict td({{"b", at::zeros({2, 3})}, {"n", TensorDict({{"u", UnbatchedTensor(at::ones({1}))}}, {2})}}, {2});
  // tensordict 0.15.3's messages, word for word.
  REQUIRE(CONF_MESSAGE(td.memmap((dir / "m").string())) ==
          "UnbatchedTensor entries cannot be memory-mapped yet, but 'u' is one. Exclude it first, e.g. with "
          "td.exclude('u').");
  REQUIRE_FALSE(std::filesystem::exists(dir / "m" / "meta.json"));
  REQUIRE_THAT(CONF_MESSAGE(td.save((dir / "m.tdz").string())), Contains("cannot be memory-mapped yet"));
  REQUIRE_FALSE(std::filesystem::exists(dir / "m.tdz"));
  REQUIRE_THAT(CONF_MESSAGE(td.clone().memmap_()), Contains("cannot be memory-mapped yet"));
  REQUIRE(CONF_MESSAGE(td.consolidate()) ==
          "UnbatchedTensor entries cannot be consolidated yet, but ('n', 'u') is one.");
  REQUIRE_NOTHROW(td.exclude({{"n", "u"}}).memmap((dir / "m").string()));
}

TEST_CASE("h5 writes an UnbatchedTensor as a plain tensor, with tensordict's warning once per save "
          "(persistent.py _to_numpy, utils.py _warn_unbatched_saved_as_plain)",
          "[conformance][unbatched]") {
  td_test::TempDir dir;
  const TensorDict td({{"b", at::zeros({2, 3})}, {"u", UnbatchedTensor(at::arange(2.))}, {"v", UnbatchedTensor(at::ones({2, 5}))}},
                      {2});
  const std::string path = (dir / "f.h5").string();
  const auto warnings = td_test::warnings_of([&] { tensordict::PersistentTensorDict::from_dict(td, path).close(); });
  REQUIRE(warnings.size() == 1);
  REQUIRE_THAT(warnings[0], Contains("UnbatchedTensor leaves are saved as plain tensors"));
  auto h5 = tensordict::PersistentTensorDict::from_h5(path);
  REQUIRE_FALSE(h5.is_unbatched("u"));
  REQUIRE(at::equal(h5.get("u"), at::arange(2.)));
  REQUIRE(at::equal(h5.get("v"), at::ones({2, 5})));
}

TEST_CASE("repr shows an UnbatchedTensor's whole shape and its class (tensordict's compact and detailed reprs)",
          "[conformance][unbatched]") {
  const TensorDict td({{"a", UnbatchedTensor(at::zeros({3, 4}))}, {"b", at::zeros({2, 3})}}, {2});
  // tensordict 0.15.3 prints these for the same tensordict.
  REQUIRE(tensordict::repr(td) == "TensorDict(batch_size=[2], fields={a: f32[3,4], b: f32[3]})");
  std::string detailed;
  {
    tensordict::set_printoptions guard({.compact = false});
    detailed = tensordict::repr(td);
  }
  REQUIRE_THAT(detailed, Contains("a: UnbatchedTensor(shape=torch.Size([3, 4]), device=cpu, dtype=torch.float32, "
                                  "is_shared=False)"));
  REQUIRE_THAT(detailed, Contains("b: Tensor(shape=torch.Size([2, 3])"));
  const TensorDict lazy = lazy_stack({td, td}, 0);
  REQUIRE(tensordict::repr(lazy) ==
          "LazyStackedTensorDict(batch_size=[2,2], stack_dim=0, fields={\n    a: f32[3,4],\n    b: f32[3]})");
  // A value op's result keeps the class (tensordict: apply(lambda x: x.sum(-1))).
  REQUIRE(tensordict::repr(td.apply([](const at::Tensor& t) { return t.sum(-1); })) ==
          "TensorDict(batch_size=[2], fields={a: f32[3], b: f32[]})");
}
