// Lazy stacks on disk: FORMATS.md's layout (meta.json with _type and
// stack_dim, one full collection per member in 0/, 1/, ...), loaded back as
// lazy stacks of memory-mapped members; h5 stores them densely.
#include "persist_helpers.h"

#include <nlohmann/json.hpp>

using namespace tensordict;
using namespace td_test;
using Catch::Matchers::Contains;

namespace {

const std::string kLazyMeta0 = R"({"_type":"<class 'tensordict._lazy.LazyStackedTensorDict'>","stack_dim":0})";
const std::string kLazyMeta1 = R"({"_type":"<class 'tensordict._lazy.LazyStackedTensorDict'>","stack_dim":1})";

// Same keys in the same order, batch sizes and values, at every depth (lazy
// levels compared member by member).
void require_same_tree(const TensorDict& a, const TensorDict& b) {
  REQUIRE(a.type_name() == b.type_name());
  REQUIRE(a.batch_size() == b.batch_size());
  if (a.kind() == Kind::LazyStack) {
    const LazyStackedTensorDict la(a), lb(b);
    REQUIRE(la.stack_dim() == lb.stack_dim());
    REQUIRE(la.tensordicts().size() == lb.tensordicts().size());
    for (std::size_t i = 0; i < la.tensordicts().size(); ++i) {
      INFO("member " << i);
      require_same_tree(la.tensordicts()[i], lb.tensordicts()[i]);
    }
    return;
  }
  REQUIRE(a.keys() == b.keys());
  for (const auto& key : a.keys()) {
    INFO("key " << key.repr());
    auto va = *a.get_value(key), vb = *b.get_value(key);
    require_same_entry(va, vb);
    if (va.is_tensordict()) require_same_tree(va.tensordict(), vb.tensordict());
  }
}

// Two members with different keys and different feature shapes.
LazyStackedTensorDict heterogeneous(int64_t stack_dim) {
  TensorDict a({{"x", iota({2, 3})}, {"only_a", iota({2}, at::kLong)}}, {2});
  TensorDict b({{"x", iota({2, 5}) + 100}, {"only_b", mask({1, 0})}, {"sub", TensorDict({{"y", iota({2, 1})}}, {2})}},
               {2});
  return lazy_stack({a, b}, stack_dim);
}

}  // namespace

TEST_CASE("a heterogeneous lazy stack round-trips as a lazy stack of memory-mapped members") {
  TempDir tmp;
  const fs::path dir = tmp.path() / "lazy";
  LazyStackedTensorDict lazy = heterogeneous(1);
  LazyStackedTensorDict mm(lazy.memmap(dir.string()));
  REQUIRE(mm.is_locked());
  REQUIRE(mm.is_memmap());
  require_same_tree(mm, lazy);

  REQUIRE(read_text(dir / "meta.json") == kLazyMeta1);
  REQUIRE(tree_of(dir) == std::vector<std::string>{"0", "0/meta.json", "0/only_a.memmap", "0/x.memmap", "1",
                                                   "1/meta.json", "1/only_b.memmap", "1/sub", "1/sub/meta.json",
                                                   "1/sub/y.memmap", "1/x.memmap", "meta.json"});
  REQUIRE(read_text(dir / "0" / "meta.json") ==
          R"({"x":{"device":"cpu","shape":[2,3],"dtype":"torch.float32","is_nested":false},)"
          R"("only_a":{"device":"cpu","shape":[2],"dtype":"torch.int64","is_nested":false},)"
          R"("shape":[2],"device":"cpu","_type":"<class 'tensordict._td.TensorDict'>"})");

  LazyStackedTensorDict back = LazyStackedTensorDict::load_memmap(dir.string());
  REQUIRE(back.stack_dim() == 1);
  REQUIRE(back.batch_size() == at::IntArrayRef{2, 2});
  require_same_tree(back, lazy);
  REQUIRE(back.is_memmap());
  REQUIRE(fs::path(*back.tensordicts()[1].saved_path()) == fs::absolute(dir / "1"));

  // Zero-copy: a write through a loaded member reaches the file.
  back.tensordicts()[0].get("x").fill_(7);
  REQUIRE(at::equal(LazyStackedTensorDict::load_memmap(dir.string()).tensordicts()[0].get("x"),
                    at::full({2, 3}, 7.0)));

  // The generic loader and TensorDict's (one handle) give the lazy stack too.
  REQUIRE(load_memmap(dir.string()).kind() == Kind::LazyStack);
  const TensorDict held = TensorDict::load_memmap(dir.string());
  REQUIRE(held.kind() == Kind::LazyStack);
  REQUIRE(held.as<LazyStackedTensorDict>().stack_dim() == lazy.stack_dim());
  REQUIRE_THAT(TD_MESSAGE(LazyStackedTensorDict::load_memmap((dir / "0").string())),
               Contains("holds a TensorDict, not a LazyStackedTensorDict"));
  // Through a TensorDict handle: the same layout, a lazy stack back
  // (it threw "gives a LazyStackedTensorDict, not a TensorDict" before).
  const TensorDict via_base = TensorDict(lazy).memmap((tmp.path() / "base").string());
  require_same_tree(via_base, lazy);
  REQUIRE(read_text(tmp.path() / "base" / "meta.json") == kLazyMeta1);
}

TEST_CASE("a lazy stack nested in a dense TensorDict keeps its own directory and class") {
  TempDir tmp;
  const fs::path dir = tmp.path() / "parent";
  TensorDict parent({{"obs", iota({2})}}, {2});
  parent.set("lazy", lazy_stack({TensorDict({{"x", iota({3})}}, {}),
                                 TensorDict({{"x", iota({4})}, {"y", iota({1}, at::kInt)}}, {})}));
  TensorDict mm(parent.memmap(dir.string()));
  REQUIRE(read_text(dir / "meta.json") ==
          R"({"obs":{"device":"cpu","shape":[2],"dtype":"torch.float32","is_nested":false},)"
          R"("lazy":{"type":"LazyStackedTensorDict"},"shape":[2],"device":"cpu",)"
          R"("_type":"<class 'tensordict._td.TensorDict'>"})");
  REQUIRE(read_text(dir / "lazy" / "meta.json") == kLazyMeta0);
  REQUIRE(mm.get_td("lazy").kind() == Kind::LazyStack);

  TensorDict back = TensorDict::load_memmap(dir.string());
  REQUIRE(at::equal(back.get("obs"), iota({2})));
  const LazyStackedTensorDict nested(back.get_td("lazy"));
  REQUIRE(nested.stack_dim() == 0);
  REQUIRE(nested.tensordicts()[0].keys() == std::vector<NestedKey>{"x"});
  REQUIRE(nested.tensordicts()[1].keys() == std::vector<NestedKey>{"x", "y"});
  REQUIRE(at::equal(nested.tensordicts()[1].get("x"), iota({4})));
  REQUIRE(at::equal(nested.tensordicts()[1].get("y"), iota({1}, at::kInt)));
  require_same_tree(back, parent);
}

TEST_CASE("a lazy stack of lazy stacks round-trips level by level") {
  TempDir tmp;
  const fs::path dir = tmp.path() / "outer";
  LazyStackedTensorDict inner0 = heterogeneous(0);
  LazyStackedTensorDict inner1 =
      lazy_stack({TensorDict({{"z", iota({2, 2})}}, {2}), TensorDict({{"z", iota({2, 2}) * 2}}, {2})}, 0);
  LazyStackedTensorDict outer = lazy_stack({inner0, inner1}, 1);
  REQUIRE(outer.batch_size() == at::IntArrayRef{2, 2, 2});
  outer.memmap(dir.string());
  REQUIRE(read_text(dir / "meta.json") == kLazyMeta1);
  REQUIRE(read_text(dir / "0" / "meta.json") == kLazyMeta0);
  REQUIRE(read_text(dir / "1" / "meta.json") == kLazyMeta0);
  REQUIRE(fs::exists(dir / "0" / "1" / "sub" / "y.memmap"));

  LazyStackedTensorDict back = LazyStackedTensorDict::load_memmap(dir.string());
  REQUIRE(back.stack_dim() == 1);
  require_same_tree(back, outer);
  REQUIRE(LazyStackedTensorDict(back.tensordicts()[0]).tensordicts()[1].get({"sub", "y"}).sizes() ==
          at::IntArrayRef{2, 1});
}

TEST_CASE("memmap_ on a lazy stack maps every member in place") {
  TempDir tmp;
  const fs::path dir = tmp.path() / "inplace";
  LazyStackedTensorDict lazy = heterogeneous(0);
  const at::Tensor before = lazy.tensordicts()[1].get("x").clone();
  lazy.memmap_(dir.string());
  REQUIRE(lazy.is_locked());
  REQUIRE(lazy.is_memmap());
  REQUIRE(read_text(dir / "meta.json") == kLazyMeta0);
  for (std::size_t i = 0; i < 2; ++i) {
    REQUIRE(lazy.tensordicts()[i].is_memmap());
    REQUIRE(fs::path(*lazy.tensordicts()[i].saved_path()) == fs::absolute(dir / std::to_string(i)));
  }
  REQUIRE(at::equal(lazy.tensordicts()[1].get("x"), before));
  // The members now hold the mapped tensors: writes reach the files.
  lazy.tensordicts()[1].get("x").fill_(3);
  REQUIRE(at::equal(LazyStackedTensorDict::load_memmap(dir.string()).tensordicts()[1].get("x"),
                    at::full({2, 5}, 3.0)));
}

TEST_CASE("mismatched lazy-stack directories give errors naming the directory") {
  TempDir tmp;
  const fs::path dir = tmp.path() / "odd";
  sample({2}).memmap((dir / "0").string());
  sample({2, 3}).memmap((dir / "1").string());
  write_text(dir / "meta.json", kLazyMeta0);
  REQUIRE_THAT(TD_MESSAGE(load_memmap(dir.string())), Contains(dir.string()) && Contains("member 1") &&
                                                          Contains("batch size [2, 3]") && Contains("as many batch dims"));
  write_text(dir / "meta.json", R"({"_type":"<class 'tensordict._lazy.LazyStackedTensorDict'>","stack_dim":"0"})");
  REQUIRE_THAT(TD_MESSAGE(load_memmap(dir.string())), Contains("integer stack_dim"));
}

TEST_CASE("h5 stores a homogeneous lazy stack densely and refuses a heterogeneous one") {
  TempDir tmp;
  LazyStackedTensorDict same = lazy_stack({sample({2}), sample({2}) * 2.0}, 1);
  const std::string path = (tmp.path() / "same.h5").string();
  same.to_h5(path).close();
  TensorDict back = PersistentTensorDict::from_h5(path, "r", std::vector<int64_t>{2, 2}).to_tensordict();
  REQUIRE(back.keys({.include_nested = true}) == same.contiguous().keys({.include_nested = true}));
  for (const auto& key : back.keys({.include_nested = true, .leaves_only = true})) {
    INFO("key " << key.repr());
    REQUIRE(at::equal(back.get(key), same.get(key)));
  }

  const std::string bad = (tmp.path() / "bad.h5").string();
  REQUIRE_THAT(TD_MESSAGE(heterogeneous(0).to_h5(bad)),
               Contains(bad) && Contains("member 0 has key 'only_a'") && Contains("memmap"));
  LazyStackedTensorDict shapes =
      lazy_stack({TensorDict({{"x", iota({2, 3})}}, {2}), TensorDict({{"x", iota({2, 4})}}, {2})});
  REQUIRE_THAT(TD_MESSAGE(shapes.to_h5(bad)), Contains("key 'x' has shape [2, 3] in member 0 and [2, 4] in member 1"));
  TensorDict parent({{"obs", iota({2})}}, {2});
  parent.set("lazy", lazy_stack({TensorDict({{"x", iota({3})}}, {}), TensorDict({{"x", iota({4})}}, {})}));
  REQUIRE_THAT(TD_MESSAGE(parent.to_h5(bad)), Contains(bad + ":/lazy") || Contains(bad + ":lazy"));
}

TEST_CASE("memmap_refresh_ on a loaded lazy stack refreshes every member") {
  TempDir tmp;
  const fs::path dir = tmp.path() / "refresh";
  heterogeneous(0).memmap(dir.string());
  LazyStackedTensorDict loaded = LazyStackedTensorDict::load_memmap(dir.string());
  // Another writer replaces member 1 with other content.
  tensordict::remove_tree(dir / "1");
  TensorDict({{"x", iota({2, 5}) * 3}, {"new", iota({2})}}, {2}).memmap((dir / "1").string());
  loaded.memmap_refresh_();
  REQUIRE(at::equal(loaded.tensordicts()[1].get("x"), iota({2, 5}) * 3));
  REQUIRE(loaded.tensordicts()[1].contains("new"));
}

TEST_CASE("a lazy stack of members of different batch sizes round-trips, nested too (checked against tensordict 0.15.3)") {
  TempDir tmp;
  // tensordict 0.15.3 writes the same tree: meta.json with stack_dim 0, then
  // 0/ with shape [2] and 1/ with shape [3]; it loads back as batch [2, -1].
  LazyStackedTensorDict lazy = lazy_stack({TensorDict({{"x", iota({2, 3})}, {"only_a", iota({2}, at::kLong)}}, {2}),
                                           TensorDict({{"x", iota({3, 3}) + 100}}, {3})});
  REQUIRE(lazy.batch_size() == at::IntArrayRef{2, -1});
  const fs::path dir = tmp.path() / "batches";
  lazy.memmap(dir.string());
  REQUIRE(read_text(dir / "meta.json") == kLazyMeta0);
  REQUIRE(tree_of(dir) == std::vector<std::string>{"0", "0/meta.json", "0/only_a.memmap", "0/x.memmap", "1", "1/meta.json",
                                                   "1/x.memmap", "meta.json"});
  LazyStackedTensorDict back = LazyStackedTensorDict::load_memmap(dir.string());
  REQUIRE(back.batch_size() == at::IntArrayRef{2, -1});
  require_same_tree(back, lazy);

  // Held by a tensordict of batch [2].
  const fs::path outer_dir = tmp.path() / "outer";
  TensorDict({{"s", lazy}}, {2}).memmap(outer_dir.string());
  const TensorDict outer = load_memmap(outer_dir.string());
  REQUIRE(outer.get_td("s").batch_size() == at::IntArrayRef{2, -1});
  require_same_tree(outer.get_td("s"), lazy);

  // h5 stores a lazy stack densely: tensordict 0.15.3 fails to stack "x"
  // too.
  const std::string h5 = (tmp.path() / "batches.h5").string();
  REQUIRE_THAT(TD_MESSAGE(lazy.to_h5(h5)), Contains(h5));
}
