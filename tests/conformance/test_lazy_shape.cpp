// Ports of tensordict's tests of a top-level lazy stack's shape and key ops
// (test_lazy.py, and _lazy.py's rules where no test covers a case): select,
// exclude, permute, transpose, squeeze, unsqueeze, expand, split and cat keep
// a lazy stack lazy, member by member, so members that differ in keys and
// shapes go through them. Expected values are the members' own tensors under
// the same op.
#include "fixtures.h"

using namespace conformance;
using tensordict::LazyStackedTensorDict;

namespace {

TensorDict member(const TensorDict& td, std::size_t i) { return LazyStackedTensorDict(td).tensordicts().at(i); }

at::Tensor values(std::vector<int64_t> shape, double start) {
  int64_t n = 1;
  for (int64_t s : shape) n *= s;
  return at::arange(n, at::kFloat).add(start).view(shape);
}

// Two members of batch [3, 4] whose "x" differs in its feature dim and whose
// own keys differ; "y" is shared. Stacked at `stack_dim`.
LazyStackedTensorDict hetero(int64_t stack_dim) {
  TensorDict m0({{"x", values({3, 4, 2}, 0)}, {"y", values({3, 4}, 100)}, {"only0", values({3, 4}, 200)}}, {3, 4});
  TensorDict m1({{"x", values({3, 4, 5}, 300)}, {"y", values({3, 4}, 400)}, {"only1", values({3, 4}, 500)}}, {3, 4});
  return tensordict::lazy_stack({m0, m1}, stack_dim);
}

// test_cat_mixed_lazy_*'s members: two [2, 3] tensordicts whose "a" is all i.
std::vector<TensorDict> filled_members() {
  std::vector<TensorDict> members;
  for (int64_t i = 0; i < 2; ++i) members.push_back(TensorDict({{"a", at::full({2, 3}, static_cast<double>(i))}}, {2, 3}));
  return members;
}

}  // namespace

TEST_CASE("select and exclude of a lazy stack select in each member and share its tensors (_lazy.py:2421 _select, _exclude)",
          "[conformance][test_lazy.py]") {
  const auto lazy = hetero(0);
  const auto picked = lazy.select({"x"});
  REQUIRE(is_lazy(picked));
  CHECK(picked.batch_size() == lazy.batch_size());
  CHECK(picked.keys().size() == 1);
  CHECK(picked.contains("x"));
  for (std::size_t i = 0; i < 2; ++i) {
    CHECK(member(picked, i).get("x").data_ptr() == lazy.tensordicts()[i].get("x").data_ptr());
  }
  // A key some members lack: strict is each member's KeyError, else skipped.
  CHECK(CONF_MESSAGE(lazy.select({"only0"})).find("only0") != std::string::npos);
  const auto some = lazy.select({"only0", "x"}, /*strict=*/{.strict = false});
  CHECK(member(some, 0).contains("only0"));
  CHECK_FALSE(member(some, 1).contains("only0"));

  const auto rest = lazy.exclude({"y"});
  REQUIRE(is_lazy(rest));
  CHECK(member(rest, 0).contains("only0"));
  CHECK(member(rest, 1).contains("only1"));
  CHECK_FALSE(member(rest, 1).contains("y"));
  CHECK(member(rest, 1).get("x").data_ptr() == lazy.tensordicts()[1].get("x").data_ptr());
}

TEST_CASE("unsqueeze of a lazy stack stays lazy with the shapes of the dense op (test_lazy.py::test_stack_unsqueeze)",
          "[conformance][test_lazy.py]") {
  TensorDict td({}, {3, 4});
  td.set({"a", "b"}, values({3, 4, 5}, 0));
  const auto stack = tensordict::lazy_stack(td.unbind(1), 1);
  for (int64_t d : {0, 1, -1, -2}) {
    CAPTURE(d);
    const auto dense = td.unsqueeze(d);
    const auto lazy = stack.unsqueeze(d);
    REQUIRE(is_lazy(lazy));
    CHECK(lazy.batch_size() == dense.batch_size());
    CHECK(same_tensor(lazy.get({"a", "b"}), dense.get({"a", "b"})));
  }
}

TEST_CASE("permute, transpose and squeeze of a lazy stack move its stack dim and run on the members (_lazy.py _permute, "
          "_transpose, _squeeze)",
          "[conformance][test_lazy.py]") {
  const auto lazy = hetero(1);  // batch [3, 2, 4]
  const auto p = lazy.permute({2, 0, 1});
  REQUIRE(is_lazy(p));
  CHECK(LazyStackedTensorDict(p).stack_dim() == 2);
  CHECK(p.batch_size() == at::IntArrayRef({4, 3, 2}));
  for (std::size_t i = 0; i < 2; ++i) {
    CHECK(same_tensor(member(p, i).get("x"), lazy.tensordicts()[i].get("x").permute({1, 0, 2})));
  }
  CHECK(member(p, 0).contains("only0"));
  CHECK(same_tensor(p.get("y"), lazy.get("y").permute({2, 0, 1})));

  const auto t = lazy.transpose(0, 1);  // the stack dim moves to 0; members unchanged
  REQUIRE(is_lazy(t));
  CHECK(LazyStackedTensorDict(t).stack_dim() == 0);
  CHECK(same_tensor(t.get("y"), lazy.get("y").transpose(0, 1)));
  const auto t2 = lazy.transpose(0, 2);
  CHECK(same_tensor(member(t2, 1).get("x"), lazy.tensordicts()[1].get("x").transpose(0, 1)));
  CHECK(same_tensor(lazy.swapaxes(0, 2).get("y"), lazy.get("y").transpose(0, 2)));

  const auto u = lazy.unsqueeze(0).unsqueeze(-1);  // [1, 3, 2, 4, 1]
  const auto s = u.squeeze();
  REQUIRE(is_lazy(s));
  CHECK(s.batch_size() == lazy.batch_size());
  CHECK(LazyStackedTensorDict(s).stack_dim() == 1);
  CHECK(same_tensor(u.squeeze(0).get("y"), lazy.get("y").unsqueeze(-1)));
  // Squeezing the stack dim of a stack of one member gives the member itself.
  const auto one = tensordict::lazy_stack({lazy.tensordicts()[0]}, 1);
  CHECK(one.squeeze(1).impl() == lazy.tensordicts()[0].impl());
}

TEST_CASE("expand of a lazy stack expands its members and stays lazy where they differ (_lazy.py:3161 expand)",
          "[conformance][test_lazy.py]") {
  const auto lazy = hetero(1);  // batch [3, 2, 4]
  const auto e = lazy.expand({5, 3, 2, 4});
  REQUIRE(is_lazy(e));
  CHECK(LazyStackedTensorDict(e).stack_dim() == 2);
  CHECK(e.batch_size() == at::IntArrayRef({5, 3, 2, 4}));
  CHECK(member(e, 0).contains("only0"));  // no key dropped
  CHECK(member(e, 1).contains("only1"));
  CHECK(same_tensor(member(e, 1).get("x"), lazy.tensordicts()[1].get("x").expand({5, 3, 4, 5})));
  // Members that agree stack densely (tensordict's maybe_dense_stack).
  const auto same = tensordict::lazy_stack({lazy.tensordicts()[0].select({"y"}), lazy.tensordicts()[1].select({"y"})}, 1);
  const auto dense = same.expand({5, 3, 2, 4});
  CHECK(dense.kind() == tensordict::Kind::Dense);
  CHECK(same_tensor(dense.get("y"), lazy.get("y").expand({5, 3, 2, 4})));
  // One member is repeated along the stack dim.
  const auto one = tensordict::lazy_stack({lazy.tensordicts()[0]}, 1);
  const auto three = one.expand({3, 3, 4});
  CHECK(three.batch_size() == at::IntArrayRef({3, 3, 4}));
  CHECK(same_tensor(three.get("x"), lazy.tensordicts()[0].get("x").unsqueeze(1).expand({3, 3, 4, 2})));
  CHECK(CONF_MESSAGE(lazy.expand({3, 3, 4})) == "expand: batch size [3, 2, 4] cannot be expanded to [3, 3, 4]");
}

TEST_CASE("split of a lazy stack gives lazy stacks: groups of members along the stack dim, split members across "
          "(test_lazy.py::test_split_lazy)",
          "[conformance][test_lazy.py]") {
  std::vector<TensorDict> members;
  for (int64_t i = 0; i < 3; ++i) members.push_back(TensorDict({{"a", values({2, 3 + i}, 10.0 * i)}}, {2}));
  const auto td = tensordict::lazy_stack(members, 1);  // batch [2, 3]

  const auto split0 = td.split({1, 1}, 0);
  REQUIRE(split0.size() == 2);
  REQUIRE(is_lazy(split0[1]));
  CHECK(split0[1].batch_size() == at::IntArrayRef({1, 3}));
  CHECK(same_tensor(member(split0[1], 2).get("a"), members[2].get("a").narrow(0, 1, 1)));

  const auto split1 = td.split({2, 1}, 1);
  REQUIRE(is_lazy(split1[0]));
  CHECK(split1[0].batch_size() == at::IntArrayRef({2, 2}));
  CHECK(member(split1[1], 0).impl() == members[2].impl());  // the member itself

  const auto split1b = td.split({2, 0, 1}, 1);
  REQUIRE(split1b.size() == 3);
  CHECK(split1b[1].batch_size() == at::IntArrayRef({2, 0}));
  CHECK(td.chunk(3, 1).size() == 3);

  // cat gives the stack back (lazy, the members' values).
  for (const auto& [pieces, dim] : {std::pair{split0, int64_t{0}}, std::pair{split1, int64_t{1}}, std::pair{split1b, int64_t{1}}}) {
    const auto back = tensordict::cat(pieces, dim);
    REQUIRE(is_lazy(back));
    CHECK(back.batch_size() == td.batch_size());
    for (std::size_t i = 0; i < 3; ++i) CHECK(same_tensor(member(back, i).get("a"), members[i].get("a")));
  }
}

TEST_CASE("cat of a lazy stack with dense tensordicts along the stack dim adds members (test_lazy.py::"
          "test_cat_mixed_lazy_dense_stack_dim, test_cat_mixed_lazy_zero_length_dense_stack_dim)",
          "[conformance][test_lazy.py]") {
  const auto members = filled_members();
  const auto lazy = tensordict::lazy_stack(members, 0);
  const TensorDict dense({{"a", values({2, 2, 3}, 0)}}, {2, 2, 3});

  const auto res = tensordict::cat({lazy, dense}, 0);
  REQUIRE(is_lazy(res));
  CHECK(LazyStackedTensorDict(res).stack_dim() == 0);
  CHECK(res.batch_size() == at::IntArrayRef({4, 2, 3}));
  CHECK(LazyStackedTensorDict(res).tensordicts().size() == 4);
  CHECK(same_tensor(res.get("a"), at::cat({lazy.get("a"), dense.get("a")}, 0)));
  const auto flipped = tensordict::cat({dense, lazy}, 0);
  CHECK(same_tensor(flipped.get("a"), at::cat({dense.get("a"), lazy.get("a")}, 0)));

  const TensorDict empty({{"a", at::empty({0, 2, 3})}}, {0, 2, 3});
  const auto with_empty = tensordict::cat({empty, lazy}, 0);
  REQUIRE(is_lazy(with_empty));
  CHECK(LazyStackedTensorDict(with_empty).tensordicts().size() == 2);
  CHECK(same_tensor(with_empty.get("a"), lazy.get("a")));
}

TEST_CASE("cat of a lazy stack with dense tensordicts along another dim concatenates member by member (test_lazy.py::"
          "test_cat_mixed_lazy_dense_non_stack_dim, test_cat_mixed_lazy_dense_non_stack_dim_mismatched_slices)",
          "[conformance][test_lazy.py]") {
  const auto members = filled_members();
  const auto lazy = tensordict::lazy_stack(members, 0);
  const TensorDict dense({{"a", values({2, 3, 3}, 0)}}, {2, 3, 3});
  for (int64_t dim : {1, -2}) {
    CAPTURE(dim);
    const auto res = tensordict::cat({lazy, dense}, dim);
    REQUIRE(is_lazy(res));
    CHECK(LazyStackedTensorDict(res).stack_dim() == 0);
    CHECK(res.batch_size() == at::IntArrayRef({2, 5, 3}));
    for (std::size_t i = 0; i < 2; ++i) {
      CHECK(same_tensor(member(res, i).get("a"), at::cat({members[i].get("a"), dense.get("a")[static_cast<int64_t>(i)]}, 0)));
    }
  }
  const TensorDict three({{"a", at::zeros({3, 2})}}, {3, 2});
  const auto small = tensordict::lazy_stack({TensorDict({{"a", at::zeros({2})}}, {2}), TensorDict({{"a", at::ones({2})}}, {2})}, 0);
  CHECK(CONF_MESSAGE(tensordict::cat({small, three}, 1)) ==
        "cat: lazy stacks along a dim other than their stack dim need the same number of stacked tensordicts, got 2 and 3");
}

TEST_CASE("cat keeps a lazy stack whose members cannot be stacked densely (test_lazy.py::"
          "test_cat_mixed_lazy_dense_preserves_non_densifiable_lazy_stack, test_cat_lazy_stack)",
          "[conformance][test_lazy.py]") {
  const auto lazy = tensordict::lazy_stack({TensorDict({{"a", at::ones({1})}, {"only0", at::zeros({1})}}, {}),
                                            TensorDict({{"a", at::ones({2})}, {"only1", at::zeros({1})}}, {})},
                                           0);
  const TensorDict dense({{"a", at::full({1, 3}, 3.0)}, {"dense_only", at::ones({1, 4})}}, {1});
  const auto res = tensordict::cat({lazy, dense}, 0);
  REQUIRE(is_lazy(res));
  CHECK(res.batch_size() == at::IntArrayRef({3}));
  const auto list = LazyStackedTensorDict(res).get_list("a");
  REQUIRE(list.size() == 3);
  CHECK(list[0].sizes() == at::IntArrayRef({1}));
  CHECK(list[1].sizes() == at::IntArrayRef({2}));
  CHECK(same_tensor(list[2], at::full({3}, 3.0)));
  CHECK(member(res, 2).contains("dense_only"));

  // Two heterogeneous stacks along the stack dim: every member, in order.
  const auto twice = tensordict::cat({lazy, lazy.apply([](const at::Tensor& t) { return t + 1; })}, 0);
  REQUIRE(is_lazy(twice));
  CHECK(same_tensor(LazyStackedTensorDict(twice).get_list("a")[3], at::full({2}, 2.0)));
  CHECK(CONF_MESSAGE(tensordict::cat({lazy, tensordict::lazy_stack({TensorDict({{"a", at::ones({1, 2})}}, {1})}, 1)}, 0)) ==
        "cat: lazy stacks must have the same stack dim, got 0 and 1");
}

TEST_CASE("view, reshape, unflatten and flatten regroup a lazy stack's members (test_lazy.py::test_lazy_stack_view_full_size)",
          "[conformance][test_lazy.py]") {
  std::vector<TensorDict> members;
  for (int64_t i = 0; i < 60; ++i) members.push_back(TensorDict({{"a", at::scalar_tensor(i, at::kLong)}}, {}));
  const auto tds = tensordict::lazy_stack(members, 0);
  const auto tdview = tds.view({3, 4, 5});
  REQUIRE(is_lazy(tdview));
  CHECK(tdview.batch_size() == at::IntArrayRef({3, 4, 5}));
  CHECK(is_lazy(tdview.index({0})));
  CHECK(is_lazy(tdview.index({0, 0})));
  CHECK(at::equal(tdview.get("a").view({60}), tds.get("a")));
  CHECK(tdview.index({1, 2, 3}).impl() == members[1 * 20 + 2 * 5 + 3].impl());  // the member itself
  CHECK(at::equal(tdview.view({60}).get("a"), tds.get("a")));
  CHECK(at::equal(tds.unflatten(0, {3, 4, 5}).get("a"), tdview.get("a")));
  CHECK(at::equal(tdview.flatten().get("a"), tds.get("a")));
  CHECK(is_lazy(tdview.flatten()));
  CHECK(is_lazy(tds.reshape({6, 10})));
}

TEST_CASE("view of part of a lazy stack's batch regroups members across the stack dim (test_lazy.py::test_lazy_stack_view_part_size)",
          "[conformance][test_lazy.py]") {
  std::vector<TensorDict> members;
  for (const auto& a : at::arange(120).chunk(60)) members.push_back(TensorDict({{"a", a}}, {2}));
  const auto tds = tensordict::lazy_stack(members, 1);
  REQUIRE(tds.batch_size() == at::IntArrayRef({2, 60}));
  const auto tdview = tds.view({2, 3, 4, 5});
  REQUIRE(is_lazy(tdview));
  CHECK(is_lazy(tdview.index({0})));
  CHECK(is_lazy(tdview.index({0, 0})));
  CHECK(is_lazy(tdview.index({0, 0, 0})));
  CHECK(at::equal(tdview.get("a").reshape({120}), tds.get("a").reshape({120})));
  CHECK(at::equal(tdview.view({2, 60}).get("a"), tds.get("a")));
  CHECK(at::equal(tds.unflatten(1, {3, 4, 5}).get("a"), tdview.get("a")));
  CHECK(at::equal(tdview.flatten(1, -1).get("a"), tds.get("a")));
  // A heterogeneous stack too: the members' own shapes survive the regrouping.
  const auto het = hetero(1);  // batch [3, 2, 4]
  const auto flat = het.flatten(0, 1);
  REQUIRE(is_lazy(flat));
  CHECK(flat.batch_size() == at::IntArrayRef({6, 4}));
  CHECK(same_tensor(flat.index({3}).get("x"), het.tensordicts()[1].get("x")[1]));
  CHECK(flat.index({3}).contains("only1"));
  // A shape that neither flattens nor unflattens dims gives the dense result.
  CHECK(tds.reshape({4, 30}).kind() == tensordict::Kind::Dense);
}

TEST_CASE("unbind of a lazy stack gives its members along the stack dim, lazy slices across it (test_lazy.py::test_unbind_lazystack)",
          "[conformance][test_lazy.py]") {
  TensorDict td0({{"c", values({3, 4}, 0)}}, {3, 4});
  td0.set({"a", "b"}, values({3, 4}, 10));
  const auto td = tensordict::lazy_stack({td0, td0, td0}, 1);
  for (const auto& part : td.unbind(1)) CHECK(part.impl() == td0.impl());
  const auto het = hetero(1);
  const auto rows = het.unbind(0);
  REQUIRE(rows.size() == 3);
  REQUIRE(is_lazy(rows[2]));
  CHECK(same_tensor(member(rows[2], 1).get("x"), het.tensordicts()[1].get("x")[2]));
  CHECK(member(rows[2], 0).contains("only0"));
}
