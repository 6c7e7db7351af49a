// Ports of tensordict's reduction tests over the fixture kinds: quantile,
// cummax/cummin and the feature reductions (test_generic.py::test_quantile,
// test_reduction_feature, test_reduction_feature_full;
// test_methods.py::test_min_max_cummin_cummax, test_reduction_feature).
#include "fixtures.h"

using namespace conformance;
using tensordict::NestedKey;

TEST_CASE("quantile over a batch dim or every element, per leaf (test_generic.py::test_quantile)", "[conformance][test_generic.py]") {
  TensorDict td({{"a", at::randn({3, 4, 5})}}, {3, 4});
  td.set({"b", "c"}, at::randn({3, 4, 5, 6}));
  const TensorDict whole = td.quantile(0.5);
  CHECK(whole.batch_size().empty());
  CHECK(whole.get("a").dim() == 0);
  CHECK(whole.get("a").allclose(at::quantile(td.get("a"), 0.5)));
  const TensorDict over0 = td.quantile(0.5, 0);
  CHECK(over0.batch_size() == at::IntArrayRef({4}));
  CHECK(over0.get("a").sizes() == at::IntArrayRef({4, 5}));
  CHECK(over0.get({"b", "c"}).allclose(at::quantile(td.get({"b", "c"}), 0.5, 0)));
  const TensorDict kept = td.quantile(0.25, 0, {.keepdim = true, .interpolation = "lower"});
  CHECK(kept.batch_size() == at::IntArrayRef({1, 4}));
  CHECK(kept.get("a").allclose(at::quantile(td.get("a"), 0.25, 0, true, "lower")));
  CHECK_THROWS_WITH(td.quantile(0.5, 2), Catch::Contains("quantile"));
  CHECK_THROWS_AS(td.quantile(0.5, 0, {.keepdim = false, .interpolation = "cubic"}), std::runtime_error);
}

// test_quantile's "multiple quantiles" asserts batch size [4] for q of three
// quantiles over dim 0; tensordict 0.15.3 run on this tensordict gives [3, 4]
// (a leading dim of size len(q)), which this port checks, with each leaf
// [3, 4, 5] as the Python test says.
TEST_CASE("quantile with a 1-d tensor of quantiles over a batch dim (test_generic.py::test_quantile)",
          "[conformance][test_generic.py]") {
  TensorDict td({{"a", at::randn({3, 4, 5})}}, {3, 4});
  td.set("b", TensorDict({{"c", at::randn({3, 4, 5, 6})}, {"d", at::randn({3, 4, 5})}}, {3, 4, 5}));
  const at::Tensor quantiles = at::tensor({0.25f, 0.5f, 0.75f});
  const TensorDict multi = td.quantile(quantiles, 0);
  CHECK(multi.batch_size() == at::IntArrayRef({3, 4}));
  CHECK(multi.get("a").sizes() == at::IntArrayRef({3, 4, 5}));
  CHECK(multi.get_td("b").batch_size() == at::IntArrayRef({3, 4, 5}));
  for (const auto& key : td.keys({.include_nested = true, .leaves_only = true})) {
    CAPTURE(key.repr());
    CHECK(multi.get(key).equal(at::quantile(td.get(key), quantiles, 0)));
  }
}

TEST_CASE("cummax and cummin give values and indices with the batch size kept (test_methods.py::test_min_max_cummin_cummax)",
          "[conformance][test_methods.py]") {
  for (const char* name : {"td", "nested_td", "stacked_td", "sub_td", "permute_td", "memmap_td"}) {
    CAPTURE(name);
    Fixture f = make_fixture(name);
    for (int64_t dim : {0, 2, -1}) {
      CAPTURE(dim);
      const auto [values, indices] = f.td.cummax(dim);
      const auto [min_values, min_indices] = f.td.cummin(dim);
      CHECK(values.batch_size() == f.td.batch_size());
      CHECK(indices.batch_size() == f.td.batch_size());
      const int64_t d = dim < 0 ? dim + f.td.batch_dims() : dim;
      for (const auto& key : f.td.keys({.include_nested = true, .leaves_only = true})) {
        CAPTURE(key.repr());
        const auto expected = at::cummax(f.td.get(key), d);
        CHECK(values.get(key).equal(std::get<0>(expected)));
        CHECK(indices.get(key).equal(std::get<1>(expected)));
        CHECK(min_values.get(key).equal(std::get<0>(at::cummin(f.td.get(key), d))));
        CHECK(min_indices.get(key).equal(std::get<1>(at::cummin(f.td.get(key), d))));
      }
    }
  }
}

TEST_CASE("max and min over a dim give values and indices, without a dim, values (test_methods.py::test_min_max_cummin_cummax)",
          "[conformance][test_methods.py]") {
  for (const char* name : {"td", "nested_td", "stacked_td", "sub_td", "permute_td", "memmap_td"}) {
    CAPTURE(name);
    Fixture f = make_fixture(name);
    for (int64_t dim : {0, 2, -1}) {
      for (bool keepdim : {false, true}) {
        CAPTURE(dim, keepdim);
        const auto [values, indices] = f.td.max(dim, {.keepdim = keepdim});
        const auto [min_values, min_indices] = f.td.min(dim, {.keepdim = keepdim});
        const int64_t d = dim < 0 ? dim + f.td.batch_dims() : dim;
        std::vector<int64_t> batch = f.td.batch_size().vec();
        if (keepdim) {
          batch[d] = 1;
        } else {
          batch.erase(batch.begin() + d);
        }
        CHECK(values.batch_size() == at::IntArrayRef(batch));
        CHECK(indices.batch_size() == at::IntArrayRef(batch));
        for (const auto& key : f.td.keys({.include_nested = true, .leaves_only = true})) {
          CAPTURE(key.repr());
          const auto expected = at::max(f.td.get(key), d, keepdim);
          CHECK(values.get(key).equal(std::get<0>(expected)));
          CHECK(indices.get(key).equal(std::get<1>(expected)));
          CHECK(min_values.get(key).equal(std::get<0>(at::min(f.td.get(key), d, keepdim))));
          CHECK(min_indices.get(key).equal(std::get<1>(at::min(f.td.get(key), d, keepdim))));
          // min(dim, keepdim) values are amin's (tensordict's return_indices=False).
          CHECK(min_values.get(key).equal(f.td.amin({dim}, {.keepdim = keepdim}).get(key)));
        }
      }
    }
    // No dim: every leaf reduced whole, batch size [].
    const TensorDict whole = f.td.max();
    CHECK(whole.batch_size().empty());
    CHECK(whole.get("a").equal(f.td.get("a").max()));
  }
  TensorDict td({{"a", at::zeros({2, 3})}}, {2, 3});
  CHECK_THROWS_WITH(td.max(2), Catch::Contains("max"));
}

namespace {

// The reductions tensordict's feature tests run, as (name, over the feature
// dims, reduce=True over dims, reduce=True over the feature dims): a function
// per form, as the forms are overloads.
struct NamedReduction {
  const char* name;
  std::function<TensorDict(const TensorDict&)> features;
  std::function<at::Tensor(const TensorDict&, std::vector<int64_t>)> together;
  std::function<at::Tensor(const TensorDict&)> together_features;
};

std::vector<NamedReduction> test_reductions() {
  using tensordict::Reduction;
  std::vector<NamedReduction> out;
#define CONF_REDUCTION(name)                                                                                      \
  out.push_back({#name,                                                                                           \
                 [](const TensorDict& td) { return td.name(tensordict::feature); },                               \
                 [](const TensorDict& td, std::vector<int64_t> dims) { return td.reduce(Reduction::name, dims); }, \
                 [](const TensorDict& td) { return td.reduce(Reduction::name, tensordict::feature); }});
  CONF_REDUCTION(mean)
  CONF_REDUCTION(nanmean)
  CONF_REDUCTION(sum)
  CONF_REDUCTION(nansum)
  CONF_REDUCTION(prod)
  CONF_REDUCTION(std)
  CONF_REDUCTION(var)
#undef CONF_REDUCTION
  out.push_back({"quantile",
                 [](const TensorDict& td) { return td.quantile(0.5, tensordict::feature); },
                 [](const TensorDict& td, std::vector<int64_t> dims) {
                   return td.reduce_quantile(0.5, dims.empty() ? std::nullopt : std::optional<int64_t>(dims[0]));
                 },
                 [](const TensorDict& td) { return td.reduce_quantile(0.5, tensordict::feature); }});
  return out;
}

// libtorch's reduction `name` of `t` over `dim` (std and var with the
// default correction, 1): the expected leaf, computed without the tensordict.
at::Tensor expected_over(const std::string& name, const at::Tensor& t, int64_t dim) {
  const at::IntArrayRef dims(dim);
  if (name == "mean") return t.mean(dims);
  if (name == "nanmean") return at::nanmean(t, dims);
  if (name == "sum") return t.sum(dims);
  if (name == "nansum") return at::nansum(t, dims);
  if (name == "prod") return t.prod(dim);
  if (name == "std") return t.std(dims, true);
  if (name == "var") return t.var(dims, true);
  return at::quantile(t, 0.5, dim);
}

}  // namespace

TEST_CASE("reductions over the feature dims keep the batch size, on every kind (test_methods.py::test_reduction_feature)",
          "[conformance][test_methods.py]") {
  for (const auto& red : test_reductions()) {
    for_each_fixture([&](const std::string&, TensorDict& fixture) {
      INFO(red.name);
      const TensorDict td = fixture.to_float();  // tensordict's _to_float
      const TensorDict tdr = red.features(td);
      CHECK(tdr.batch_size() == td.batch_size());
      const at::Tensor tensor = red.together_features(td);
      CHECK(tensor.sizes() == td.batch_size());
      // "a" [..., 5]: its one feature dim reduced.
      CHECK(tdr.get("a").sizes() == td.batch_size());
      CHECK(at::allclose(tdr.get("a"), expected_over(red.name, td.get("a"), -1), 1e-5, 1e-6, true));
    });
  }
}

namespace {
// test_generic.py's tensordict for the feature reductions: a nested level
// with a batch dim of its own (its None entries have no C++ counterpart).
TensorDict feature_td(bool with_e) {
  TensorDict b({{"c", at::ones({3, 4, 5, 6, 7})}, {"d", at::ones({3, 4, 5, 6})}}, {3, 4, 5});
  if (with_e) b.set("e", at::ones({3, 4, 5}));
  TensorDict td({{"a", at::ones({3, 4, 5, 6})}, {"b", b}}, {3, 4});
  if (with_e) td.set("f", at::ones({3, 4}));
  return td;
}
}  // namespace

TEST_CASE("a feature reduction reduces each level's own feature dims (test_generic.py::test_reduction_feature)",
          "[conformance][test_generic.py]") {
  for (const auto& red : test_reductions()) {
    INFO(red.name);
    const std::string name = red.name;
    const TensorDict td = feature_td(name != "std" && name != "var");
    const TensorDict tdr = red.features(td);
    for (const auto& [key, value] : td.items({.include_nested = true})) {
      CAPTURE(key.repr());
      if (value.is_tensordict()) {
        CHECK(tdr.get_td(key).batch_size() == value.tensordict().batch_size());
      } else if (key.size() == 1) {
        CHECK(tdr.get(key).sizes() == td.batch_size());
      } else {
        CHECK(tdr.get(key).sizes() == td.get_td(key[0]).batch_size());
      }
    }
  }
}

TEST_CASE("a feature reduction with reduce=True gives the batch shape, one over a dim joins along it "
          "(test_generic.py::test_reduction_feature_full)",
          "[conformance][test_generic.py]") {
  for (const auto& red : test_reductions()) {
    INFO(red.name);
    const std::string name = red.name;
    CHECK(red.together_features(feature_td(name != "std" && name != "var")).sizes() == at::IntArrayRef({3, 4}));
    TensorDict b({{"c", at::ones({3, 4, 5})}, {"d", at::ones({3, 4, 5})}}, {3, 4, 5});
    const TensorDict td({{"a", at::ones({3, 4, 5})}, {"b", b}}, {3, 4});
    CHECK(red.together_features(td).sizes() == at::IntArrayRef({3, 4}));
    CHECK(red.together(td, {1}).sizes() == at::IntArrayRef({3, 5}));
  }
}

TEST_CASE("quantile over the feature dims, with keepdim and reduce=True (test_generic.py::test_quantile)",
          "[conformance][test_generic.py]") {
  TensorDict td({{"a", at::randn({3, 4, 5})}}, {3, 4});
  td.set("b", TensorDict({{"c", at::randn({3, 4, 5, 6})}, {"d", at::randn({3, 4, 5})}}, {3, 4, 5}));
  const at::Tensor median = td.reduce_quantile(0.5);
  CHECK(median.dim() == 0);
  const at::Tensor all = at::cat({td.get("a").reshape({-1}), td.get({"b", "c"}).reshape({-1}), td.get({"b", "d"}).reshape({-1})});
  CHECK(median.allclose(at::quantile(all, 0.5)));
  const TensorDict features = td.quantile(0.5, tensordict::feature);
  CHECK(features.batch_size() == at::IntArrayRef({3, 4}));
  CHECK(features.get("a").sizes() == at::IntArrayRef({3, 4}));
  CHECK(features.get("a").allclose(at::quantile(td.get("a"), 0.5, -1)));
  const TensorDict kept = td.quantile(0.5, 0, {.keepdim = true});
  CHECK(kept.batch_size() == at::IntArrayRef({1, 4}));
  CHECK(kept.get("a").sizes() == at::IntArrayRef({1, 4, 5}));
}
