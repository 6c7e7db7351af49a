// One handle: whatever op a user calls on whatever kind, the result is held
// as a TensorDict and keeps the kind of tensordict's result; a kind's own
// methods are reached through one checked conversion, as<K>().
#include <tensordict/persistent.h>

#include "../temp_dir.h"
#include "persist_helpers.h"

using namespace tensordict;
using namespace td_test;
using at::indexing::Slice;

namespace {

// The same values as four kinds, batch [3, 4]: {"a": [3, 4, 2], "n": {"c": [3, 4]}}.
TensorDict dense_values() {
  return TensorDict({{"a", iota({3, 4, 2})}, {"n", TensorDict({{"c", iota({3, 4}) + 1}}, {3, 4})}}, {3, 4});
}

struct AllKinds {
  TempDir tmp;
  TensorDict dense = dense_values();
  TensorDict lazy = lazy_stack(dense_values().unbind(0), 0);
  TensorDict big = TensorDict({{"a", iota({5, 4, 2})}, {"n", TensorDict({{"c", iota({5, 4})}}, {5, 4})}}, {5, 4});
  TensorDict sub = big.get_sub_tensordict({Slice(1, 4)});
  TensorDict h5 = dense_values().to_h5((tmp.path() / "x.h5").string());
};

using Op = std::function<TensorDict(const TensorDict&)>;
// "-": tensordict refuses the op on that kind (not checked here).
struct Case {
  const char* name;
  Op op;
  std::array<const char*, 4> kinds;  // tensordict 0.15.3's class of the result on dense, lazy, sub, h5
  // Where ours differs from tensordict's (docs/lazy.md, "Result kinds"): the kind
  // we give, else null.
  std::array<const char*, 4> here = {nullptr, nullptr, nullptr, nullptr};
};
constexpr const char* kDense = "TensorDict";

at::Tensor batch_mask() { return at::ones({3, 4}, at::kBool); }

// The classes were read off tensordict 0.15.3 (the .venv's): the same op on
// the same values as TensorDict, LazyStackedTensorDict.lazy_stack(unbind(0)),
// _get_sub_tensordict(slice(1, 4)) of a [5, 4] one, PersistentTensorDict.from_dict.
const std::vector<Case>& cases() {
  static const std::vector<Case> all = {
      {"clone", [](const TensorDict& t) { return t.clone(); },
       {"TensorDict", "LazyStackedTensorDict", "TensorDict", "PersistentTensorDict"}, {nullptr, nullptr, nullptr, kDense}},
      {"to(double)", [](const TensorDict& t) { return t.to(at::kDouble); },
       {"TensorDict", "LazyStackedTensorDict", "TensorDict", "TensorDict"}},
      {"detach", [](const TensorDict& t) { return t.detach(); },
       {"TensorDict", "LazyStackedTensorDict", "TensorDict", "TensorDict"}},
      {"apply", [](const TensorDict& t) { return t.apply([](const at::Tensor& x) { return x * 2; }); },
       {"TensorDict", "LazyStackedTensorDict", "TensorDict", "TensorDict"}},
      {"index int", [](const TensorDict& t) { return t.index({1}); },
       {"TensorDict", "TensorDict", "_SubTensorDict", "_SubTensorDict"}, {nullptr, nullptr, kDense, kDense}},
      {"index slice", [](const TensorDict& t) { return t.index({Slice(0, 2)}); },
       {"TensorDict", "LazyStackedTensorDict", "_SubTensorDict", "_SubTensorDict"}, {nullptr, nullptr, kDense, kDense}},
      {"unsqueeze", [](const TensorDict& t) { return t.unsqueeze(0); }, {"TensorDict", "LazyStackedTensorDict", "-", "-"}},
      {"permute", [](const TensorDict& t) { return t.permute({1, 0}); }, {"TensorDict", "LazyStackedTensorDict", "-", "-"}},
      {"transpose", [](const TensorDict& t) { return t.transpose(0, 1); },
       {"TensorDict", "LazyStackedTensorDict", "-", "-"}},
      {"squeeze", [](const TensorDict& t) { return t.squeeze(); }, {"TensorDict", "LazyStackedTensorDict", "-", "-"}},
      {"view", [](const TensorDict& t) { return t.view({-1}); }, {"TensorDict", "LazyStackedTensorDict", "-", "-"}},
      {"reshape", [](const TensorDict& t) { return t.reshape({-1}); },
       {"TensorDict", "LazyStackedTensorDict", "TensorDict", "TensorDict"}},
      {"flatten", [](const TensorDict& t) { return t.flatten(0, 1); },
       {"TensorDict", "LazyStackedTensorDict", "TensorDict", "TensorDict"}},
      {"split", [](const TensorDict& t) { return t.split(1, 0)[0]; },
       {"TensorDict", "LazyStackedTensorDict", "TensorDict", "TensorDict"}},
      {"chunk", [](const TensorDict& t) { return t.chunk(3, 0)[0]; },
       {"TensorDict", "LazyStackedTensorDict", "TensorDict", "TensorDict"}},
      {"unbind", [](const TensorDict& t) { return t.unbind(0)[0]; },
       {"TensorDict", "TensorDict", "TensorDict", "TensorDict"}},
      {"expand", [](const TensorDict& t) { return t.expand({2, 3, 4}); },
       {"TensorDict", "TensorDict", "TensorDict", "TensorDict"}},
      {"select", [](const TensorDict& t) { return t.select({"a"}); },
       {"TensorDict", "LazyStackedTensorDict", "TensorDict", "-"}},
      {"exclude", [](const TensorDict& t) { return t.exclude({"a"}); },
       {"TensorDict", "LazyStackedTensorDict", "TensorDict", "-"}},
      {"sum", [](const TensorDict& t) { return t.sum({0}); }, {"TensorDict", "TensorDict", "TensorDict", "TensorDict"}},
      {"contiguous", [](const TensorDict& t) { return t.contiguous(); },
       {"TensorDict", "TensorDict", "TensorDict", "TensorDict"}},
      {"to_tensordict", [](const TensorDict& t) { return t.to_tensordict(); },
       {"TensorDict", "TensorDict", "TensorDict", "TensorDict"}},
      {"new_zeros", [](const TensorDict& t) { return t.new_zeros({2}); },
       {"TensorDict", "TensorDict", "TensorDict", "TensorDict"}},
      {"masked_select", [](const TensorDict& t) { return t.masked_select(batch_mask()); },
       {"TensorDict", "LazyStackedTensorDict", "_SubTensorDict", "_SubTensorDict"}, {nullptr, kDense, kDense, kDense}},
      {"get_td", [](const TensorDict& t) { return t.get_td("n"); },
       {"TensorDict", "LazyStackedTensorDict", "TensorDict", "PersistentTensorDict"}, {nullptr, nullptr, "_SubTensorDict", nullptr}},
      {"cpu", [](const TensorDict& t) { return t.cpu(); },
       {"TensorDict", "LazyStackedTensorDict", "TensorDict", "PersistentTensorDict"}, {nullptr, nullptr, nullptr, kDense}},
      // Pointwise math keeps a lazy stack (member by member), as in tensordict:
      {"exp", [](const TensorDict& t) { return t.exp(); },
       {"TensorDict", "LazyStackedTensorDict", "TensorDict", "TensorDict"}},
      {"add", [](const TensorDict& t) { return t + 1; },
       {"TensorDict", "LazyStackedTensorDict", "TensorDict", "TensorDict"}},
      {"gt", [](const TensorDict& t) { return t > 1; },
       {"TensorDict", "LazyStackedTensorDict", "TensorDict", "TensorDict"}},
      {"where", [](const TensorDict& t) { return t.where(batch_mask(), 0); },
       {"TensorDict", "LazyStackedTensorDict", "TensorDict", "TensorDict"}},
      {"masked_fill", [](const TensorDict& t) { return t.masked_fill(batch_mask(), 0); },
       {"TensorDict", "LazyStackedTensorDict", "TensorDict", "TensorDict"}},
      {"flatten_keys", [](const TensorDict& t) { return t.flatten_keys(); },
       {"TensorDict", "LazyStackedTensorDict", "TensorDict", "TensorDict"}, {nullptr, kDense, nullptr, nullptr}},
      {"empty", [](const TensorDict& t) { return t.empty(); },
       {"TensorDict", "LazyStackedTensorDict", "TensorDict", "TensorDict"}, {nullptr, kDense, nullptr, nullptr}},
  };
  return all;
}

}  // namespace

TEST_CASE("every op's result is held as a TensorDict and keeps tensordict's kind", "[handle]") {
  AllKinds k;
  const TensorDict kinds[4] = {k.dense, k.lazy, k.sub, k.h5};
  for (const auto& c : cases()) {
    for (int i = 0; i < 4; ++i) {
      if (std::string_view(c.kinds[i]) == "-") continue;
      INFO(c.name << " on a " << kinds[i].type_name());
      const std::string expected = c.here[i] ? c.here[i] : c.kinds[i];
      const TensorDict held = c.op(kinds[i]);  // the type the docs teach, whatever the kind
      CHECK(held.type_name() == expected);
      // Held, it prints, compares and moves as what it is.
      CHECK(repr(held).rfind(expected + "(", 0) == 0);
      CHECK(held.to_tensordict().allclose(c.op(kinds[i]).to_tensordict()));
    }
  }
}

TEST_CASE("in-place ops return the handle they were called on, of any kind", "[handle]") {
  AllKinds k;
  for (TensorDict* td : {&k.dense, &k.lazy, &k.sub}) {
    INFO(td->type_name());
    const Kind before = td->kind();
    TensorDict& same = td->mul_(2).add_(1).apply_([](const at::Tensor& x) { return x - 1; });
    CHECK(&same == td);
    CHECK(same.kind() == before);
    CHECK(at::equal(td->get("a"), td->to_tensordict().get("a")));
  }
}

TEST_CASE("a kind's own methods through as<K>(), refused with both kinds named", "[handle]") {
  AllKinds k;
  // Held as TensorDict, converted back without a copy.
  const TensorDict held = k.lazy.clone();
  const auto lazy = held.as<LazyStackedTensorDict>();
  CHECK(lazy.stack_dim() == 0);
  CHECK(lazy.tensordicts().size() == 3);
  CHECK(lazy.impl() == held.impl());
  CHECK(k.sub.as<SubTensorDict>().source().impl() == k.big.impl());
  CHECK(k.h5.as<PersistentTensorDict>().is_open());
  // Every wrong conversion is a TypeError naming both kinds.
  CHECK(TD_MESSAGE(k.dense.as<LazyStackedTensorDict>()) ==
        "cannot view a TensorDict as a LazyStackedTensorDict: it is another kind of tensordict");
  CHECK(TD_MESSAGE(k.lazy.as<SubTensorDict>()) ==
        "cannot view a LazyStackedTensorDict as a SubTensorDict: it is another kind of tensordict");
  CHECK(TD_MESSAGE(k.sub.as<PersistentTensorDict>()) ==
        "cannot view a SubTensorDict as a PersistentTensorDict: it is another kind of tensordict");
  CHECK(TD_MESSAGE(k.h5.as<LazyStackedTensorDict>()) ==
        "cannot view a PersistentTensorDict as a LazyStackedTensorDict: it is another kind of tensordict");
  CHECK_THROWS_AS(k.dense.as<PersistentTensorDict>(), TypeError);
  // The kind tag is what the handle reports.
  CHECK(k.dense.kind() == Kind::Dense);
  CHECK(k.lazy.kind() == Kind::LazyStack);
  CHECK(k.sub.kind() == Kind::SubView);
  CHECK(k.h5.kind() == Kind::Persistent);
}

TEST_CASE("the code of the earlier API compiles: results held as TensorDict", "[handle]") {
  // These declarations failed with "conversion from TensorDictBase to
  // non-scalar type TensorDict" when kind-preserving ops returned the base.
  TensorDict td = dense_values();
  TensorDict c = td.clone();
  TensorDict r = td.index({0});
  TensorDict f64 = td.to(at::kDouble);
  TensorDict shaped = td.reshape({12}).unsqueeze(0);
  std::vector<TensorDict> parts = td.unbind(0);
  TensorDict lazy = lazy_stack(parts, 0);
  TensorDict lazy_row = lazy.index({Slice(0, 2)});
  CHECK(c.kind() == Kind::Dense);
  CHECK(r.batch_size() == at::IntArrayRef{4});
  CHECK(f64.get("a").scalar_type() == at::kDouble);
  CHECK(shaped.batch_size() == at::IntArrayRef({1, 12}));
  CHECK(lazy_row.kind() == Kind::LazyStack);
  CHECK(lazy_row.as<LazyStackedTensorDict>().tensordicts().size() == 2);
}
