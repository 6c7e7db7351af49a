// Further ports of tensordict's TestTensorDicts tests (test_methods.py):
// reading and writing keys, locks, shape ops on the dense kinds, indexed
// writes, update through a sub-tensordict, and saving, each run over every
// fixture kind. Expected values are plain libtorch on the fixture's leaves.
#include <tensordict/state_dict.h>
#include <nlohmann/json.hpp>

#include <filesystem>
#include <functional>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "fixtures.h"

using namespace conformance;
using at::indexing::Ellipsis;
using at::indexing::Slice;
using tensordict::LockGuard;
using tensordict::NestedKey;

namespace {

// The kinds tensordict's fixtures build as lazy views (sub-tensordicts,
// legacy permuted/squeezed/unsqueezed views, h5): its shape-op tests expect
// "Make it dense" from them and stop there. Ours are dense results or
// sub-views; those tests are ported for the other kinds only.
bool lazy_view_in_tensordict(const std::string& name) {
  return is_sub_td(name) || name == "permute_td" || name == "unsqueezed_td" || name == "squeezed_td" ||
         name == "td_h5";
}

// Every tensor leaf of `got` equal to that of `expected` (same keys).
void require_same_leaves(const TensorDict& got, const TensorDict& expected) {
  const auto want = snapshot(expected);
  REQUIRE(snapshot(got).size() == want.size());
  for (const auto& [key, value] : want) {
    CAPTURE(key.repr());
    CHECK(same_tensor(got.get(key).contiguous(), value));
  }
}

}  // namespace

TEST_CASE(
    "shape, get of a key and of a one-part tuple, get with a default (test_methods.py::test_shape, "
    "test_getitem_string, test_getitem_nestedtuple, test_default_nested)",
    "[conformance][test_methods.py]") {
  for_each_fixture([](const std::string&, TensorDict& td) {
    CHECK(td.sizes() == td.batch_size());
    CHECK(td.get("a").defined());
    CHECK(same_tensor(td.get(NestedKey(std::vector<std::string>{"a"})), td.get("a")));
    const at::Tensor fallback = at::randn({});
    CHECK(same_tensor(td.get({"shiver", "my", "timbers"}, fallback), fallback));
  });
}

TEST_CASE(
    "setting a new key, a nested path and a tensordict with more batch dims (test_methods.py::test_setitem_string, "
    "test_setitem_nestedtuple, test_set_nested_batch_size)",
    "[conformance][test_methods.py]") {
  for_each_fixture([](const std::string&, TensorDict& td) {
    LockGuard unlocked(td, LockGuard::Unlock);
    td.set("d", at::randn({4, 3, 2, 1, 5}));
    CHECK(td.contains("d"));
    // (" a ", ("little", "story"), "about", ("myself",)) flattens to one path.
    td.set({" a ", "little", "story", "about", "myself"}, at::zeros(td.batch_size()));
    CHECK((td.get({" a ", "little", "story", "about", "myself"}) == 0).all().item<bool>());
    std::vector<int64_t> batch = td.batch_size().vec();
    batch.push_back(3);
    td.set("some_other_td", TensorDict({}, batch));
    CHECK(td.get_td("some_other_td").batch_size() == at::IntArrayRef(batch));
  });
}

TEST_CASE("del_ removes a key, a locked tensordict refuses (test_methods.py::test_remove)",
          "[conformance][test_methods.py]") {
  for_each_fixture([](const std::string& name, TensorDict& td) {
    {
      LockGuard unlocked(td, LockGuard::Unlock);
      TensorDict& out = td.del_("a");
      CHECK(&out == &td);
    }
    CHECK_FALSE(td.contains("a"));
    if (is_sub_td(name)) return;
    td.lock_();
    CHECK_THROWS_AS(td.del_("b"), std::runtime_error);
    CHECK_THAT(CONF_MESSAGE(td.del_("b")), Catch::Contains("locked"));
  });
}

TEST_CASE("rename_key_ across levels, and safe=true onto an existing key (test_methods.py::test_rename_key_nested)",
          "[conformance][test_methods.py]") {
  for_each_fixture([](const std::string&, TensorDict& td) {
    LockGuard unlocked(td, LockGuard::Unlock);
    td.set({"nested", "conflict"}, at::zeros(td.batch_size()));
    CHECK_THROWS_AS(td.rename_key_({"nested", "conflict"}, "b", /*safe=*/{.safe = true}), tensordict::KeyError);
    CHECK_THAT(CONF_MESSAGE(td.rename_key_({"nested", "conflict"}, "b", {.safe = true})),
               Catch::Contains("already present in TensorDict"));
    td.set({"nested", "first"}, at::zeros(td.batch_size()));
    td.rename_key_({"nested", "first"}, "second");
    CHECK((td.get("second") == 0).all().item<bool>());
    CHECK_FALSE(td.contains({"nested", "first"}));
    td.rename_key_("second", {"nested", "back"});
    CHECK((td.get({"nested", "back"}) == 0).all().item<bool>());
    CHECK_FALSE(td.contains("second"));
  });
}

TEST_CASE(
    "locking reaches a nested tensordict, which cannot be unlocked while its parent holds it "
    "(test_methods.py::test_lock_nested)",
    "[conformance][test_methods.py]") {
  for_each_fixture([](const std::string& name, TensorDict& td) {
    td.unlock_();
    td.set({"some", "nested"}, at::zeros(td.batch_size()));
    if (is_sub_td(name)) {
      CHECK_THROWS_AS(td.lock_(), std::runtime_error);
      CHECK_THAT(CONF_MESSAGE(td.lock_()), Catch::Contains("Cannot lock"));
      return;
    }
    CHECK_FALSE(td.is_locked());
    td.lock_();
    std::optional<TensorDict> some = td.get_td("some");
    CHECK(some->is_locked());
    CHECK_THROWS_AS(some->unlock_(), std::runtime_error);
    // Once the parent is gone, nothing holds the lock any more.
    td = TensorDict({}, {});
    some->unlock_();
    CHECK_FALSE(some->is_locked());
  });
}

TEST_CASE("unlock_ leaves an unlocked, unshared tensordict (test_methods.py::test_unlock)",
          "[conformance][test_methods.py]") {
  for_each_fixture([](const std::string&, TensorDict& td) {
    td.unlock_();
    CHECK_FALSE(td.is_locked());
    CHECK_FALSE(td.is_shared());
  });
}

TEST_CASE("mean over every batch dim and over dim 0 gives a tensordict (test_methods.py::test_mean)",
          "[conformance][test_methods.py]") {
  for_each_fixture([](const std::string&, TensorDict& td) {
    const auto leaves = snapshot(td);
    const TensorDict all = td.to_float().mean();
    const TensorDict first = td.to_float().mean({0});
    CHECK(all.batch_size().empty());
    CHECK(first.batch_size() == td.batch_size().slice(1));
    for (const auto& [key, value] : leaves) {
      CAPTURE(key.repr());
      CHECK(at::allclose(first.get(key), value.to(at::kFloat).mean(0)));
    }
  });
}

TEST_CASE(
    "transpose, unsqueeze and view of the dense kinds, transpose's dims out of range are a ValueError "
    "(test_methods.py::test_transpose, test_unsqueeze, test_view)",
    "[conformance][test_methods.py]") {
  for_each_fixture([](const std::string& name, TensorDict& td) {
    CHECK_THROWS_AS(td.transpose(-5, -6), tensordict::ValueError);
    if (lazy_view_in_tensordict(name)) return;
    const TensorDict t = td.transpose(0, 1);
    CHECK(t.batch_size() == at::IntArrayRef({3, 4, 2, 1}));
    for (const auto& [key, value] : snapshot(td)) {
      CAPTURE(key.repr());
      CHECK(same_tensor(t.get(key).contiguous(), value.transpose(0, 1).contiguous()));
      CHECK(same_tensor(td.transpose(-1, -2).get(key).contiguous(), value.transpose(2, 3).contiguous()));
    }
    TensorDict tt = td.transpose(-1, -2);
    {
      LockGuard unlocked(tt, LockGuard::Unlock);
      tt.set({"some", "transposed", "tensor"}, at::zeros(tt.batch_size()));
    }
    CHECK_THROWS_AS(tt.transpose(-5, -6), tensordict::ValueError);

    LockGuard unlocked(td, LockGuard::Unlock);
    for (int64_t dim : {0, 1}) {
      TensorDict u = td.unsqueeze(dim);
      const at::Tensor ones = at::ones_like(td.get("a").unsqueeze(dim));
      u.set("a", ones);
      CHECK((u.get("a") == 1).all().item<bool>());
    }
    TensorDict v = td.view({-1});
    const at::Tensor ones = at::ones({v.batch_size()[0], 5});
    v.set("a", ones);
    CHECK(same_tensor(v.get("a"), ones));
  });
}

TEST_CASE("permute then its inverse gives the tensordict back (test_methods.py::test_permute_applied_twice)",
          "[conformance][test_methods.py]") {
  at::manual_seed(0);
  for_each_fixture([](const std::string&, TensorDict& td) {
    for (int i = 0; i < 10; ++i) {
      const at::Tensor p = at::randperm(4);
      const at::Tensor inv = p.argsort();
      const std::vector<int64_t> pv(p.data_ptr<int64_t>(), p.data_ptr<int64_t>() + 4);
      const std::vector<int64_t> iv(inv.data_ptr<int64_t>(), inv.data_ptr<int64_t>() + 4);
      const TensorDict back = td.permute(pv).permute(iv);
      CHECK(back.batch_size() == td.batch_size());
      require_same_leaves(back, td);
    }
  });
}

TEST_CASE(
    "to_tensordict and a tensordict rebuilt key by key equal the source (test_methods.py::test_to_tensordict, "
    "test_from_empty)",
    "[conformance][test_methods.py]") {
  for_each_fixture([](const std::string&, TensorDict& td) {
    CHECK((td.to_tensordict() == td).all());
    TensorDict rebuilt({}, td.batch_size(), td.device());
    for (const auto& [key, value] : td.items()) rebuilt.set(key, value);
    CHECK(rebuilt.batch_size() == td.batch_size());
    CHECK(rebuilt.device() == td.device());
    require_same_leaves(rebuilt, td);
  });
}

TEST_CASE(
    "update adds keys and nested keys, through a sub-tensordict a tensor cannot replace a tensordict "
    "(test_methods.py::test_update)",
    "[conformance][test_methods.py]") {
  for_each_fixture([](const std::string& name, TensorDict& td) {
    LockGuard unlocked(td, LockGuard::Unlock);
    const auto zeros = [&] { return at::zeros(td.batch_size()); };
    std::vector<NestedKey> keys = td.keys();
    td.update(TensorDict({{"x", zeros()}}, td.batch_size()));
    CHECK(td.keys().size() == keys.size() + 1);
    CHECK(td.contains("x"));
    TensorDict nested({}, td.batch_size());
    nested.set({"somenested", "z"}, zeros());
    td.update(nested);
    CHECK(td.get_td("somenested").batch_size() == td.batch_size());
    nested = TensorDict({}, td.batch_size());
    nested.set({"somenested", "zz"}, zeros());
    td.update(nested);
    CHECK(td.contains({"somenested", "z"}));
    CHECK(td.contains({"somenested", "zz"}));
    td.set("newnested", TensorDict({{"z", zeros()}}, td.batch_size()));
    td.update(TensorDict({{"newnested", TensorDict({{"y", zeros()}}, td.batch_size())}}, td.batch_size()));
    CHECK(td.contains({"newnested", "z"}));
    CHECK(td.contains({"newnested", "y"}));
    if (is_sub_td(name)) {
      CHECK_THROWS_AS(td.update(TensorDict({{"newnested", zeros()}}, td.batch_size())), tensordict::ValueError);
      CHECK_THAT(CONF_MESSAGE(td.update(TensorDict({{"newnested", zeros()}}, td.batch_size()))),
                 Catch::Contains("Tried to replace a tensordict with"));
    } else {
      td.update(TensorDict({{"newnested", zeros()}}, td.batch_size()));
      CHECK(td.get_value("newnested")->is_tensor());
    }
  });
}

TEST_CASE("update through a sub-tensordict writes into the source (test_methods.py::test_update_subtensordict)",
          "[conformance][test_methods.py]") {
  const std::vector<std::string> index_kinds = {"mask", "int", "tensor1", "tensor2", "slice_tensor"};
  for (const auto& kind : index_kinds) {
    INFO("index " << kind);
    for_each_fixture([&](const std::string&, TensorDict& td) {
      std::vector<tensordict::TensorIndex> index;
      const int64_t n = td.batch_size()[0], m = td.batch_size()[1];
      if (kind == "mask") {
        at::Tensor mask = at::zeros({n}, at::kBool);
        mask[n - 1] = true;
        index = {mask};
      } else if (kind == "int") {
        index = {n - 1};
      } else if (kind == "tensor1") {
        index = {at::scalar_tensor(n - 1, at::kLong)};
      } else if (kind == "tensor2") {
        index = {at::tensor(std::vector<int64_t>{n - 2, n - 1})};
      } else {
        index = {Slice(), at::tensor(std::vector<int64_t>{m - 2, m - 1})};
      }
      TensorDict sub = td.get_sub_tensordict(index);
      CHECK(sub.batch_size() == td.index(index).batch_size());
      const TensorDict twos = td.index(index).to_tensordict().apply([](const at::Tensor& x) { return x * 0 + 2; });
      {
        LockGuard unlocked(td, LockGuard::Unlock);
        sub.update(twos);
      }
      CHECK((sub == 2).all());
      CHECK((td.index(index) == 2).all());
    });
  }
}

TEST_CASE("indexed writes of slices, with and without broadcasting (test_methods.py::test_setitem_slice)",
          "[conformance][test_methods.py]") {
  using Index = std::vector<tensordict::TensorIndex>;
  // (where, what): td[where] = td[what].zero_(), as a clone and as a dense copy.
  const std::vector<std::pair<Index, Index>> writes = {
      {{Slice(0, 1)}, {Slice(0, 1)}},
      {{Slice(0, 1)}, {0}},
      {{Slice(0, 1), 0}, {0, 0}},
      {{Slice(0, 1), Slice(), 0}, {0, Slice(), 0}},
  };
  for (const auto& [where, what] : writes) {
    for (bool dense : {false, true}) {
      for_each_fixture([&, &where = where, &what = what](const std::string&, TensorDict& td) {
        const TensorDict value = dense ? td.index(what).to_tensordict().zero_() : td.index(what).clone().zero_();
        td.index_put_(where, value);
        CHECK((td.index(where) == 0).all());
      });
    }
  }
  for_each_fixture([](const std::string&, TensorDict& td) {
    const TensorDict copy = td.clone();
    td.index_put_({Slice()}, copy);
    require_same_leaves(td, copy);
  });
}

TEST_CASE("indexed writes with an ellipsis (test_methods.py::test_setitem_ellipsis)", "[conformance][test_methods.py]") {
  using Index = std::vector<tensordict::TensorIndex>;
  const std::vector<Index> indices = {{Ellipsis}, {Ellipsis, 0}, {0, Ellipsis}, {0, Ellipsis, 0}};
  for (const auto& idx : indices) {
    for_each_fixture([&](const std::string&, TensorDict& td) {
      TensorDict copy = td.clone();
      TensorDict zeros = copy.index(idx).clone();
      zeros.zero_();
      for (const auto& [key, value] : snapshot(zeros)) CHECK((value == 0).all().item<bool>());
      copy.index_put_(idx, zeros);
      CHECK((copy.index(idx) == 0).all());
    });
  }
}

TEST_CASE(
    "save then load_memmap gives the leaves back, memmap_ into a directory, refused for sub-tensordicts and h5 "
    "(test_methods.py::test_save_load_memmap, test_memmap_)",
    "[conformance][test_methods.py]") {
  // As tensordict's tests: copy_existing=True (the memmap fixture's leaves are mapped elsewhere).
  const tensordict::MemmapOptions copy_existing{.copy_existing = true};
  for_each_fixture([&](const std::string& name, TensorDict& td) {
    td_test::TempDir dir;
    if (name != "sub_td2") {
      td.save((dir / "saved").string(), copy_existing);
      const TensorDict loaded = tensordict::load_memmap((dir / "saved").string());
      CHECK(loaded.batch_size() == td.batch_size());
      CHECK((td.cpu() == loaded.cpu()).all());
      for (const auto& [key, value] : td.items({.include_nested = true, .leaves_only = true, .is_leaf = tensordict::IsLeaf::NonTensor})) {
        if (!value.is_non_tensor()) continue;
        CAPTURE(key.repr());
        CHECK(loaded.get_non_tensor(key) == value.non_tensor().data());
      }
    }
    const std::string prefix = (dir / "in_place").string();
    if (is_sub_td(name) || name == "td_h5") {
      CHECK_THROWS_AS(td.memmap_(prefix, copy_existing), std::runtime_error);
      return;
    }
    const auto before = snapshot(td);
    td.memmap_(prefix, copy_existing);
    CHECK(td.is_memmap());
    // Directories memmap_ did not write are left out on load.
    std::filesystem::create_directory(dir / "in_place" / "some_other_path");
    const TensorDict loaded = tensordict::load_memmap(prefix);
    for (const auto& [key, value] : before) {
      CAPTURE(key.repr());
      CHECK(same_tensor(loaded.get(key), value));
    }
  });
}

TEST_CASE("load_state_dict of state_dict gives the values back (test_methods.py::test_state_dict)",
          "[conformance][test_methods.py]") {
  for_each_fixture([](const std::string&, TensorDict& td) {
    const auto sd = td.state_dict();
    TensorDict zero = td.clone().detach();
    zero.zero_();
    zero.load_state_dict(sd);
    require_same_leaves(zero, td);
  });
}

TEST_CASE(
    "setdefault of an existing nested key returns its value, of a missing one sets it "
    "(test_methods.py::test_setdefault_nested)",
    "[conformance][test_methods.py]") {
  for_each_fixture([](const std::string& name, TensorDict& td) {
    if (is_sub_td(name)) return;  // tensordict's test sets the sub-tensordict's source: no C++ counterpart
    LockGuard unlocked(td, LockGuard::Unlock);
    const at::Tensor tensor = at::randn({4, 3, 2, 1, 5});
    const at::Tensor tensor2 = at::ones({4, 3, 2, 1, 5});
    const TensorDict sub_sub({{"c", tensor}}, {4, 3, 2, 1});
    const TensorDict sub({{"b", sub_sub}}, {4, 3, 2, 1});
    if (name == "td_h5") td.del_("a");
    td.set("a", sub);
    CHECK(same_tensor(td.setdefault({"a", "b", "c"}, tensordict::Value(tensor2)).tensor(), tensor));
    if (name == "stacked_td") return;
    CHECK(same_tensor(td.setdefault({"a", "b", "d"}, tensordict::Value(tensor2)).tensor(), tensor2));
    CHECK(same_tensor(td.get({"a", "b", "d"}), tensor2));
  });
}

TEST_CASE("squeeze without a dim removes every size-1 batch dim and shares the leaves "
          "(test_methods.py::test_squeeze_with_none)",
          "[conformance][test_methods.py]") {
  for_each_fixture([](const std::string& name, TensorDict& td) {
    if (lazy_view_in_tensordict(name)) return;
    TensorDict squeezed = td.squeeze();
    for (int64_t d : squeezed.batch_size()) CHECK(d > 1);
    const at::Tensor ones = at::ones_like(td.get("a").squeeze());
    squeezed.set_("a", ones);
    CHECK(same_tensor(squeezed.get("a"), ones));
    CHECK((td.get("a") == 1).all().item<bool>());
  });
}

TEST_CASE("indexing keeps is_memmap, is_shared and the device (test_methods.py::test_indexed_properties)",
          "[conformance][test_methods.py]") {
  for_each_fixture([](const std::string&, TensorDict& td) {
    const TensorDict first = td.index({0});
    CHECK(first.is_shared() == td.is_shared());
    CHECK(first.device() == td.device());
  });
}

TEST_CASE("reductions over everything, over dim 1 and with keepdim, and folded into one tensor "
          "(test_methods.py::test_reduction)",
          "[conformance][test_methods.py]") {
  using tensordict::Reduction;
  for_each_fixture([](const std::string&, TensorDict& td) {
    const TensorDict f = td.exclude({"c"}).to_float();  // tensordict's _to_float: float leaves
    std::vector<int64_t> without1, keep2;
    for (int64_t i = 0; i < f.batch_dims(); ++i) {
      if (i != 1) without1.push_back(f.batch_size()[i]);
      keep2.push_back(i == 2 ? 1 : f.batch_size()[i]);
    }
    const std::vector<std::pair<std::string, std::function<TensorDict(std::vector<int64_t>, bool)>>> reductions = {
        {"mean", [&](auto d, bool k) { return f.mean(d, {.keepdim = k}); }},
        {"nanmean", [&](auto d, bool k) { return f.nanmean(d, {.keepdim = k}); }},
        {"sum", [&](auto d, bool k) { return f.sum(d, {.keepdim = k}); }},
        {"nansum", [&](auto d, bool k) { return f.nansum(d, {.keepdim = k}); }},
        {"prod", [&](auto d, bool k) { return f.prod(d, {.keepdim = k}); }},
        {"std", [&](auto d, bool k) { return f.std(d, {.keepdim = k}); }},
        {"var", [&](auto d, bool k) { return f.var(d, {.keepdim = k}); }},
    };
    for (const auto& [red, fn] : reductions) {
      CAPTURE(red);
      CHECK(fn({}, false).batch_size().empty());
      CHECK(fn({1}, false).batch_size() == at::IntArrayRef(without1));
      CHECK(fn({2}, true).batch_size() == at::IntArrayRef(keep2));
    }
    for (Reduction op : {Reduction::mean, Reduction::nanmean, Reduction::sum, Reduction::nansum, Reduction::prod,
                         Reduction::std, Reduction::var}) {
      CHECK(f.reduce(op).defined());
    }
    CHECK(f.quantile(0.5).batch_size().empty());
    CHECK(f.quantile(0.5, 1).batch_size() == at::IntArrayRef(without1));
    CHECK(f.quantile(0.5, 2, {.keepdim = true}).batch_size() == at::IntArrayRef(keep2));
    CHECK(f.reduce_quantile(0.5).dim() == 0);  // quantile(0.5, reduce=True)
  });
}

TEST_CASE("LockGuard locks and unlocks for a scope and restores the state (test_methods.py::test_enter_exit)",
          "[conformance][test_methods.py]") {
  for_each_fixture([](const std::string& name, TensorDict& td) {
    if (is_sub_td(name)) return;
    const bool was_locked = td.is_locked();
    {
      LockGuard locked(td);
      CHECK(td.is_locked());
      {
        LockGuard unlocked(td, LockGuard::Unlock);
        CHECK_FALSE(td.is_locked());
      }
      CHECK(td.is_locked());
    }
    CHECK(td.is_locked() == was_locked);
  });
}

TEST_CASE("renaming a locked tensordict's dims renames its nested tensordicts' (test_methods.py::test_lock_change_names)",
          "[conformance][test_methods.py]") {
  for_each_fixture([](const std::string&, TensorDict& td) {
    tensordict::Names names, renamed;
    for (int64_t i = 0; i < td.batch_dims(); ++i) {
      names.emplace_back(std::to_string(i));
      renamed.emplace_back(std::to_string(-i));
    }
    try {
      td.rename_(names);
      td.lock_();
    } catch (const std::exception&) {
      return;  // as tensordict's test: kinds that cannot be named or locked stop here
    }
    (void)td.items({.include_nested = true});
    td.rename_(renamed);
    for (const auto& [key, value] : td.items({.include_nested = true})) {
      if (!value.is_tensordict()) continue;
      CAPTURE(key.repr());
      const auto got = value.tensordict().names();
      const bool leading_renamed = tensordict::Names(got.begin(), got.begin() + td.batch_dims()) == renamed;
      CHECK(leading_renamed);
    }
  });
}

TEST_CASE("indexed write of a dense zeroed slice (test_methods.py::test_broadcast)", "[conformance][test_methods.py]") {
  for_each_fixture([](const std::string&, TensorDict& td) {
    TensorDict zeros = td.index({Slice(), Slice(0, 2)}).to_tensordict();
    zeros.zero_();
    td.index_put_({Slice(), Slice(0, 2)}, zeros);
    CHECK((td.index({Slice(), Slice(0, 2)}) == 0).all());
  });
}

TEST_CASE("set_non_tensor and get_non_tensor, refused when locked (test_methods.py::test_non_tensor_data)",
          "[conformance][test_methods.py]") {
  for_each_fixture([](const std::string& name, TensorDict& td) {
    if (!is_sub_td(name)) {
      LockGuard locked(td);
      CHECK_THROWS_AS(td.set_non_tensor({"this", "will"}, "fail"), std::runtime_error);
      CHECK_THAT(CONF_MESSAGE(td.set_non_tensor({"this", "will"}, "fail")), Catch::Contains("locked"));
    }
    LockGuard unlocked(td, LockGuard::Unlock);
    td.set({"this", "tensor"}, at::zeros(td.batch_size()));
    td.set_non_tensor({"this", "will"}, "succeed");
    CHECK(td.get_value({"this", "will"})->is_non_tensor());
    const tensordict::Json got = td.get_non_tensor({"this", "will"});
    CHECK(got == tensordict::Json("succeed"));
  });
}
