// append_memmap (a saved tree grows along its first batch dim) and
// memmap_refresh_ seeing the growth. Messages are tensordict 0.15.3's, as its
// append_memmap raises them (run in the test venv).
#include <sys/stat.h>
#include <nlohmann/json.hpp>

#include "persist_helpers.h"
#include <tensordict/detail/tensorclass_memmap.h>
#include "tensordict/memmap.h"

using namespace tensordict;
using namespace td_test;
using Catch::Matchers::Contains;
using Catch::Matchers::Equals;

namespace {

// Rows [offset, offset + n) of a tree with a leaf, a nested level of two batch
// dims, dim names and a non-tensor value (the same in every chunk).
TensorDict chunk(int64_t offset, int64_t n) {
  TensorDict td({{"obs", iota({n, 3}) + static_cast<double>(offset * 3)},
                 {"next", TensorDict({{"reward", iota({n, 2}, at::kLong) + offset * 2},
                                      {"done", (iota({n, 2, 1}, at::kLong) + offset * 2).remainder(3) == 0}},
                                     {n, 2})}},
                {n});
  td.set_non_tensor("task", "walk");
  td.rename_({"time"});
  return td;
}

Json meta_of(const fs::path& dir) { return Json::parse(read_text(dir / "meta.json")); }

// The staging directories an append leaves beside `target` (none once published).
std::vector<std::string> staging_beside(const fs::path& target) {
  std::vector<std::string> out;
  for (const auto& e : fs::directory_iterator(target.parent_path())) {
    const std::string name = e.path().filename().string();
    if (name.find(".tc-staging.") != std::string::npos || name.find(".tc-lock") != std::string::npos) {
      out.push_back(name);
    }
  }
  return out;
}

}  // namespace

TEST_CASE("append_memmap grows a tree at several sizes, nested levels and meta.json included", "[memmap][append]") {
  TempDir tmp;
  const fs::path dir = tmp / "buffer";
  chunk(0, 2).memmap(dir.string());
  int64_t rows = 2;
  for (int64_t n : {1, 3, 0, 5}) {
    INFO("appending " << n << " rows to " << rows);
    append_memmap(dir.string(), chunk(rows, n));
    rows += n;
    // Expected: each leaf computed alone over all the rows appended so far.
    const TensorDict all = chunk(0, rows);
    const TensorDict loaded = TensorDict::load_memmap(dir.string());
    REQUIRE(loaded.batch_size() == at::IntArrayRef{rows});
    REQUIRE(loaded.get_td("next").batch_size() == at::IntArrayRef{rows, 2});
    REQUIRE((loaded.names() == Names{"time"}));
    require_same_entries(loaded, all);
    REQUIRE(at::equal(loaded.get("obs"), at::arange(rows * 3, at::kFloat).reshape({rows, 3})));
    // tensordict's meta.json, only the sizes along the first dim changed.
    const Json top = meta_of(dir);
    REQUIRE(top["shape"] == Json::array({rows}));
    REQUIRE(top["obs"]["shape"] == Json::array({rows, 3}));
    REQUIRE(top["_names"] == Json::array({"time"}));
    const Json next = meta_of(dir / "next");
    REQUIRE(next["shape"] == Json::array({rows, 2}));
    REQUIRE(next["done"]["shape"] == Json::array({rows, 2, 1}));
    REQUIRE(meta_of(dir / "task")["data"] == "walk");
    REQUIRE(fs::file_size(dir / "obs.memmap") == static_cast<std::uintmax_t>(rows * 3 * 4));
    REQUIRE(fs::file_size(dir / "next" / "reward.memmap") == static_cast<std::uintmax_t>(rows * 2 * 8));
    REQUIRE(staging_beside(dir).empty());
    REQUIRE(tree_of(dir) == std::vector<std::string>{"meta.json", "next", "next/done.memmap", "next/meta.json",
                                                     "next/reward.memmap", "obs.memmap", "task", "task/meta.json"});
  }
}

// ports the example of tensordict's append_memmap docstring (tensordict/_td_functions.py).
TEST_CASE("append_memmap: the docstring example", "[memmap][append][docstring]") {
  TempDir tmp;
  TensorDict({{"a", at::zeros({3, 2})}}, {3}).save((tmp / "d").string());
  append_memmap((tmp / "d").string(), TensorDict({{"a", at::ones({2, 2})}}, {2}));
  REQUIRE(at::equal(TensorDict::load_memmap((tmp / "d").string()).get("a").sum(-1),
                    at::tensor({0.f, 0.f, 0.f, 2.f, 2.f})));
}

TEST_CASE("memmap_refresh_ sees what append_memmap added, at every level", "[memmap][append]") {
  TempDir tmp;
  const std::string dir = (tmp / "buffer").string();
  TensorDict written = chunk(0, 3).memmap(dir);
  TensorDict loaded = TensorDict::load_memmap(dir);
  append_memmap(dir, chunk(3, 2));
  // Handles mapped before keep their rows until refreshed.
  REQUIRE(loaded.batch_size() == at::IntArrayRef{3});
  REQUIRE(at::equal(loaded.get("obs"), chunk(0, 3).get("obs")));
  for (TensorDict* td : {&written, &loaded}) {
    const bool locked = td->is_locked();
    td->memmap_refresh_();
    REQUIRE(td->is_locked() == locked);
    REQUIRE(td->batch_size() == at::IntArrayRef{5});
    REQUIRE((td->names() == Names{"time"}));
    REQUIRE(td->get_td("next").batch_size() == at::IntArrayRef{5, 2});
    require_same_entries(*td, chunk(0, 5));
  }
  // And a write through the refreshed handle reaches the grown file.
  loaded.get("obs").index({4}).fill_(-1);
  REQUIRE(TensorDict::load_memmap(dir).get("obs").index({4}).eq(-1).all().item<bool>());
}

TEST_CASE("append_memmap: rows of any kind, on a tree written by memmap_ or save", "[memmap][append]") {
  TempDir tmp;
  const std::string dir = (tmp / "d").string();
  TensorDict td = chunk(0, 2);
  td.memmap_(dir);
  const TensorDict more = chunk(2, 4);
  // A lazy stack of rows, then a view of some rows.
  append_memmap(dir, lazy_stack({more.index({0}), more.index({1})}));
  append_memmap(dir, more.get_sub_tensordict({at::indexing::Slice(2, 4)}));
  require_same_entries(TensorDict::load_memmap(dir), chunk(0, 6));
  // The in-place memmap_ handle maps the old files, still whole.
  require_same_entries(td, chunk(0, 2));
}

TEST_CASE("append_memmap: leaves without elements, and a tree saved with no rows", "[memmap][append]") {
  TempDir tmp;
  const fs::path dir = tmp / "d";
  TensorDict({{"a", at::zeros({0, 2})}, {"none", at::zeros({0, 0})}}, {0}).memmap(dir.string());
  REQUIRE(tree_of(dir) == std::vector<std::string>{"meta.json"});  // tensordict writes no empty file
  append_memmap(dir.string(), TensorDict({{"a", iota({2, 2})}, {"none", at::zeros({2, 0})}}, {2}));
  REQUIRE(tree_of(dir) == std::vector<std::string>{"a.memmap", "meta.json"});
  append_memmap(dir.string(), TensorDict({{"a", iota({1, 2}) + 4}, {"none", at::zeros({1, 0})}}, {1}));
  const TensorDict loaded = TensorDict::load_memmap(dir.string());
  REQUIRE(at::equal(loaded.get("a"), iota({3, 2})));
  REQUIRE(loaded.get("none").sizes() == at::IntArrayRef{3, 0});
}

TEST_CASE("append_memmap: equal non-tensor values, one or stacked, keep the saved value", "[memmap][append]") {
  TempDir tmp;
  const std::string dir = (tmp / "d").string();
  chunk(0, 2).memmap(dir);
  TensorDict rows = chunk(2, 2);
  rows.set("task", Value(NonTensorData::stack({"walk", "walk"}, {2})));
  append_memmap(dir, rows);
  REQUIRE(TensorDict::load_memmap(dir).get_non_tensor("task") == "walk");
  REQUIRE(TensorDict::load_memmap(dir).batch_size() == at::IntArrayRef{4});
}

TEST_CASE("append_memmap refuses what cannot grow, naming the entry, and writes nothing", "[memmap][append][errors]") {
  TempDir tmp;
  const std::string dir = (tmp / "d").string();
  chunk(0, 3).memmap(dir);
  const std::string before = read_text(fs::path(dir) / "meta.json");
  const auto obs_bytes = fs::file_size(fs::path(dir) / "obs.memmap");
  // chunk(3, 2) with one entry replaced (nested keys as paths).
  const auto rows_with = [](const NestedKey& key, Value value) {
    TensorDict rows = chunk(3, 2);
    rows.unlock_();
    rows.del_(key);
    rows.set(key, std::move(value));
    return rows;
  };

  SECTION("a directory") {
    const std::string missing = (tmp / "none").string();
    REQUIRE_THAT(TD_MESSAGE(append_memmap(missing, chunk(3, 2))),
                 Equals("append_memmap appends to a directory written by save or memmap, and " + missing +
                        " is not one."));
    REQUIRE_THROWS_AS(append_memmap(missing, chunk(3, 2)), ValueError);
  }
  SECTION("batch dims") {
    REQUIRE_THAT(TD_MESSAGE(append_memmap(dir, TensorDict({{"obs", at::zeros({3})}}))),
                 Equals("append_memmap appends along the first batch dimension, which the saved tensordict (batch "
                        "size torch.Size([3])) and the rows (batch size torch.Size([])) must both have."));
    TempDir other;
    TensorDict({{"a", at::zeros({3})}}).memmap((other / "s").string());
    REQUIRE_THAT(TD_MESSAGE(append_memmap((other / "s").string(), TensorDict({{"a", at::zeros({3})}}, {3}))),
                 Equals("append_memmap appends along the first batch dimension, which the saved tensordict (batch "
                        "size torch.Size([])) and the rows (batch size torch.Size([3])) must both have."));
    TensorDict({{"a", at::zeros({3, 4, 2})}}, {3, 4}).memmap((other / "b").string());
    REQUIRE_THAT(TD_MESSAGE(append_memmap((other / "b").string(), TensorDict({{"a", at::zeros({2, 5, 2})}}, {2, 5}))),
                 Equals("Cannot append rows of batch size torch.Size([2, 5]) to the saved tensordict, of batch size "
                        "torch.Size([3, 4]): they differ beyond the first dimension."));
    REQUIRE_THAT(TD_MESSAGE(append_memmap((other / "b").string(), TensorDict({{"a", at::zeros({2, 4, 2})}}, {2}))),
                 Equals("Cannot append rows of batch size torch.Size([2]) to the saved tensordict, of batch size "
                        "torch.Size([3, 4]): they differ beyond the first dimension."));
  }
  SECTION("keys") {
    TensorDict rows = chunk(3, 2).exclude({"obs"});
    REQUIRE_THAT(TD_MESSAGE(append_memmap(dir, rows)),
                 Equals("Cannot append rows with the keys ['next', 'task'] to the saved tensordict, which has the "
                        "keys ['next', 'obs', 'task']."));
    REQUIRE_THAT(TD_MESSAGE(append_memmap(dir, rows_with({"next", "reward"}, Value(at::zeros({2, 2}, at::kLong)))
                                                   .exclude({{"next", "done"}}))),
                 Equals("Cannot append rows with the keys ['reward'] to the entry 'next', which has the keys "
                        "['done', 'reward']."));
  }
  SECTION("dtypes and shapes") {
    REQUIRE_THAT(TD_MESSAGE(append_memmap(dir, rows_with("obs", Value(at::zeros({2, 3}, at::kDouble))))),
                 Equals("Cannot append rows of dtype torch.float64 and shape (2, 3) to the entry 'obs', of dtype "
                        "torch.float32 and shape (3, 3)."));
    REQUIRE_THAT(TD_MESSAGE(append_memmap(dir, rows_with("obs", Value(at::zeros({2, 4}))))),
                 Equals("Cannot append rows of dtype torch.float32 and shape (2, 4) to the entry 'obs', of dtype "
                        "torch.float32 and shape (3, 3)."));
    REQUIRE_THAT(
        TD_MESSAGE(append_memmap(dir, rows_with({"next", "reward"}, Value(at::zeros({2, 2}, at::kInt))))),
        Equals("Cannot append rows of dtype torch.int32 and shape (2, 2) to the entry ('next', 'reward'), of dtype "
               "torch.int64 and shape (3, 2)."));
  }
  SECTION("entries of another kind") {
    REQUIRE_THAT(TD_MESSAGE(append_memmap(dir, rows_with("next", Value(at::zeros({2}))))),
                 Equals("Cannot append a Tensor to the entry 'next', a TensorDict."));
    REQUIRE_THAT(TD_MESSAGE(append_memmap(dir, rows_with("obs", Value(TensorDict({}, {2}))))),
                 Equals("Cannot append a TensorDict to the entry 'obs', a tensor."));
    REQUIRE_THAT(TD_MESSAGE(append_memmap(dir, rows_with("obs", Value(NonTensorData("x"))))),
                 Equals("Cannot append a NonTensorData to the entry 'obs', a tensor."));
  }
  SECTION("non-tensor values") {
    REQUIRE_THAT(TD_MESSAGE(append_memmap(dir, rows_with("task", Value(NonTensorData("run"))))),
                 Equals("Cannot append to the entry 'task': the saved non-tensor value 'walk' stays as it is, so "
                        "the rows must hold the same value, not 'run'."));
    REQUIRE_THAT(TD_MESSAGE(append_memmap(dir, rows_with("task", Value(NonTensorData::stack({"walk", "run"}, {2}))))),
                 Contains("Cannot append to the entry 'task': the saved non-tensor value 'walk' stays as it is, so "
                          "the rows must hold the same value, not NonTensorStack(") &&
                     Contains("'run'"));
    REQUIRE_THAT(TD_MESSAGE(append_memmap(dir, rows_with("task", Value(at::zeros({2}))))),
                 Contains("Cannot append to the entry 'task': the saved non-tensor value 'walk' stays as it is, so "
                          "the rows must hold the same value, not "));
  }
  // Nothing was written by any refused append.
  REQUIRE(read_text(fs::path(dir) / "meta.json") == before);
  REQUIRE(fs::file_size(fs::path(dir) / "obs.memmap") == obs_bytes);
  REQUIRE(staging_beside(fs::path(dir)).empty());
  require_same_entries(TensorDict::load_memmap(dir), chunk(0, 3));
}

TEST_CASE("append_memmap: a NonTensorStack, a lazy stack and a nested tensor cannot grow", "[memmap][append][errors]") {
  TempDir tmp;
  TensorDict stacked({{"a", at::zeros({3})}}, {3});
  stacked.set("s", Value(NonTensorData::stack({"a", "b", "c"}, {3})));
  stacked.memmap((tmp / "stack").string());
  TensorDict rows({{"a", at::zeros({2})}}, {2});
  rows.set("s", Value(NonTensorData::stack({"a", "b"}, {2})));
  REQUIRE_THAT(TD_MESSAGE(append_memmap((tmp / "stack").string(), rows)),
               Equals("Cannot append to the entry 's', a NonTensorStack: a stack of non-tensor values cannot grow."));

  const TensorDict member({{"a", at::zeros({2})}});
  lazy_stack({member, member}).memmap((tmp / "lazy").string());
  REQUIRE_THAT(TD_MESSAGE(append_memmap((tmp / "lazy").string(), TensorDict({{"a", at::zeros({2, 2})}}, {2}))),
               Equals("Cannot append a TensorDict to the saved tensordict, a LazyStackedTensorDict."));
  TensorDict({{"x", Value(lazy_stack({member, member}))}}, {2}).memmap((tmp / "nested_lazy").string());
  REQUIRE_THAT(TD_MESSAGE(append_memmap((tmp / "nested_lazy").string(),
                                        TensorDict({{"x", TensorDict({{"a", at::zeros({2, 2})}}, {2})}}, {2}))),
               Equals("Cannot append to the entry 'x': a lazy stack cannot grow."));

  const at::Tensor jagged = at::_nested_tensor_from_tensor_list({at::zeros({2}), at::zeros({3})});
  TensorDict({{"j", jagged}}, {2}).memmap((tmp / "jagged").string());
  REQUIRE_THAT(TD_MESSAGE(append_memmap((tmp / "jagged").string(), TensorDict({{"j", jagged}}, {2}))),
               Equals("Cannot append to the entry 'j': a nested tensor cannot grow."));
}

TEST_CASE("append_memmap: a tensorclass level grows only by rows of its class", "[memmap][append]") {
  TempDir tmp;
  const std::string dir = (tmp / "obs").string();
  const MemmapClassTags tags{{{}, MemmapClassTag{"<class 'tcmod.Sample'>", Json{{"label", "l"}}}}};
  memmap_tensorclass(TensorDict({{"x", iota({3, 2})}}, {3}), dir, tags);
  // Loaded without a registered class: x, label and the class name.
  const TensorDict saved = TensorDict::load_memmap(dir);
  REQUIRE(saved.get_non_tensor(std::string(kLoadedClassKey)) == "<class 'tcmod.Sample'>");

  REQUIRE_THAT(TD_MESSAGE(append_memmap(dir, TensorDict({{"x", iota({2, 2})}}, {2}))),
               Equals("Cannot append a TensorDict to the saved tensordict, a Sample."));
  REQUIRE_THAT(TD_MESSAGE(append_memmap_tensorclass(dir, TensorDict({{"x", iota({2, 2})}}, {2}),
                                                    {{{}, MemmapClassTag{"<class 'tcmod.OtherSample'>", Json::object()}}})),
               Equals("Cannot append a OtherSample to the saved tensordict, a Sample."));
  REQUIRE_THAT(TD_MESSAGE(append_memmap_tensorclass(dir, TensorDict({{"x", iota({2, 2})}}, {2}),
                                                    {{{}, MemmapClassTag{"<class 'tcmod.Sample'>", {{"label", "m"}}}}})),
               Equals("Cannot append to the entry 'label': the saved non-tensor value 'l' stays as it is, so the "
                      "rows must hold the same value, not 'm'."));
  // The loaded form appends (its own rows again), and so do the class's rows.
  append_memmap(dir, saved.index({at::indexing::Slice(0, 1)}));
  append_memmap_tensorclass(dir, TensorDict({{"x", iota({2, 2}) + 6}}, {2}), tags);
  const Json class_meta = meta_of(fs::path(dir));
  REQUIRE(class_meta == Json{{"_type", "<class 'tcmod.Sample'>"}, {"label", "l"}});
  REQUIRE(meta_of(fs::path(dir) / "_tensordict")["shape"] == Json::array({6}));
  const TensorDict loaded = TensorDict::load_memmap(dir);
  REQUIRE(at::equal(loaded.get("x"), at::cat({iota({3, 2}), iota({1, 2}), iota({2, 2}) + 6})));
  REQUIRE(loaded.get_non_tensor("label") == "l");
}

TEST_CASE("append_memmap: a tree Python wrote keeps its meta.json but the sizes", "[memmap][append]") {
  TempDir tmp;
  const fs::path dir = tmp / "py";
  fs::copy(fixtures_dir() / "mmap_example", dir, fs::copy_options::recursive);
  const TensorDict saved = TensorDict::load_memmap(dir.string());
  Json expected = meta_of(dir / "nested");
  append_memmap(dir.string(), saved);
  expected["shape"][0] = 4;
  for (auto& [key, entry] : expected.items()) {
    if (entry.is_object() && entry.contains("dtype")) entry["shape"][0] = 4;
  }
  REQUIRE(meta_of(dir / "nested") == expected);
  const TensorDict loaded = TensorDict::load_memmap(dir.string());
  REQUIRE(loaded.batch_size() == at::IntArrayRef{4, 1});
  REQUIRE(at::equal(loaded.get({"nested", "int64"}), at::tensor({1, 2, 1, 2}, at::kLong).reshape({4, 1})));
}

TEST_CASE("append_memmap after a killed append: the extra bytes are not rows, the next append writes over them",
          "[memmap][append]") {
  TempDir tmp;
  const fs::path dir = tmp / "d";
  TensorDict({{"a", at::zeros({2}, at::kLong)}}, {2}).memmap(dir.string());
  {
    // What an append killed before publishing leaves: a longer data file.
    std::ofstream out(dir / "a.memmap", std::ios::binary | std::ios::app);
    const int64_t junk[3] = {7, 7, 7};
    out.write(reinterpret_cast<const char*>(junk), sizeof junk);
  }
  REQUIRE(TensorDict::load_memmap(dir.string()).batch_size() == at::IntArrayRef{2});
  append_memmap(dir.string(), TensorDict({{"a", at::ones({1}, at::kLong)}}, {1}));
  REQUIRE(at::equal(TensorDict::load_memmap(dir.string()).get("a"), at::tensor({0, 0, 1}, at::kLong)));
}

TEST_CASE("append_memmap keeps other programs' files and the directories' modes", "[memmap][append]") {
  TempDir tmp;
  const fs::path dir = tmp / "d";
  chunk(0, 2).memmap(dir.string());
  write_text(dir / "next" / "notes.txt", "kept");
  ::chmod((dir / "next").c_str(), 0750);
  append_memmap(dir.string(), chunk(2, 1));
  REQUIRE(read_text(dir / "next" / "notes.txt") == "kept");
  REQUIRE((fs::status(dir / "next").permissions() & fs::perms::all) ==
          (fs::perms::owner_all | fs::perms::group_read | fs::perms::group_exec));
  require_same_entries(TensorDict::load_memmap(dir.string()), chunk(0, 3));
}
