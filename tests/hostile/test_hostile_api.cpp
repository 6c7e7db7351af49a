// API misuse: results that drop batch dims, cycles, deep nesting, locked
// tensordicts, impossible batch sizes.
#include "hostile.h"

#include <nlohmann/json.hpp>

using namespace tensordict;
using namespace hostile;
using td_test::TempDir;

TEST_CASE("hostile api: apply results must keep the batch size") {
  const std::string message = HOSTILE_THROWS(
      TensorDict({{"x", at::zeros({2, 3})}}, {2, 3}).apply([](const at::Tensor&) { return at::zeros({2}); }).reshape({-1}));
  REQUIRE_THAT(message, Contains("apply: the result for key 'x' has shape [2], which does not start with the batch size [2, 3]"));
  TensorDict nested({}, {2});
  nested.set({"n", "y"}, at::zeros({2, 5}));
  REQUIRE_THAT(HOSTILE_THROWS(nested.apply([](const at::Tensor& t) { return t.sum(0); })),
               Contains("apply: the result for key ('n', 'y') has shape [5], which does not start with the batch size [2]"));
  REQUIRE_THAT(HOSTILE_THROWS(TensorDict({{"x", at::zeros({2, 3})}}, {2, 3}).named_apply([](const NestedKey&, const at::Tensor&) {
                 return at::zeros({3});
               })),
               Contains("named_apply: the result for key 'x' has shape [3], which does not start with the batch size [2, 3]"));
  // Keeping the batch (and adding feature dims) is fine.
  const std::string ok = HOSTILE_RETURNS(return c10::str(TensorDict({{"x", at::zeros({2, 3})}}, {2, 3})
                                                              .apply([](const at::Tensor& t) { return t.unsqueeze(-1); })
                                                              .reshape({-1})
                                                              .get("x")
                                                              .sizes()));
  REQUIRE(ok == "[6, 1]");
}

TEST_CASE("hostile api: set_batch_size refuses a batch a non-tensor stack does not span") {
  REQUIRE_THAT(HOSTILE_THROWS({
                 TensorDict t({}, {2});
                 t.set("s", NonTensorData::stack({Json("a"), Json("b")}, {2}));
                 t.set("x", at::zeros({2, 3}));
                 t.set_batch_size({2, 3});
                 t.reshape({-1});
               }),
               Contains("cannot set batch size [2, 3]: non-tensor stack 's' spans batch [2]"));
}

TEST_CASE("hostile api: a tensordict cannot be set below itself or its descendants") {
  REQUIRE_THAT(HOSTILE_THROWS({
                 TensorDict td({}, {});
                 td.set({"a", "x"}, at::zeros({1}));
                 td.set({"a", "loop"}, td.get_td("a"));
               }),
               Contains("cannot set key ('a', 'loop'): a tensordict cannot contain itself"));
  REQUIRE_THAT(HOSTILE_THROWS({
                 TensorDict td({}, {});
                 td.set({"a", "b", "x"}, at::zeros({1}));
                 td.set({"a", "b", "loop"}, td);
               }),
               Contains("cannot set key ('a', 'b', 'loop'): a tensordict cannot contain itself"));
  REQUIRE_THAT(HOSTILE_THROWS({
                 TensorDict td({}, {});
                 TensorDict inner({}, {});
                 td.set("inner", inner);
                 inner.set("up", td);
               }),
               Contains("cannot set key 'up': a tensordict cannot contain itself"));
  // The same tensordict twice (no cycle) is fine.
  const std::string ok = HOSTILE_RETURNS({
    TensorDict td({}, {});
    TensorDict shared({{"x", at::ones({1})}}, {});
    td.set("a", shared);
    td.set("b", shared);
    return std::to_string(td.clone().keys({.include_nested = true, .leaves_only = true}).size());
  });
  REQUIRE(ok == "2");
}

TEST_CASE("hostile api: 10k-deep nesting is a named error, never a crash") {
  // Built top-down (each set sees one level): the walks refuse past the bound.
  const std::string walks = HOSTILE_RETURNS({
    TensorDict top({}, {});
    TensorDict level = top;
    for (int i = 0; i < 10000; ++i) {
      level.set("a", TensorDict({}, {}));
      level = level.get_td("a");
    }
    level.set("x", at::zeros({1}));
    std::string out;
    auto attempt = [&](const char* name, auto&& fn) {
      try {
        fn();
        out += std::string(name) + ":ok ";
      } catch (const std::exception& e) {
        out += std::string(name) + (std::string(e.what()).find("nested more than 256 levels deep") != std::string::npos
                                        ? ":bounded "
                                        : std::string(":other(") + e.what() + ") ");
      }
    };
    TempDir tmp;
    attempt("repr", [&] { (void)repr(top); });
    attempt("clone", [&] { (void)top.clone(); });
    attempt("apply", [&] { (void)top.apply([](const at::Tensor& t) { return t; }); });
    attempt("keys", [&] { (void)top.keys({.include_nested = true}); });
    attempt("lock", [&] { top.lock_(); });
    attempt("memmap", [&] { (void)top.memmap((tmp / "m").string()); });
    attempt("to_h5", [&] { (void)top.to_h5((tmp / "f.h5").string()); });
    return out;
  });
  REQUIRE(walks == "repr:bounded clone:bounded apply:bounded keys:bounded lock:bounded memmap:bounded to_h5:bounded ");
  // Built bottom-up: the set that passes the bound is refused.
  REQUIRE_THAT(HOSTILE_THROWS({
                 TensorDict td({}, {});
                 for (int i = 0; i < 10000; ++i) td = TensorDict({{"a", td}}, {});
               }),
               Contains("the value nests tensordicts more than 256 levels deep"));
}

TEST_CASE("hostile api: load_state_dict(strict=false) adds no key to a locked tensordict") {
  TensorDict td({{"x", at::zeros({2})}}, {2});
  td.lock_();
  auto sd = TensorDict({{"x", at::ones({2})}, {"extra", at::ones({2})}}, {2}).state_dict();
  REQUIRE_THAT(HOSTILE_THROWS(td.load_state_dict(sd, {.strict = false})), Contains("load_state_dict: cannot add key 'extra' to a locked tensordict"));
  REQUIRE_FALSE(td.contains("extra"));
}

TEST_CASE("hostile api: impossible batch sizes are refused") {
  REQUIRE_THAT(HOSTILE_THROWS(TensorDict({}, {-2})), Contains("invalid batch size [-2]: sizes must be non-negative"));
  REQUIRE_THAT(HOSTILE_THROWS(TensorDict({}, {2}).set_batch_size({-5})),
               Contains("invalid batch size [-5]: sizes must be non-negative (or -1 for a ragged dim)"));
  const int64_t big = int64_t{1} << 62;
  REQUIRE_THAT(HOSTILE_THROWS(TensorDict({}, {big, big}).numel()),
               Contains("numel of the batch size [4611686018427387904, 4611686018427387904] does not fit in int64"));
  REQUIRE(TensorDict({}, {big, big, 0}).numel() == 0);
}

TEST_CASE("hostile api: auto_batch_size_ with a negative batch_dims keeps no dim, as tensordict's") {
  // tensordict 0.15.3: TensorDict(a=torch.zeros(2, 3)).auto_batch_size_(-3).batch_size == [].
  const std::string batch = HOSTILE_RETURNS({
    TensorDict td({{"a", at::zeros({2, 3})}}, {});
    return c10::str(td.auto_batch_size_(-3).batch_size());
  });
  REQUIRE(batch == "[]");
}

TEST_CASE("hostile api: a tensordict nested 200,000 deep is destroyed without exhausting the stack") {
  // Built top-down (each set sees one level; the walks refuse such a tree,
  // but it must still go away). A lazy stack in the chain is taken apart the same way.
  const std::string out = HOSTILE_RETURNS({
    {
      TensorDict top({}, {});
      TensorDict level = top;
      for (int i = 0; i < 200000; ++i) {
        TensorDict next({}, {});
        if (i == 100000) {
          level.set("a", lazy_stack({next}, 0));
          level = next;
          continue;
        }
        level.set("a", next);
        level = next;
      }
      level.set("x", at::ones({1}));
      // A level still held by a handle outlives the top.
      TensorDict held = level;
      level = TensorDict();
      top = TensorDict();
      return c10::str(held.get("x").item<float>());
    }
  });
  REQUIRE(out == "1");
}

TEST_CASE("hostile api: removing and renaming keys one by one takes linear time, in any order") {
  // Before, each removal moved every later key and rebuilt the index: pop of
  // 40,000 keys front first took ~50 s. The child's time limit bounds it.
  const auto outcome = hostile::in_child(
      [] {
        const auto make = [](int n) {
          TensorDict td({}, {});
          const at::Tensor t = at::zeros({1});
          for (int i = 0; i < n; ++i) td.set("k" + std::to_string(i), t + i);
          return td;
        };
        const auto first_keys = [](const TensorDict& td, std::size_t n) {
          std::string text;
          for (const auto& key : td.keys()) {
            if (n-- == 0) break;
            text += key.repr() + " ";
          }
          return text;
        };
        TensorDict popped = make(40000);
        for (int i = 0; i < 39998; ++i) popped.pop("k" + std::to_string(i));
        TensorDict deleted = make(20000);
        for (int i = 0; i < 20000; i += 2) deleted.del_("k" + std::to_string(i));
        TensorDict renamed = make(20000);
        for (int i = 0; i < 20000; ++i) renamed.rename_key_("k" + std::to_string(i), "r" + std::to_string(i));
        deleted.set("k0", at::zeros({1}));
        // Insertion order and lookups survive the holes and their compaction.
        return first_keys(popped, 5) + "| " + std::to_string(deleted.keys().size()) + " " + first_keys(deleted, 3) +
               c10::str(deleted.get("k19999").item<float>()) + " " + deleted.keys().back().repr() + " | " +
               first_keys(renamed, 2) + c10::str(renamed.get("r7").item<float>());
      },
      hostile::Limits{.seconds = 60});
  INFO(outcome.describe());
  REQUIRE(outcome.status == hostile::Outcome::Status::Returned);
  REQUIRE(outcome.text == "'k39998' 'k39999' | 10001 'k1' 'k3' 'k5' 19999 'k0' | 'r0' 'r1' 7");
}
