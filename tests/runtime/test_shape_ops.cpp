// Shape ops over batch dims, each compared with the same op on the leaves.
#include "helpers.h"

using namespace tensordict;
using namespace td_test;
using Catch::Matchers::Contains;

namespace {

// {"x": [2, 3, 4] + [5], "n": {"y": [2, 3, 4, 6, 7] with batch [2, 3, 4, 6]}} over batch [2, 3, 4].
TensorDict three_dims() {
  return TensorDict({{"x", iota({2, 3, 4, 5})}, {"n", TensorDict({{"y", iota({2, 3, 4, 6, 7})}}, {2, 3, 4, 6})}}, {2, 3, 4});
}

void require_leaves(const TensorDict& out, const at::Tensor& x, const at::Tensor& y) {
  REQUIRE(at::equal(out.get("x"), x));
  REQUIRE(at::equal(out.get({"n", "y"}), y));
}

}  // namespace

TEST_CASE("reshape and view") {
  auto td = three_dims();
  auto x = td.get("x");
  auto y = td.get({"n", "y"});
  auto r = td.reshape({6, -1});
  REQUIRE(r.batch_size() == at::IntArrayRef({6, 4}));
  REQUIRE(r.get_td("n").batch_size() == at::IntArrayRef({6, 4, 6}));
  require_leaves(r, x.reshape({6, 4, 5}), y.reshape({6, 4, 6, 7}));
  auto v = td.view({24});
  REQUIRE(v.batch_size() == at::IntArrayRef({24}));
  require_leaves(v, x.view({24, 5}), y.view({24, 6, 7}));
  REQUIRE_THAT(TD_MESSAGE(td.reshape({5, -1})), Contains("reshape: shape [5, -1] is invalid for a batch size [2, 3, 4]"));
  auto t = td.transpose(0, 1);
  REQUIRE_THAT(TD_MESSAGE(t.view({24})), Contains("view failed for key 'x'"));
}

TEST_CASE("permute and transpose act on batch dims only") {
  auto td = three_dims();
  auto x = td.get("x");
  auto y = td.get({"n", "y"});
  auto p = td.permute({2, 0, -2});
  REQUIRE(p.batch_size() == at::IntArrayRef({4, 2, 3}));
  REQUIRE(p.get_td("n").batch_size() == at::IntArrayRef({4, 2, 3, 6}));
  require_leaves(p, x.permute({2, 0, 1, 3}), y.permute({2, 0, 1, 3, 4}));
  auto t = td.transpose(-1, 0);
  REQUIRE(t.batch_size() == at::IntArrayRef({4, 3, 2}));
  require_leaves(t, x.transpose(2, 0), y.transpose(2, 0));
  REQUIRE_THAT(TD_MESSAGE(td.permute({0, 1})), Contains("permute: got 2 dims [0, 1] for 3 batch dims"));
  REQUIRE_THAT(TD_MESSAGE(td.permute({0, 0, 1})), Contains("dim 0 is repeated"));
  REQUIRE_THAT(TD_MESSAGE(td.permute({0, 1, 3})), Contains("permute: dim 3 is out of range for a tensordict with 3 batch dims"));
  REQUIRE_THAT(TD_MESSAGE(td.transpose(0, 3)), Contains("transpose: dim 3 is out of range") && Contains("[-3, 2]"));
}

TEST_CASE("squeeze and unsqueeze") {
  TensorDict td({{"x", iota({1, 3, 1, 5})}}, {1, 3, 1});
  auto all = td.squeeze();
  REQUIRE(all.batch_size() == at::IntArrayRef({3}));
  REQUIRE(at::equal(all.get("x"), iota({1, 3, 1, 5}).squeeze(2).squeeze(0)));
  REQUIRE(td.squeeze(-1).batch_size() == at::IntArrayRef({1, 3}));
  REQUIRE(td.squeeze(1).batch_size() == at::IntArrayRef({1, 3, 1}));  // not of size 1: unchanged, as torch
  TensorDict one({{"x", iota({2, 1})}}, {2});
  REQUIRE(one.squeeze().get("x").sizes() == at::IntArrayRef({2, 1}));  // feature dims are never squeezed

  auto u = td.unsqueeze(-1);
  REQUIRE(u.batch_size() == at::IntArrayRef({1, 3, 1, 1}));
  REQUIRE(at::equal(u.get("x"), iota({1, 3, 1, 5}).unsqueeze(3)));
  REQUIRE(td.unsqueeze(0).batch_size() == at::IntArrayRef({1, 1, 3, 1}));
  REQUIRE(td.unsqueeze(3).batch_size() == at::IntArrayRef({1, 3, 1, 1}));
  REQUIRE_THAT(TD_MESSAGE(td.unsqueeze(5)), Contains("unsqueeze: dim 5 is out of range") && Contains("[-4, 3]"));
  REQUIRE_THAT(TD_MESSAGE(td.squeeze(3)), Contains("squeeze: dim 3 is out of range"));
}

TEST_CASE("expand broadcasts the batch dims") {
  TensorDict td({{"x", iota({3, 1, 2})}, {"n", TensorDict({{"y", iota({3, 1, 4})}}, {3, 1, 4})}}, {3, 1});
  auto e = td.expand({5, 3, 6});
  REQUIRE(e.batch_size() == at::IntArrayRef({5, 3, 6}));
  REQUIRE(e.get_td("n").batch_size() == at::IntArrayRef({5, 3, 6, 4}));
  REQUIRE(at::equal(e.get("x"), iota({3, 1, 2}).expand({5, 3, 6, 2})));
  REQUIRE(at::equal(e.get({"n", "y"}), iota({3, 1, 4}).expand({5, 3, 6, 4})));
  REQUIRE(td.expand({-1, 2}).batch_size() == at::IntArrayRef({3, 2}));
  REQUIRE_THAT(TD_MESSAGE(td.expand({4, 2})), Contains("expand: batch size [3, 1] cannot be expanded to [4, 2]"));
  REQUIRE_THAT(TD_MESSAGE(td.expand({2})), Contains("cannot be expanded to [2]"));
}

TEST_CASE("flatten and unflatten") {
  auto td = three_dims();
  auto x = td.get("x");
  auto y = td.get({"n", "y"});
  auto f = td.flatten(1, 2);
  REQUIRE(f.batch_size() == at::IntArrayRef({2, 12}));
  REQUIRE(f.get_td("n").batch_size() == at::IntArrayRef({2, 12, 6}));
  require_leaves(f, x.flatten(1, 2), y.flatten(1, 2));
  REQUIRE(td.flatten().batch_size() == at::IntArrayRef({24}));
  auto u = f.unflatten(1, {3, -1});
  REQUIRE(u.batch_size() == at::IntArrayRef({2, 3, 4}));
  require_leaves(u, x, y);
  REQUIRE_THAT(TD_MESSAGE(td.flatten(2, 1)), Contains("start_dim 2 comes after end_dim 1"));
  REQUIRE_THAT(TD_MESSAGE(TensorDict({{"a", at::zeros({2})}}, {}).flatten(1)),
               Contains("flatten: dim 1 is out of range for a tensordict with 0 batch dims"));
  REQUIRE_THAT(TD_MESSAGE(f.unflatten(1, {5, -1})), Contains("unflatten: shape [5, -1] is invalid"));
}

TEST_CASE("unbind, split and chunk give the pieces torch gives") {
  auto td = three_dims();
  auto x = td.get("x");
  auto y = td.get({"n", "y"});
  auto parts = td.unbind(1);
  REQUIRE(parts.size() == 3);
  for (int64_t i = 0; i < 3; ++i) {
    REQUIRE(parts[i].batch_size() == at::IntArrayRef({2, 4}));
    REQUIRE(parts[i].get_td("n").batch_size() == at::IntArrayRef({2, 4, 6}));
    require_leaves(parts[i], x.select(1, i), y.select(1, i));
  }
  auto s = td.split(3, -1);
  auto xs = x.split(3, 2);
  REQUIRE(s.size() == xs.size());
  for (std::size_t i = 0; i < s.size(); ++i) REQUIRE(at::equal(s[i].get("x"), xs[i]));
  REQUIRE(s[1].batch_size() == at::IntArrayRef({2, 3, 1}));
  auto sw = td.split(std::vector<int64_t>{1, 3}, 2);
  REQUIRE(sw[1].batch_size() == at::IntArrayRef({2, 3, 3}));
  REQUIRE(at::equal(sw[1].get({"n", "y"}), y.split_with_sizes({1, 3}, 2)[1]));
  for (int64_t chunks : {1, 2, 3, 4, 5}) {
    auto c = td.chunk(chunks, 2);
    auto xc = x.chunk(chunks, 2);
    REQUIRE(c.size() == xc.size());
    for (std::size_t i = 0; i < c.size(); ++i) REQUIRE(at::equal(c[i].get("x"), xc[i]));
  }
  TensorDict empty_dim({{"x", at::zeros({0, 2})}}, {0});
  REQUIRE(empty_dim.split(2).size() == at::zeros({0, 2}).split(2).size());
  REQUIRE(empty_dim.chunk(3).size() == at::zeros({0, 2}).chunk(3).size());
  REQUIRE(empty_dim.unbind(0).empty());
  REQUIRE_THAT(TD_MESSAGE(td.split(std::vector<int64_t>{1, 1}, 2)), Contains("split: sizes [1, 1] sum to 2 but batch dim 2 has size 4"));
  REQUIRE_THAT(TD_MESSAGE(td.split(0, 2)), Contains("split_size must be positive"));
  REQUIRE_THAT(TD_MESSAGE(td.chunk(0)), Contains("chunks must be positive"));
  REQUIRE_THAT(TD_MESSAGE(td.unbind(3)), Contains("unbind: dim 3 is out of range"));
}

TEST_CASE("shape ops share the source's storage where torch does") {
  auto td = three_dims();
  auto p = td.permute({1, 0, 2});
  p.get("x").fill_(3);
  REQUIRE(td.get("x").eq(3).all().item<bool>());
}
