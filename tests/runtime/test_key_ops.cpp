// select, exclude, update, rename_key_, flatten/unflatten_keys, split_keys, empty, clear.
#include "helpers.h"

using namespace tensordict;
using namespace td_test;
using Catch::Matchers::Contains;

TEST_CASE("select shares tensors and keeps nested batch sizes") {
  TensorDict td({{"a", at::zeros({2, 3})}, {"n", TensorDict({{"c", at::zeros({2, 5, 1})}, {"d", at::zeros({2, 5})}}, {2, 5})}}, {2});
  auto sel = td.select({{"n", "c"}, "a"});
  REQUIRE(sel.keys({.include_nested = true, .leaves_only = true}) == std::vector<NestedKey>{{"n", "c"}, "a"});
  REQUIRE(sel.get_td("n").batch_size() == at::IntArrayRef({2, 5}));
  REQUIRE(sel.get("a").data_ptr() == td.get("a").data_ptr());
  sel.set("only_sel", at::zeros({2}));
  REQUIRE_FALSE(td.contains("only_sel"));
  REQUIRE_THAT(TD_MESSAGE(td.select({"zzz"})), Contains("'zzz' not found"));
  REQUIRE(td.select({"zzz", "a"}, {.strict = false}).keys() == std::vector<NestedKey>{"a"});
}

TEST_CASE("exclude drops keys, ignoring missing ones") {
  auto td = sample({2});
  auto ex = td.exclude({"a", {"nested", "c"}, "missing"});
  REQUIRE(ex.keys({.include_nested = true}) == std::vector<NestedKey>{"b", "nested"});
  REQUIRE(td.contains("a"));
  REQUIRE(td.contains({"nested", "c"}));
}

TEST_CASE("update sets entries and merges nested tensordicts") {
  auto td = sample({2});
  TensorDict other({{"b", at::ones({2}, at::kLong)}, {"nested", TensorDict({{"e", at::ones({2, 1})}}, {2})}, {"new", at::ones({2, 2})}}, {2});
  td.update(other);
  REQUIRE(at::equal(td.get("b"), at::ones({2}, at::kLong)));
  REQUIRE(td.contains({"nested", "c"}));  // merged, not replaced
  REQUIRE(td.contains({"nested", "e"}));
  REQUIRE(td.contains("new"));
  TensorDict bad({{"x", at::ones({3})}}, {3});
  REQUIRE_THAT(TD_MESSAGE(td.update(bad)), Contains("'x'") && Contains("[3]") && Contains("[2]"));
}

TEST_CASE("rename_key_ moves the entry to the end and refuses to overwrite when safe") {
  // Orders checked against tensordict 0.15.3 (renaming sets the new key, then
  // deletes the old one).
  auto td = sample({2});
  at::Tensor a = td.get("a");
  td.rename_key_("a", "alpha");
  REQUIRE(td.keys() == std::vector<NestedKey>{"b", "nested", "alpha"});
  REQUIRE(td.get("alpha").data_ptr() == a.data_ptr());
  td.rename_key_({"nested", "c"}, "top_c");
  REQUIRE(td.contains("top_c"));
  REQUIRE_FALSE(td.contains({"nested", "c"}));
  REQUIRE_THAT(TD_MESSAGE(td.rename_key_("b", "alpha", {.safe = true})), Contains("key alpha already present in TensorDict."));
  REQUIRE(td.contains("b"));
  td.rename_key_("b", "alpha");  // unsafe: overwrites
  REQUIRE(td.keys() == std::vector<NestedKey>{"nested", "alpha", "top_c"});
  REQUIRE(td.get("alpha").scalar_type() == at::kLong);
  REQUIRE_THROWS_AS(td.rename_key_("missing", "x"), KeyError);
}

TEST_CASE("flatten_keys and unflatten_keys are inverse") {
  auto td = sample({2});
  td.create_nested("empty_level");
  auto flat = td.flatten_keys();
  REQUIRE(flat.keys() == std::vector<NestedKey>{"a", "b", "nested.c", "empty_level"});
  REQUIRE(flat.get("nested.c").data_ptr() == td.get({"nested", "c"}).data_ptr());
  auto flat2 = td.flatten_keys("/");
  REQUIRE(flat2.contains("nested/c"));
  auto back = flat.unflatten_keys();
  REQUIRE(back.keys({.include_nested = true, .leaves_only = true}) == td.keys({.include_nested = true, .leaves_only = true}));
  REQUIRE(back.get_td("nested").batch_size() == at::IntArrayRef({2}));

  TensorDict clash({{"x.y", at::zeros({1})}, {"x", TensorDict({{"y", at::zeros({1})}}, {1})}}, {1});
  REQUIRE_THAT(TD_MESSAGE(clash.flatten_keys()), Contains("'x.y'") && Contains("already exists"));
  TensorDict clash2({{"p.q", at::zeros({1})}, {"p", at::zeros({1})}}, {1});
  REQUIRE_THAT(TD_MESSAGE(clash2.unflatten_keys()), Contains("'p'") && Contains("unflatten"));
}

TEST_CASE("split_keys returns one tensordict per key list plus the rest") {
  auto td = sample({2});
  auto parts = td.split_keys({{"a"}, {"b", {"nested", "c"}}});
  REQUIRE(parts.size() == 3);
  REQUIRE(parts[0].keys() == std::vector<NestedKey>{"a"});
  REQUIRE(parts[1].keys({.include_nested = true, .leaves_only = true}) == std::vector<NestedKey>{"b", {"nested", "c"}});
  REQUIRE(parts[2].keys({.include_nested = true, .leaves_only = true}).empty());
  REQUIRE_THROWS_AS(td.split_keys({{"zzz"}}), KeyError);
}

TEST_CASE("empty, clear, is_empty") {
  TensorDict td({{"a", at::zeros({2, 3})}, {"n", TensorDict({{"c", at::zeros({2, 3, 4})}}, {2, 3})}}, {2}, at::Device(at::kCPU),
                {"batch"});
  auto e = td.empty();
  REQUIRE(e.num_keys() == 0);
  REQUIRE(e.batch_size() == at::IntArrayRef({2}));
  REQUIRE(e.device() == at::Device(at::kCPU));
  REQUIRE((e.names() == Names{"batch"}));
  auto er = td.empty({.recurse = true});
  REQUIRE(er.keys({.include_nested = true}) == std::vector<NestedKey>{"n"});
  REQUIRE(er.get_td("n").batch_size() == at::IntArrayRef({2, 3}));
  REQUIRE(er.is_empty());
  REQUIRE_FALSE(td.is_empty());
  td.clear();
  REQUIRE(td.num_keys() == 0);
  REQUIRE(td.is_empty());
}
