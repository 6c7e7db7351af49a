// Construction, validation and the dict API.
#include "helpers.h"

using namespace tensordict;
using namespace td_test;
using Catch::Matchers::Contains;

TEST_CASE("construction keeps entries in insertion order with the given batch size") {
  TensorDict td({{"z", at::zeros({3, 2})}, {"a", at::ones({3})}, {"m", at::zeros({3, 1, 1})}}, {3});
  REQUIRE(td.batch_size() == at::IntArrayRef({3}));
  REQUIRE(td.keys() == std::vector<NestedKey>{"z", "a", "m"});
  REQUIRE(td.num_keys() == 3);
  REQUIRE(td.len() == 3);
  REQUIRE(td.numel() == 3);
  REQUIRE_FALSE(td.device().has_value());
  REQUIRE((td.names() == Names{std::nullopt}));
  REQUIRE_FALSE(td.has_names());
}

TEST_CASE("default construction is empty with an empty batch size") {
  TensorDict td;
  REQUIRE(td.batch_size().empty());
  REQUIRE(td.num_keys() == 0);
  REQUIRE(td.is_empty());
  REQUIRE(td.len() == 0);
  REQUIRE(td.numel() == 1);
}

TEST_CASE("a leaf that does not start with the batch size is refused, naming key and shapes") {
  auto msg = TD_MESSAGE(TensorDict({{"obs", at::zeros({4, 5})}}, {3}));
  REQUIRE_THAT(msg, Contains("'obs'") && Contains("[4, 5]") && Contains("[3]"));
  msg = TD_MESSAGE(TensorDict({{"x", at::zeros({3})}}, {3, 2}));
  REQUIRE_THAT(msg, Contains("'x'") && Contains("[3]") && Contains("[3, 2]"));
  TensorDict td({}, {2});
  msg = TD_MESSAGE(td.set({"deep", "x"}, at::zeros({5})));
  REQUIRE_THAT(msg, Contains("('deep', 'x')") && Contains("[5]") && Contains("[2]"));
  REQUIRE_THAT(TD_MESSAGE(td.set("u", at::Tensor())), Contains("'u'") && Contains("undefined"));
}

TEST_CASE("names are validated at construction") {
  TensorDict named({{"a", at::zeros({2, 3})}}, {2, 3}, std::nullopt, {"env", "time"});
  REQUIRE((named.names() == Names{"env", "time"}));
  REQUIRE(named.has_names());
  REQUIRE_THAT(TD_MESSAGE(TensorDict({}, {2, 3}, std::nullopt, {"env"})), Contains("1 names for 2 batch dims"));
  REQUIRE_THAT(TD_MESSAGE(TensorDict({}, {2, 3}, std::nullopt, {"env", "env"})), Contains("Some dimension names are non-unique: ['env', 'env']."));
}

TEST_CASE("a nested tensordict takes the parent's batch size when its entries allow it") {
  TensorDict inner({{"c", at::zeros({3, 4})}});  // batch []
  TensorDict td({{"b", inner}}, {3});
  REQUIRE(td.get_td("b").batch_size() == at::IntArrayRef({3}));
  REQUIRE(inner.batch_size().empty());  // the original is untouched

  TensorDict longer({{"c", at::zeros({3, 4})}}, {3, 4});
  TensorDict kept({{"b", longer}}, {3});
  REQUIRE(kept.get_td("b").batch_size() == at::IntArrayRef({3, 4}));

  TensorDict wrong({{"c", at::zeros({2})}}, {2});
  auto msg = TD_MESSAGE(TensorDict({{"b", wrong}}, {3}));
  REQUIRE_THAT(msg, Contains("'b'") && Contains("[2]") && Contains("[3]"));
}

TEST_CASE("a nested tensordict obtained from its parent is the same object") {
  auto td = sample({3});
  TensorDict nested = td.get_td("nested");
  nested.set("new", at::ones({3}));
  REQUIRE(td.contains({"nested", "new"}));
  td.get({"nested", "c"}).fill_(7);
  REQUIRE(nested.get("c").eq(7).all().item<bool>());
}

TEST_CASE("copies of a handle share entries, clone copies them") {
  auto td = sample({2});
  TensorDict alias = td;
  alias.set("extra", at::zeros({2}));
  REQUIRE(td.contains("extra"));
  auto copy = td.clone();
  copy.set("only_copy", at::zeros({2}));
  copy.get("a").fill_(-1);
  REQUIRE_FALSE(td.contains("only_copy"));
  REQUIRE_FALSE(td.get("a").eq(-1).any().item<bool>());
}

TEST_CASE("get, with default, get_td and get_value") {
  auto td = sample({2});
  REQUIRE(at::equal(td.get("a"), iota({2, 4})));
  REQUIRE(at::equal(td.get({"nested", "c"}), iota({2, 2, 3}) + 0.5));
  auto fallback = at::full({2}, 9.0);
  REQUIRE(at::equal(td.get("missing", fallback), fallback));
  REQUIRE(at::equal(td.get({"nested", "missing"}, fallback), fallback));
  REQUIRE(td.get_value("nested")->is_tensordict());
  REQUIRE_FALSE(td.get_value({"a", "x"}).has_value());
  REQUIRE_FALSE(td.get_value("zzz").has_value());
}

TEST_CASE("lookup errors name the key path and what is there") {
  auto td = sample({2});
  REQUIRE_THROWS_AS(td.get("zzz"), KeyError);
  REQUIRE_THAT(TD_MESSAGE(td.get("zzz")), Contains("key 'zzz' not found") && Contains("a, b, nested"));
  REQUIRE_THAT(TD_MESSAGE(td.get({"nested", "q"})), Contains("('nested', 'q')") && Contains("at 'nested'") && Contains("[c]"));
  REQUIRE_THAT(TD_MESSAGE(td.get({"missing", "q"})), Contains("('missing', 'q')"));
  REQUIRE_THAT(TD_MESSAGE(td.get({"a", "q"})), Contains("'a' is a tensor"));
  REQUIRE_THAT(TD_MESSAGE(td.get("nested")), Contains("'nested' holds a TensorDict") && Contains("get_td"));
  REQUIRE_THAT(TD_MESSAGE(td.get_td("a")), Contains("'a' holds a tensor of shape [2, 4]"));
  REQUIRE_THAT(TD_MESSAGE(td.get_td("nope")), Contains("'nope' not found"));
}

TEST_CASE("set creates intermediate levels with the parent's batch size and device") {
  TensorDict td({}, {2, 3}, at::Device(at::kCPU));
  td.set({"x", "y", "z"}, at::zeros({2, 3, 7}));
  REQUIRE(td.get_td("x").batch_size() == at::IntArrayRef({2, 3}));
  REQUIRE(td.get_td({"x", "y"}).device() == at::Device(at::kCPU));
  REQUIRE(td.keys({.include_nested = true}) == std::vector<NestedKey>{{"x", "y", "z"}, {"x", "y"}, "x"});
  td.create_nested({"x", "w"});
  REQUIRE(td.get_td({"x", "w"}).num_keys() == 0);
  REQUIRE(td.get_td({"x", "w"}).batch_size() == at::IntArrayRef({2, 3}));
}

TEST_CASE("set replaces in place, keeping the key's position") {
  auto td = sample({2});
  td.set("a", at::full({2, 9}, 1.0));
  REQUIRE(td.keys() == std::vector<NestedKey>{"a", "b", "nested"});
  REQUIRE(td.get("a").size(1) == 9);
}

TEST_CASE("set_ writes into the existing tensor") {
  auto td = sample({2});
  at::Tensor before = td.get("a");
  td.set_("a", at::ones({2, 4}));
  REQUIRE(before.data_ptr() == td.get("a").data_ptr());
  REQUIRE(at::equal(before, at::ones({2, 4})));
  REQUIRE_THAT(TD_MESSAGE(td.set_("missing", at::ones({2}))), Contains("'missing' not found"));
  REQUIRE_THAT(TD_MESSAGE(td.set_("a", at::ones({2, 5}))), Contains("set_ failed for key 'a'"));
}

TEST_CASE("setdefault, del_, pop and contains") {
  auto td = sample({2});
  auto existing = td.setdefault("a", at::zeros({2}));
  REQUIRE(at::equal(existing.tensor(), td.get("a")));
  auto added = td.setdefault({"nested", "d"}, at::zeros({2, 5}));
  REQUIRE(td.contains({"nested", "d"}));
  REQUIRE(added.tensor().size(1) == 5);

  td.del_({"nested", "d"});
  REQUIRE_FALSE(td.contains({"nested", "d"}));
  REQUIRE_THAT(TD_MESSAGE(td.del_({"nested", "d"})), Contains("('nested', 'd') not found"));

  auto popped = td.pop("b");
  REQUIRE(at::equal(popped.tensor(), iota({2}, at::kLong) * 10));
  REQUIRE_FALSE(td.contains("b"));
  REQUIRE(td.pop("b", at::ones({1})).tensor().numel() == 1);
  REQUIRE_THROWS_AS(td.pop("b"), KeyError);
  REQUIRE(td.contains("nested"));
  REQUIRE(td.contains({"nested", "c"}));
  REQUIRE_FALSE(td.contains({"a", "c"}));
}

TEST_CASE("keys, values and items follow tensordict's order and filters") {
  TensorDict td({{"a", at::zeros({2})},
                 {"n", TensorDict({{"x", at::zeros({2})}, {"m", TensorDict({{"y", at::zeros({2})}}, {2})}}, {2})},
                 {"b", at::zeros({2})}},
                {2});
  REQUIRE(td.keys() == std::vector<NestedKey>{"a", "n", "b"});
  REQUIRE(td.keys({.leaves_only = true}) == std::vector<NestedKey>{"a", "b"});
  REQUIRE(td.keys({.include_nested = true}) == std::vector<NestedKey>{"a", {"n", "x"}, {"n", "m", "y"}, {"n", "m"}, "n", "b"});
  REQUIRE(td.keys({.include_nested = true, .leaves_only = true}) == std::vector<NestedKey>{"a", {"n", "x"}, {"n", "m", "y"}, "b"});
  auto values = td.values({.include_nested = true, .leaves_only = true});
  REQUIRE(values.size() == 4);
  for (const auto& v : values) REQUIRE(v.is_tensor());
  auto items = td.items();
  REQUIRE(items[1].first == NestedKey("n"));
  REQUIRE(items[1].second.is_tensordict());
}

TEST_CASE("set_batch_size validates every entry") {
  TensorDict td({{"a", at::zeros({2, 3, 4})}, {"n", TensorDict({{"c", at::zeros({2, 3})}}, {2})}}, {2});
  td.set_batch_size({2, 3});
  REQUIRE(td.batch_size() == at::IntArrayRef({2, 3}));
  REQUIRE(td.get_td("n").batch_size() == at::IntArrayRef({2, 3}));
  REQUIRE_THAT(TD_MESSAGE(td.set_batch_size({2, 3, 5})), Contains("key 'a' has shape [2, 3, 4]"));
  REQUIRE(td.batch_size() == at::IntArrayRef({2, 3}));
}

TEST_CASE("a tensordict cannot contain itself") {
  TensorDict td({}, {});
  REQUIRE_THAT(TD_MESSAGE(td.set("self", td)), Contains("cannot contain itself"));
}

TEST_CASE("NestedKey parts, joins and reprs") {
  NestedKey k{"a", "b", "c"};
  REQUIRE(k.size() == 3);
  REQUIRE(k.is_nested());
  REQUIRE(k.parent() == NestedKey({"a", "b"}));
  REQUIRE(k.join(".") == "a.b.c");
  REQUIRE(k.repr() == "('a', 'b', 'c')");
  REQUIRE(NestedKey("x").repr() == "'x'");
  REQUIRE(NestedKey("x") + NestedKey({"y", "z"}) == NestedKey({"x", "y", "z"}));
  REQUIRE_THAT(TD_MESSAGE(NestedKey("x").parent()), Contains("'x' has no parent"));
  REQUIRE_THAT(TD_MESSAGE(NestedKey(std::vector<std::string>{})), Contains("at least one part"));
  const std::vector<std::string> none;
  REQUIRE_THAT(TD_MESSAGE(NestedKey(std::span<const std::string>(none))), Contains("at least one part"));
}

TEST_CASE("NestedKey orders part by part, as tuples of strings do") {
  // std::vector<std::string> compares the same way: the reference ordering.
  const std::vector<std::vector<std::string>> paths = {{"a"}, {"a", "b"}, {"a", "c"}, {"b"}, {"ab"}, {"a", "b", "c"}};
  for (const auto& p : paths) {
    for (const auto& q : paths) {
      INFO(NestedKey(p).repr() << " vs " << NestedKey(q).repr());
      REQUIRE((NestedKey(p) == NestedKey(q)) == (p == q));
      REQUIRE((NestedKey(p) < NestedKey(q)) == (p < q));
    }
  }
  // Moves cannot throw, so containers of keys move them when they grow.
  STATIC_REQUIRE(std::is_nothrow_move_constructible_v<NestedKey>);
  std::vector<NestedKey> keys;
  for (int i = 0; i < 100; ++i) keys.emplace_back(std::vector<std::string>{"level", "k" + std::to_string(i)});
  REQUIRE(keys[99] == NestedKey({"level", "k99"}));
}

TEST_CASE("large key tables: lookup, deletion and renaming past the indexed size") {
  TensorDict td({}, {2});
  for (int i = 0; i < 40; ++i) td.set("k" + std::to_string(i), at::full({2}, static_cast<double>(i)));
  REQUIRE(td.num_keys() == 40);
  for (int i = 0; i < 40; ++i) REQUIRE(td.get("k" + std::to_string(i)).index({0}).item<double>() == i);
  for (int i = 0; i < 30; i += 2) td.del_("k" + std::to_string(i));
  REQUIRE(td.num_keys() == 25);
  REQUIRE_FALSE(td.contains("k10"));
  REQUIRE(td.get("k11").index({1}).item<double>() == 11);
  td.rename_key_("k39", "last");
  REQUIRE(td.keys().back() == NestedKey("last"));
  REQUIRE(td.get("last").index({0}).item<double>() == 39);
  auto derived = td.to(at::kDouble);  // shares the table until one side changes
  derived.set("only_derived", at::zeros({2}));
  REQUIRE_FALSE(td.contains("only_derived"));
  REQUIRE(derived.contains("k37"));
  for (int i = 1; i < 39; i += 2) td.del_("k" + std::to_string(i));
  REQUIRE(td.keys() == std::vector<NestedKey>{"k30", "k32", "k34", "k36", "k38", "last"});
  REQUIRE(td.get("k34").index({0}).item<double>() == 34);
}
