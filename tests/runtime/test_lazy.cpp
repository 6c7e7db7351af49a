// LazyStackedTensorDict: heterogeneous members, lazy indexing, write-through.
#include "helpers.h"

using namespace tensordict;
using namespace td_test;
using Catch::Matchers::Contains;
using Catch::Matchers::StartsWith;
using at::indexing::Ellipsis;
using at::indexing::Slice;

namespace {
// Three members of batch [4]: "obs" [4, 3] everywhere, "extra" only in
// member 1, "img" of different feature shapes, a nested level everywhere.
std::vector<TensorDict> members() {
  std::vector<TensorDict> out;
  for (int64_t i = 0; i < 3; ++i) {
    TensorDict m({{"obs", iota({4, 3}) + 100 * i}, {"img", at::zeros({4, 2 + i})}, {"n", TensorDict({{"x", iota({4}) * (i + 1)}}, {4})}},
                 {4});
    if (i == 1) m.set("extra", at::ones({4}));
    out.push_back(m);
  }
  return out;
}
}  // namespace

TEST_CASE("a lazy stack keeps its members, their common keys and the exclusive ones") {
  auto ms = members();
  auto lazy = lazy_stack(ms, 0);
  REQUIRE(lazy.batch_size() == at::IntArrayRef({3, 4}));
  REQUIRE(lazy.stack_dim() == 0);
  REQUIRE(lazy.keys() == std::vector<NestedKey>{"obs", "img", "n"});
  REQUIRE(lazy.exclusive_keys() == std::vector<std::vector<std::string>>{{}, {"extra"}, {}});
  REQUIRE(lazy.tensordicts()[1].impl() == ms[1].impl());
  REQUIRE(at::equal(lazy.get("obs"), at::stack({ms[0].get("obs"), ms[1].get("obs"), ms[2].get("obs")})));
  REQUIRE(lazy_stack(ms, 1).batch_size() == at::IntArrayRef({4, 3}));
  REQUIRE(at::equal(lazy_stack(ms, -1).get("obs"), at::stack({ms[0].get("obs"), ms[1].get("obs"), ms[2].get("obs")}, 1)));
}

TEST_CASE("entries of different shapes: a clear error, get_list and get_padded") {
  auto lazy = lazy_stack(members());
  REQUIRE_THAT(TD_MESSAGE(lazy.get("img")), Contains("cannot stack key 'img': tensordict 0 holds shape [4, 2] but tensordict 1 holds [4, 3]") &&
                                                Contains("get_list() or get_padded()"));
  auto list = lazy.get_list("img");
  REQUIRE(list[2].sizes() == at::IntArrayRef({4, 4}));
  auto padded = lazy.get_padded("img", -1);
  REQUIRE(padded.sizes() == at::IntArrayRef({3, 4, 4}));
  REQUIRE(padded.index({0, Slice(), Slice(2, None)}).eq(-1).all().item<bool>());
  REQUIRE(padded.index({2}).eq(0).all().item<bool>());
  REQUIRE_THAT(TD_MESSAGE(lazy_stack({sample({2}), sample({3, 1})})),
               Contains("lazy_stack: tensordict 1 has batch size [3, 1] but tensordict 0 has [2]; the members of a lazy stack have as many batch dims"));
  REQUIRE_THAT(TD_MESSAGE(lazy_stack({})), Contains("lazy_stack: items cannot be empty"));
}

TEST_CASE("the lazy repr shows exclusive fields and the stack dim") {
  auto lazy = lazy_stack(members());
  // tensordict 0.15.3 on the same members (run in the test venv)
  CHECK(repr(lazy) ==
        "LazyStackedTensorDict(batch_size=[3,4], stack_dim=0, fields={\n"
        "    img: f32[-1],\n"
        "    n: {x: f32[]},\n"
        "    obs: f32[3]}, exclusive_fields={1: {extra: f32[]}})");
  CHECK(repr(lazy_stack({sample({2}), sample({2})}, 1)) ==
        "LazyStackedTensorDict(batch_size=[2,2], stack_dim=1, fields={\n"
        "    a: f32[4],\n"
        "    b: i64[],\n"
        "    nested: {c: f32[2,3]}})");
  set_printoptions detailed({.compact = false});
  const std::string text = repr(lazy);
  REQUIRE_THAT(text, StartsWith("LazyStackedTensorDict(\n    fields={\n"));
  REQUIRE_THAT(text, Contains("        img: Tensor(shape=torch.Size([3, 4, -1]), device=cpu, dtype=torch.float32, is_shared=False),"));
  REQUIRE_THAT(text, Contains("    exclusive_fields={\n        1 ->\n            extra: Tensor(shape=torch.Size([4]), device=cpu, dtype=torch.float32, is_shared=False)},\n"));
  REQUIRE_THAT(text, Contains("    is_shared=False,\n    stack_dim=0)"));
  REQUIRE_THAT(repr(lazy_stack({sample({2}), sample({2})}, 1)), Contains("    exclusive_fields={\n    },\n"));
}

TEST_CASE("indexing along the stack dim selects members without copying") {
  auto ms = members();
  auto lazy = lazy_stack(ms, 0);
  auto one = lazy.index({1});
  REQUIRE(one.impl() == ms[1].impl());  // the member itself
  auto neg = lazy.index({-1});
  REQUIRE(neg.impl() == ms[2].impl());
  auto two = LazyStackedTensorDict(lazy.index({Slice(1, None)}));
  REQUIRE(two.tensordicts().size() == 2);
  REQUIRE(two.tensordicts()[0].impl() == ms[1].impl());
  auto picked = LazyStackedTensorDict(lazy.index({at::tensor({2, 0}, at::kLong)}));
  REQUIRE(picked.tensordicts()[0].impl() == ms[2].impl());
  auto masked = LazyStackedTensorDict(lazy.index({mask({1, 0, 1})}));
  REQUIRE(masked.batch_size() == at::IntArrayRef({2, 4}));
  REQUIRE(masked.tensordicts()[1].impl() == ms[2].impl());
}

TEST_CASE("indexing across other dims stays lazy and matches torch's batch sizes") {
  auto lazy = lazy_stack(members(), 1);  // batch [4, 3]
  auto dense_obs = lazy.get("obs");
  auto check = [&](at::ArrayRef<TensorIndex> idx) {
    auto out = lazy.index(idx);
    REQUIRE(out.batch_size() == at::zeros({4, 3}).index(idx).sizes().vec());
    REQUIRE(at::equal(out.get("obs"), dense_obs.index(idx)));
  };
  check({0});
  check({Slice(1, 3)});
  check({at::tensor({3, 1}, at::kLong)});
  check({mask({1, 0, 0, 1})});
  check({Slice(), 2});
  check({Slice(), Slice(0, 2)});
  check({2, 1});
  // "..." stands for batch dims only.
  REQUIRE(at::equal(lazy.index({Ellipsis, Slice(0, 2)}).get("obs"), dense_obs.index({Slice(), Slice(0, 2)})));
  REQUIRE(lazy.index({0}).kind() == Kind::LazyStack);
  REQUIRE_THAT(TD_MESSAGE(lazy.index({7})), Contains("index 7 is out of range for batch dim 0 of size 4"));
}

TEST_CASE("set, set_ and indexed writes reach the members") {
  auto ms = members();
  auto lazy = lazy_stack(ms, 0);
  lazy.set("obs", at::full({3, 4, 3}, 7.0));
  for (const auto& m : ms) REQUIRE(m.get("obs").eq(7).all().item<bool>());
  lazy.set("new", at::arange(12).reshape({3, 4}));
  REQUIRE(at::equal(ms[2].get("new"), at::arange(8, 12)));
  lazy.set_({"n", "x"}, at::zeros({3, 4}));
  REQUIRE(ms[1].get({"n", "x"}).eq(0).all().item<bool>());
  // Indexed writes go through stacked entries: members that differ in shape
  // at some key cannot take them, and say so.
  REQUIRE_THAT(TD_MESSAGE(lazy.index_put_({Slice(), 0}, 5)), Contains("cannot stack key 'img'"));
  lazy.del_("img");
  lazy.index_put_({Slice(), 0}, 5);
  REQUIRE(ms[0].get("obs").index({0}).eq(5).all().item<bool>());
  REQUIRE(ms[2].get({"n", "x"}).index({0}).item<float>() == 5);
  REQUIRE(ms[2].get({"n", "x"}).index({1}).item<float>() == 0);
  lazy.set_at_("new", at::full({3}, -1, at::kLong), {Slice(), 3});
  REQUIRE(ms[1].get("new").index({3}).item<int64_t>() == -1);
  lazy.add_(1);  // in-place math writes back into the members
  REQUIRE(ms[0].get("obs").index({1}).eq(8).all().item<bool>());
  lazy.del_("new");
  REQUIRE_FALSE(ms[0].contains("new"));
}

TEST_CASE("nested lazy stacks, densifying, unbind, append, maybe_dense_stack") {
  auto ms = members();
  auto lazy = lazy_stack(ms, 0);
  auto nested = LazyStackedTensorDict(lazy.get_td("n"));
  REQUIRE(nested.batch_size() == at::IntArrayRef({3, 4}));
  REQUIRE(nested.tensordicts()[1].impl() == ms[1].get_td("n").impl());
  auto of_lazy = lazy_stack({lazy, lazy.clone()}, 0);
  REQUIRE(of_lazy.batch_size() == at::IntArrayRef({2, 3, 4}));
  REQUIRE(at::equal(of_lazy.get({"n", "x"}).index({1}), lazy.get({"n", "x"})));

  TensorDict dense = lazy.exclude({"img"}).contiguous();
  REQUIRE(dense.kind() == Kind::Dense);
  REQUIRE(dense.keys({.include_nested = true, .leaves_only = true}) == std::vector<NestedKey>{"obs", {"n", "x"}});
  REQUIRE(at::equal(dense.get("obs"), lazy.get("obs")));
  auto parts = lazy.unbind(0);
  REQUIRE(parts[2].impl() == ms[2].impl());

  lazy.append(ms[0].clone());
  REQUIRE(lazy.batch_size() == at::IntArrayRef({4, 4}));
  lazy.insert(0, ms[1]);
  REQUIRE(lazy.tensordicts()[0].impl() == ms[1].impl());
  REQUIRE_THAT(TD_MESSAGE(lazy.append(sample({5}))), Contains("new_value has batch_size=[5]"));

  REQUIRE(maybe_dense_stack({sample({2}), sample({2})}).kind() == Kind::Dense);
  REQUIRE(maybe_dense_stack(members()).kind() == Kind::LazyStack);
}

TEST_CASE("clone, to and apply keep the stack lazy, lock reaches the members") {
  auto ms = members();
  auto lazy = lazy_stack(ms, 0);
  LazyStackedTensorDict c(lazy.clone());
  REQUIRE(c.tensordicts().size() == 3);
  REQUIRE(c.tensordicts()[0].get("obs").data_ptr() != ms[0].get("obs").data_ptr());
  LazyStackedTensorDict d(lazy.to(at::kDouble));
  REQUIRE(d.get_list("img")[1].scalar_type() == at::kDouble);
  LazyStackedTensorDict doubled(lazy.apply([](const at::Tensor& t) { return t * 2; }));
  REQUIRE(at::equal(doubled.get_list("img")[2], ms[2].get("img") * 2));
  REQUIRE(LazyStackedTensorDict(lazy.clone({.recurse = false})).tensordicts()[0].get("obs").data_ptr() == ms[0].get("obs").data_ptr());
  lazy.lock_();
  REQUIRE(ms[0].is_locked());
  REQUIRE_THAT(TD_MESSAGE(lazy.set("brand_new", at::zeros({3, 4}))), Contains("Cannot modify locked TensorDict"));
  lazy.unlock_();
  REQUIRE_FALSE(ms[2].is_locked());
  REQUIRE_THAT(TD_MESSAGE(lazy.set_batch_size({3})), Contains("takes its batch size and device from its members"));
}
