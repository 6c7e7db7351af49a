// The op families on a dense TensorDict, a lazy stack and a sub-view holding
// the same values: identical results.
#include "helpers.h"

using namespace tensordict;
using namespace td_test;
using at::indexing::Slice;

namespace {

// The same values three ways. `dense` is batch [3, 4].
struct Kinds {
  TensorDict dense;
  TensorDict lazy;
  TensorDict sub;
};

Kinds make_kinds() {
  TensorDict dense({{"a", iota({3, 4, 2}) / 10.0 + 0.1}, {"b", iota({3, 4}) / 7.0 + 0.2},
                    {"n", TensorDict({{"c", iota({3, 4, 5}) / 30.0 + 0.3}}, {3, 4})}},
                   {3, 4});
  std::vector<TensorDict> rows;
  for (auto& r : dense.clone().unbind(0)) rows.push_back(r);
  TensorDict big(TensorDict(pad(dense.clone(), {1, 2}, 0.5)));  // rows 1..3 hold dense
  return {dense, lazy_stack(rows, 0), big.get_sub_tensordict({Slice(1, 4)})};
}

void require_close(const TensorDict& got, const TensorDict& expected) {
  REQUIRE(got.batch_size() == expected.batch_size());
  REQUIRE(got.keys({.include_nested = true, .leaves_only = true}) == expected.keys({.include_nested = true, .leaves_only = true}));
  for (const auto& key : expected.keys({.include_nested = true, .leaves_only = true})) {
    INFO("key " << key);
    REQUIRE(at::allclose(got.get(key), expected.get(key), 1e-5, 1e-6, true));
  }
}

}  // namespace

TEST_CASE("out-of-place op families agree across kinds") {
  const std::vector<std::pair<std::string, std::function<TensorDict(const TensorDict&)>>> ops = {
      {"exp", [](const TensorDict& t) { return t.exp(); }},
      {"sqrt", [](const TensorDict& t) { return t.sqrt(); }},
      {"isfinite", [](const TensorDict& t) { return t.isfinite(); }},
      {"add scalar", [](const TensorDict& t) { return t.add(2, 3); }},
      {"mul tensor", [](const TensorDict& t) { return t.mul(at::tensor(1.5)); }},
      {"pow td", [](const TensorDict& t) { return t.pow(t.clone()); }},
      {"clamp", [](const TensorDict& t) { return t.clamp(0.3, 0.9); }},
      {"lerp", [](const TensorDict& t) { return t.lerp(t * 2, 0.25); }},
      {"gt", [](const TensorDict& t) { return t > 0.5; }},
      {"where", [](const TensorDict& t) { return t.where(mask({1, 0, 1, 0, 0, 1, 1, 0, 1, 1, 0, 0}).reshape({3, 4}), -1); }},
      {"masked_fill", [](const TensorDict& t) { return t.masked_fill(mask({1, 0, 0, 1, 0, 1, 1, 0, 1, 1, 0, 0}).reshape({3, 4}), 0); }},
      {"sum dim", [](const TensorDict& t) { return t.sum({1}); }},
      {"mean all", [](const TensorDict& t) { return t.mean(); }},
      {"std keepdim", [](const TensorDict& t) { return t.std({0}, {.keepdim = true}); }},
      {"amax", [](const TensorDict& t) { return t.amax({0, 1}); }},
      {"apply", [](const TensorDict& t) { return t.apply([](const at::Tensor& x) { return x * x; }); }},
      {"index int", [](const TensorDict& t) { return t.index({1}); }},
      {"index mask", [](const TensorDict& t) { return t.index({mask({1, 0, 1})}); }},
      {"index long", [](const TensorDict& t) { return t.index({Slice(), at::tensor({3, 0}, at::kLong)}); }},
      {"permute", [](const TensorDict& t) { return t.permute({1, 0}); }},
      {"reshape", [](const TensorDict& t) { return t.reshape({12}); }},
      {"unsqueeze", [](const TensorDict& t) { return t.unsqueeze(1); }},
      {"expand", [](const TensorDict& t) { return t.expand({2, 3, 4}); }},
      {"gather", [](const TensorDict& t) { return t.gather(1, at::zeros({3, 2}, at::kLong)); }},
      {"to double", [](const TensorDict& t) { return t.to(at::kDouble); }},
      {"clone", [](const TensorDict& t) { return t.clone(); }},
      {"split", [](const TensorDict& t) { return t.split(2, 1)[1]; }},
      {"stack", [](const TensorDict& t) { return stack({t, t}, 1); }},
      {"cat", [](const TensorDict& t) { return cat({t, t}, 0); }},
  };
  auto kinds = make_kinds();
  for (const auto& [name, op] : ops) {
    DYNAMIC_SECTION(name) {
      const TensorDict expected = op(kinds.dense);
      require_close(op(kinds.lazy), expected);
      require_close(op(kinds.sub), expected);
    }
  }
  REQUIRE(kinds.lazy.allclose(kinds.dense.clone()));
  REQUIRE(kinds.sub.reduce(Reduction::sum).item<double>() == Approx(kinds.dense.reduce(Reduction::sum).item<double>()));
}

TEST_CASE("in-place op families write through every kind") {
  const std::vector<std::pair<std::string, std::function<void(TensorDict&)>>> ops = {
      {"exp_", [](TensorDict& t) { t.exp_(); }},
      {"add_ scalar", [](TensorDict& t) { t.add_(1.5); }},
      {"mul_ td", [](TensorDict& t) { t.mul_(t.clone()); }},
      {"clamp_", [](TensorDict& t) { t.clamp_(0.4, 0.8); }},
      {"maximum_", [](TensorDict& t) { t.maximum_(0.6); }},
      {"zero_", [](TensorDict& t) { t.zero_(); }},
      {"fill_", [](TensorDict& t) { t.fill_(3); }},
      {"apply_", [](TensorDict& t) { t.apply_([](const at::Tensor& x) { return x + 1; }); }},
      {"masked_fill_", [](TensorDict& t) { t.masked_fill_(mask({0, 1, 1, 0, 0, 1, 0, 0, 1, 1, 0, 1}).reshape({3, 4}), -2); }},
      {"index_put_", [](TensorDict& t) { t.index_put_({Slice(), 2}, 9); }},
      {"set_", [](TensorDict& t) { t.set_("b", at::full({3, 4}, 4.0)); }},
      {"update_", [](TensorDict& t) { t.update_(t.apply([](const at::Tensor& x) { return -x; })); }},
  };
  for (const auto& [name, op] : ops) {
    DYNAMIC_SECTION(name) {
      auto kinds = make_kinds();
      TensorDict dense = kinds.dense;
      op(dense);
      op(kinds.lazy);
      op(kinds.sub);
      require_close(kinds.lazy, kinds.dense);
      require_close(kinds.sub, kinds.dense);
      // The writes reached the storage behind the views.
      require_close(stack(LazyStackedTensorDict(kinds.lazy).tensordicts(), 0), kinds.dense);
      require_close(TensorDict(SubTensorDict(kinds.sub).source().index({Slice(1, 4)})), kinds.dense);
    }
  }
}
