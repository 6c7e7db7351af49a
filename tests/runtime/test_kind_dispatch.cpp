// Kinds differ only in their storage: the kind-preserving operations (index,
// unbind, clone, to, apply, detach, memmap, get_at, set_at_) dispatch through
// the impl, so a result never depends on the handle's static type.
#include "persist_helpers.h"

using namespace tensordict;
using namespace td_test;
using at::indexing::Slice;
using Catch::Matchers::Contains;

namespace {

// Two members whose "x" differ in their feature shape: no dense stack holds
// them (a dense result threw "cannot stack key 'x'").
LazyStackedTensorDict mixed_shapes() {
  TensorDict a({{"x", iota({2, 3})}, {"n", TensorDict({{"y", iota({2, 1})}}, {2})}}, {2});
  TensorDict b({{"x", iota({2, 5}) + 100}, {"n", TensorDict({{"y", iota({2, 1}) + 7}}, {2})}}, {2});
  return lazy_stack({a, b}, 0);
}

const std::vector<TensorDict>& lazy_members(const TensorDict& td) {
  REQUIRE(td.kind() == Kind::LazyStack);
  return LazyStackedTensorDict(td).tensordicts();
}

// Each member of `got` holds fn(member of `source`) at "x" and ("n", "y").
void require_members(const TensorDict& got, const TensorDict& source,
                     const std::function<at::Tensor(const at::Tensor&)>& fn) {
  const auto& g = lazy_members(got);
  const auto& s = lazy_members(source);
  REQUIRE(g.size() == s.size());
  for (std::size_t i = 0; i < g.size(); ++i) {
    INFO("member " << i);
    for (const NestedKey& key : {NestedKey("x"), NestedKey({"n", "y"})}) {
      const at::Tensor expected = fn(s[i].get(key));
      REQUIRE(g[i].get(key).sizes() == expected.sizes());
      REQUIRE(g[i].get(key).scalar_type() == expected.scalar_type());
      REQUIRE(at::equal(g[i].get(key), expected));
    }
  }
}

}  // namespace

TEST_CASE("a lazy stack held by a TensorDict handle stays lazy through clone, to, apply, detach",
          "[kinds][test_tensordict.py::TestTensorDictsBase::test_clone_td][test_tensordict.py::TestTensorDictsBase::test_apply]") {
  const LazyStackedTensorDict lazy = mixed_shapes();
  const TensorDict base = lazy;  // the static type no longer matters
  const auto same = [](const at::Tensor& t) { return t; };

  const TensorDict cloned = base.clone();
  require_members(cloned, base, same);
  REQUIRE(lazy_members(cloned)[1].get("x").data_ptr() != lazy_members(base)[1].get("x").data_ptr());
  const TensorDict shallow = base.clone({.recurse = false});
  REQUIRE(lazy_members(shallow)[1].get("x").data_ptr() == lazy_members(base)[1].get("x").data_ptr());

  require_members(base.to(at::kDouble), base, [](const at::Tensor& t) { return t.to(at::kDouble); });
  require_members(base.to_double(), base, [](const at::Tensor& t) { return t.to(at::kDouble); });
  require_members(base.to(at::Device(at::kCPU)), base, same);
  require_members(base.cpu(), base, same);
  require_members(base.detach(), base, same);
  require_members(base.apply([](const at::Tensor& t) { return t * 2 + 1; }), base,
                  [](const at::Tensor& t) { return t * 2 + 1; });
  // The stack dim and its name come along.
  TensorDict named = base.clone();
  named.rename_(Names{"s", std::nullopt});
  REQUIRE((named.clone().names() == Names{"s", std::nullopt}));
  REQUIRE(LazyStackedTensorDict(named.apply(same)).stack_dim() == 0);
}

TEST_CASE("indexing and unbinding a lazy stack through a TensorDict handle keep its members",
          "[kinds][test_tensordict.py::TestTensorDictsBase::test_getitem_range][test_tensordict.py::TestTensorDictsBase::test_unbind_td]") {
  const LazyStackedTensorDict lazy = mixed_shapes();
  const TensorDict base = lazy;

  // An int along the stack dim: the member itself.
  REQUIRE(base.index({1}).impl() == lazy.tensordicts()[1].impl());
  // Across the other dims: each member indexed, stacked lazily.
  const TensorDict row = base.index({Slice(), 1});
  REQUIRE(row.batch_size() == std::vector<int64_t>{2});
  require_members(row, base, [](const at::Tensor& t) { return t[1]; });
  // A long index along the stack dim selects members.
  const TensorDict picked = base.index({at::tensor({1, 0, 1}, at::kLong)});
  REQUIRE(lazy_members(picked).size() == 3);
  REQUIRE(lazy_members(picked)[0].impl() == lazy.tensordicts()[1].impl());

  const auto pieces = base.unbind(0);
  REQUIRE(pieces.size() == 2);
  REQUIRE(pieces[0].impl() == lazy.tensordicts()[0].impl());
  REQUIRE(pieces[1].impl() == lazy.tensordicts()[1].impl());
  // masked_select is an index: the selected members.
  REQUIRE(lazy_members(base.masked_select(mask({0, 1}))).size() == 1);
}

TEST_CASE("a lazy stack's handle hides nothing: the binary apply and every TensorDict overload compile on it",
          "[kinds][test_tensordict.py::TestTensorDictsBase::test_apply_other]") {
  const LazyStackedTensorDict lazy = lazy_stack({sample({3}), sample({3}).clone()}, 0);
  // Members of equal shapes: the binary apply gives the dense sum.
  const TensorDict sum(lazy.apply([](const at::Tensor& a, const at::Tensor& b) { return a + b; }, lazy));
  REQUIRE(at::equal(sum.get("a"), lazy.get("a") * 2));
  // The unary apply with a batch size is the dense result too.
  const TensorDict first = lazy.apply([](const at::Tensor& t) { return t[0]; }, std::vector<int64_t>{3});
  REQUIRE(first.kind() == Kind::Dense);
  REQUIRE(at::equal(first.get("a"), lazy.get("a")[0]));
}

TEST_CASE("to_tensordict gives a dense copy of every kind",
          "[kinds][test_tensordict.py::TestTensorDictsBase::test_to_tensordict]") {
  TempDir dir;
  const TensorDict dense = sample({3});
  const LazyStackedTensorDict lazy = lazy_stack({dense.index({0}), dense.index({1}), dense.index({2})}, 0);
  const TensorDict h5 = dense.to_h5((dir / "x.h5").string());
  const TensorDict sub = dense.get_sub_tensordict({Slice(0, 3)});
  for (const auto& [name, td] : std::vector<std::pair<std::string, TensorDict>>{
           {"dense", dense}, {"lazy", lazy}, {"h5", h5}, {"sub", sub}}) {
    INFO(name);
    const TensorDict copy = td.to_tensordict();
    REQUIRE(copy.kind() == Kind::Dense);
    REQUIRE(at::equal(copy.get({"nested", "c"}), dense.get({"nested", "c"})));
    REQUIRE(copy.get("a").data_ptr() != dense.get("a").data_ptr());
  }
}

TEST_CASE("memmap of a lazy stack through a TensorDict handle writes the lazy layout and records its path",
          "[kinds][test_memmap.py::TestMemmap::test_memmap_lazy]") {
  TempDir dir;
  const TensorDict base = mixed_shapes();
  const TensorDict written = base.memmap(dir.path().string());
  require_members(written, base, [](const at::Tensor& t) { return t; });
  REQUIRE(written.is_memmap());
  REQUIRE((written.saved_path() == std::filesystem::absolute(dir.path()).string()));
  REQUIRE_FALSE(base.is_memmap());
  // Loading gives the lazy stack back, with its path.
  const TensorDict loaded = LazyStackedTensorDict::load_memmap(dir.path().string());
  require_members(loaded, base, [](const at::Tensor& t) { return t; });
  REQUIRE((loaded.saved_path() == std::filesystem::absolute(dir.path()).string()));
  // memmap_like: the same layout, zero-filled.
  TempDir like_dir;
  const TensorDict like = base.memmap_like(like_dir.path().string());
  require_members(like, base, [](const at::Tensor& t) { return at::zeros_like(t); });
  // A copy handle shares the state: it lives on the storage, not the handle.
  const TensorDict alias = written;
  REQUIRE((alias.saved_path() == written.saved_path()));
  REQUIRE_FALSE(written.clone().is_memmap());
}

TEST_CASE("get_at and set_at_ through a TensorDict handle read and write an h5 file's hyperslabs",
          "[kinds][test_tensordict.py::TestTensorDictsBase::test_setitem_nested_dict_value][h5]") {
  TempDir dir;
  const std::string path = (dir / "slab.h5").string();
  const TensorDict source = sample({4});
  source.to_h5(path);
  {
    const TensorDict h5 = PersistentTensorDict::from_h5(path, "r+");
    REQUIRE(at::equal(h5.get_at("a", {Slice(1, 3)}), source.get("a").slice(0, 1, 3)));
    REQUIRE(at::equal(h5.get_at({"nested", "c"}, {2}), source.get({"nested", "c"})[2]));
    // A long index: read whole, then indexed.
    REQUIRE(at::equal(h5.get_at("b", {at::tensor({3, 0}, at::kLong)}), source.get("b").index({at::tensor({3, 0}, at::kLong)})));

    TensorDict writer = h5;
    writer.set_at_("a", at::full({2, 4}, -1.0), {Slice(0, 2)});
    writer.set_at_({"nested", "c"}, at::full({2, 3}, 9.0), {3});
    writer.set_at_("b", at::tensor({-5, -6}, at::kLong), {at::tensor({1, 2}, at::kLong)});

    // The index of an h5 tensordict is dense.
    const TensorDict rows = h5.index({Slice(2, 4)});
    REQUIRE(rows.kind() == Kind::Dense);
    REQUIRE(at::equal(rows.get({"nested", "c"})[1], at::full({2, 3}, 9.0)));

    REQUIRE_THAT(message_of([&] { (void)h5.get_at("missing", {0}); }), Contains("key 'missing' not found"));
    REQUIRE_THAT(message_of([&] { (void)h5.get_at("nested", {0}); }), Contains("not a tensor"));
    REQUIRE_THAT(message_of([&] { writer.set_at_("missing", at::zeros({4}), {0}); }), Contains("key 'missing' not found"));
  }
  // Reopened: the writes are in the file.
  const TensorDict back = PersistentTensorDict::from_h5(path, "r").to_tensordict();
  at::Tensor a = source.get("a").clone();
  a.slice(0, 0, 2).fill_(-1.0);
  REQUIRE(at::equal(back.get("a"), a));
  at::Tensor c = source.get({"nested", "c"}).clone();
  c[3].fill_(9.0);
  REQUIRE(at::equal(back.get({"nested", "c"}), c));
  REQUIRE(at::equal(back.get("b"), at::tensor({0, -5, -6, 30}, at::kLong)));

  const TensorDict read_only = PersistentTensorDict::from_h5(path, "r");
  REQUIRE_THAT(message_of([&] { TensorDict(read_only).set_at_("a", at::zeros({4}), {0}); }),
               Contains("read-only"));
}
