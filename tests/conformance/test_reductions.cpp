// Ports of tensordict's reduction tests over the fixture kinds: quantile and
// cummax/cummin (test_generic.py::test_quantile,
// test_methods.py::test_min_max_cummin_cummax).
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
