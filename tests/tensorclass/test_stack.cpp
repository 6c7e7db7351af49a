// NonTensorStack fields (tc_stack.yaml): one value per batch element, moved by
// every typed batch op as the dynamic core moves a non-tensor stack entry.
// Expected values are written out per element (the op applied by hand to the
// list of values), or tensordict 0.15.3's where said.
#include <ATen/ATen.h>
#include <nlohmann/json.hpp>
#include <catch2/catch.hpp>
#include <tensordict/tensordict.h>

#include <string>
#include <vector>

#include "../builders.h"
#include "../message_of.h"
#include "../temp_dir.h"
#include "tc_stack.tc.h"

using tct::stack::Episode;
using tct::stack::Inner;
using tensordict::NonTensorData;
using tensordict::NonTensorStack;
using tensordict::TensorDict;
using namespace at::indexing;
using td_test::message_of;
using td_test::same;
using Strings = std::vector<std::string>;

namespace {

// An episode of batch [n] whose every element has task `task` and seed `seed`;
// obs[i] = [base + i, base + i].
Episode episode(int64_t n, const std::string& task, int64_t seed, float base = 0) {
  const at::Tensor obs = (at::arange(n, at::kFloat) + base).unsqueeze(-1).expand({n, 2}).contiguous();
  return Episode({.obs = obs, .task = task, .seed = seed}, {n});
}

// Episodes over batch [rows.size()] with one task per element.
Episode with_tasks(const Strings& tasks) {
  const auto n = static_cast<int64_t>(tasks.size());
  Episode e = episode(n, "", 0);
  e.task = NonTensorStack<std::string>::stack(tasks, {n});
  return e;
}

Strings tasks_of(const Episode& e) { return e.task.tolist(e.batch_size()); }

}  // namespace

TEST_CASE("stacking episodes with different tasks keeps one task per element", "[tensorclass][stack]") {
  const Episode s = Episode::stack({episode(2, "walk", 1), episode(2, "run", 1)});
  CHECK(s.batch_size().vec() == std::vector<int64_t>{2, 2});
  CHECK(s.task.is_stack());
  CHECK(tasks_of(s) == Strings{"walk", "walk", "run", "run"});
  // equal values stay one value (tensordict's NonTensorData)
  CHECK_FALSE(s.seed.is_stack());
  CHECK(s.seed.tolist(s.batch_size()) == std::vector<int64_t>{1, 1, 1, 1});
  CHECK(s.task.at(s.batch_size(), {1, 0}) == "run");
  // along dim 1 the elements interleave
  const Episode s1 = Episode::stack({episode(2, "walk", 1), episode(2, "run", 2)}, 1);
  CHECK(tasks_of(s1) == Strings{"walk", "run", "walk", "run"});
  CHECK(s1.seed.tolist(s1.batch_size()) == std::vector<int64_t>{1, 2, 1, 2});
}

TEST_CASE("a single task over the batch stacks and indexes as one value",
          "[tensorclass][stack][ports:test_tensorclass.py::TestTensorClass::test_stack]") {
  const Episode s = Episode::stack({episode(3, "test_tensorclass", 0), episode(3, "test_tensorclass", 0)});
  CHECK_FALSE(s.task.is_stack());
  CHECK(tasks_of(s) == Strings(6, "test_tensorclass"));
  CHECK(tasks_of(s.index({0})) == Strings(3, "test_tensorclass"));
}

TEST_CASE("cat, unbind and split move the tasks with the batch", "[tensorclass][stack]") {
  const Episode c = Episode::cat({with_tasks({"a", "b"}), episode(1, "c", 0)});
  CHECK(tasks_of(c) == Strings{"a", "b", "c"});
  const auto parts = c.unbind(0);
  REQUIRE(parts.size() == 3);
  CHECK(parts[0].task.at({}, {}) == "a");
  CHECK(parts[2].task.at({}, {}) == "c");
  const auto pieces = c.split(std::vector<int64_t>{2, 1});
  CHECK(tasks_of(pieces[0]) == Strings{"a", "b"});
  CHECK(tasks_of(pieces[1]) == Strings{"c"});
}

TEST_CASE("indexing a NonTensorStack field with a boolean mask keeps the selected values",
          "[tensorclass][stack][ports:test_nontensor.py::TestNonTensorData::test_nontensorstack_boolean_mask]") {
  const Episode e = with_tasks({"a", "b", "c"});
  const Episode masked = e.index({td_test::mask({1, 0, 1})});
  CHECK(masked.batch_size().vec() == std::vector<int64_t>{2});
  CHECK(tasks_of(masked) == Strings{"a", "c"});
  const Episode empty = e.index({at::zeros({3}, at::kBool)});
  CHECK(empty.batch_size().vec() == std::vector<int64_t>{0});
  CHECK(tasks_of(empty).empty());
}

TEST_CASE("masked index and masked write of a 2-d NonTensorStack field",
          "[tensorclass][stack][ports:test_nontensor.py::TestNonTensorData::test_nontensorstack_boolean_mask_2d]") {
  Episode e = Episode::stack({with_tasks({"00", "01"}), with_tasks({"10", "11"}), with_tasks({"20", "21"})});
  const at::Tensor mask = td_test::mask({1, 0, 1});
  CHECK(tasks_of(e.index({mask})) == Strings{"00", "01", "20", "21"});
  const at::Tensor full = td_test::mask({1, 0, 0, 1, 1, 1}).view({3, 2});
  CHECK(tasks_of(e.index({full})) == Strings{"00", "11", "20", "21"});
  // td[mask] = value
  const Episode value = Episode::stack({with_tasks({"p", "q"}), with_tasks({"r", "s"})});
  e.index_put_({mask}, value);
  CHECK(tasks_of(e) == Strings{"p", "q", "10", "11", "r", "s"});
}

TEST_CASE("index_put_ of one element writes its task there only", "[tensorclass][stack]") {
  Episode e = episode(3, "walk", 7);
  e.index_put_({1}, episode(1, "run", 8).index({0}));
  CHECK(tasks_of(e) == Strings{"walk", "run", "walk"});
  CHECK(e.seed.tolist(e.batch_size()) == std::vector<int64_t>{7, 8, 7});
  // writing the same value everywhere collapses the stack again
  e.index_put_({Slice()}, episode(3, "idle", 7));
  CHECK_FALSE(e.task.is_stack());
  CHECK(tasks_of(e) == Strings(3, "idle"));
}

TEST_CASE("obj[index] = td writes a non-tensor entry into a NonTensorStack field", "[tensorclass][stack]") {
  Episode e = episode(3, "walk", 0);
  TensorDict td({{"task", NonTensorData(tensordict::Json("run"))}}, {2});
  e.index_put_({Slice(1, None)}, td);
  CHECK(tasks_of(e) == Strings{"walk", "run", "run"});
  TensorDict bad({{"seed", NonTensorData(tensordict::Json("x"))}}, {2});
  CHECK(message_of([&] { e.index_put_({Slice(1, None)}, bad); }) ==
        "Episode.seed: non-tensor field must be an int in int64's range, got \"x\"");
  CHECK(e.seed.tolist(e.batch_size()) == std::vector<int64_t>{0, 0, 0});
}

TEST_CASE("view, flatten and reshape of a NonTensorStack field keep row-major order",
          "[tensorclass][stack][ports:test_nontensor.py::TestNonTensorData::test_view]") {
  Strings values;
  for (int i = 0; i < 60; ++i) values.push_back(std::to_string(i));
  const Episode flat = with_tasks(values);
  const Episode v = flat.view({3, 4, 5});
  CHECK(v.task.data().ids().sizes().vec() == std::vector<int64_t>{3, 4, 5});
  CHECK(v.task.at(v.batch_size(), {1, 2, 3}) == "33");  // 1*20 + 2*5 + 3
  CHECK(tasks_of(v.view({60})) == values);
  CHECK(tasks_of(v.flatten()) == values);
  CHECK(tasks_of(v.reshape({60})) == values);
}

TEST_CASE("permute, transpose, unsqueeze, squeeze and expand move the tasks", "[tensorclass][stack]") {
  const Episode e = Episode::stack({with_tasks({"a", "b", "c"}), with_tasks({"d", "e", "f"})});  // [2, 3]
  CHECK(tasks_of(e.permute({1, 0})) == Strings{"a", "d", "b", "e", "c", "f"});
  CHECK(tasks_of(e.transpose(0, 1)) == Strings{"a", "d", "b", "e", "c", "f"});
  const Episode u = e.unsqueeze(1);
  CHECK(u.task.data().ids().sizes().vec() == std::vector<int64_t>{2, 1, 3});
  CHECK(tasks_of(u.squeeze(1)) == tasks_of(e));
  const Episode x = with_tasks({"a", "b"}).unsqueeze(0).expand({3, 2});
  CHECK(tasks_of(x) == Strings{"a", "b", "a", "b", "a", "b"});
}

TEST_CASE("unsqueeze then squeeze of a single value keeps it",
          "[tensorclass][stack][ports:test_nontensor.py::TestNonTensorData::test_squeeze_unsqueeze]") {
  const Episode e = Episode({.obs = at::zeros({2}), .task = "3", .seed = 3}, {});
  const Episode u = e.unsqueeze(0);
  CHECK(tasks_of(u) == Strings{"3"});
  CHECK_FALSE(u.squeeze().task.is_stack());
  CHECK(u.squeeze(0).seed.at({}, {}) == 3);
}

TEST_CASE("clone, to(device) and apply keep the tasks", "[tensorclass][stack]") {
  const Episode e = with_tasks({"a", "b"});
  CHECK(tasks_of(e.clone()) == Strings{"a", "b"});
  CHECK(tasks_of(e.apply([](const at::Tensor& t) { return t * 2; })) == Strings{"a", "b"});
  CHECK(tasks_of(e.to(at::Device(at::kCPU))) == Strings{"a", "b"});
}

TEST_CASE("where picks each element's task from self or other",
          "[tensorclass][stack][ports:test_nontensor.py::TestNonTensorData::test_where]") {
  const Episode a = episode(2, "a", 0);
  const Episode b = episode(2, "b", 0, 10);
  const Episode w = a.where(td_test::mask({1, 0}), b);
  CHECK(tasks_of(w) == Strings{"a", "b"});
  CHECK(same(w.obs, at::tensor({0.f, 0.f, 11.f, 11.f}).view({2, 2})));
  // same values on both sides: one value
  CHECK_FALSE(a.where(td_test::mask({1, 0}), episode(2, "a", 0)).task.is_stack());
}

TEST_CASE("== compares tasks element by element", "[tensorclass][stack]") {
  const Episode a = with_tasks({"a", "b", "c"});
  const Episode b = with_tasks({"a", "x", "c"});
  const TensorDict eq = a == b;
  CHECK(same(eq.get("task"), td_test::mask({1, 0, 1})));
  CHECK(same(eq.get("obs").all(-1), td_test::mask({1, 1, 1})));
}

TEST_CASE("masked_select and gather go through the tensordict form with the tasks", "[tensorclass][stack]") {
  const Episode e = with_tasks({"a", "b", "c"});
  CHECK(tasks_of(e.masked_select(td_test::mask({0, 1, 1}))) == Strings{"b", "c"});
}

TEST_CASE("to_tensordict holds a NonTensorStack entry and from_tensordict reads it back", "[tensorclass][stack]") {
  const Episode e = with_tasks({"a", "b"});
  const TensorDict td = e.to_tensordict();
  const auto value = td.get_value("task");
  REQUIRE(value);
  REQUIRE(value->is_non_tensor());
  CHECK(value->non_tensor().data() == tensordict::Json::array({"a", "b"}));
  const Episode back = Episode::from_tensordict(td);
  CHECK(tasks_of(back) == Strings{"a", "b"});
  // a value of another type is refused, naming the field
  TensorDict bad = td.clone();
  bad.set("seed", NonTensorData::stack({tensordict::Json(1), tensordict::Json("two")}, {2}));
  CHECK(message_of([&] { (void)Episode::from_tensordict(bad); }) ==
        "Episode.seed: non-tensor field must be an int in int64's range, got \"two\"");
  // a tensor where the field holds values is refused
  TensorDict tensor_task = td.clone();
  tensor_task.set("task", at::zeros({2}));
  CHECK(message_of([&] { (void)Episode::from_tensordict(tensor_task); }) ==
        "Episode.task: the entry is not non-tensor data");
  // values over another batch shape are refused
  Episode wrong = with_tasks({"a", "b"});
  wrong.task = NonTensorStack<std::string>::stack({"a", "b", "c"}, {3});
  CHECK(message_of([&] { wrong.validate(); }) ==
        "Episode.task: NonTensorStack holds values over batch size [3], expected the batch size [2]");
}

TEST_CASE("NonTensorStack::at checks its index", "[tensorclass][stack]") {
  const Episode e = with_tasks({"a", "b"});
  CHECK(message_of([&] { (void)e.task.at(e.batch_size(), {2}); }) ==
        "NonTensorStack.at: index 2 is out of range for dim 0 of size 2");
  CHECK(message_of([&] { (void)e.task.at(e.batch_size(), {0, 0}); }) ==
        "NonTensorStack.at: got 2 indices for batch size [2]");
}

TEST_CASE("a nested class's NonTensorStack field follows the parent's batch ops", "[tensorclass][stack]") {
  auto make = [](const std::string& label) {
    Episode e = episode(2, "t", 0);
    e.inner = Inner({.obs = at::zeros({2}), .label = label}, {2});
    return e;
  };
  const Episode s = Episode::stack({make("x"), make("y")});
  REQUIRE(s.inner);
  CHECK(s.inner->label.tolist(s.inner->batch_size()) == Strings{"x", "x", "y", "y"});
  const Episode i = s.index({Slice(), 1});
  CHECK(i.inner->label.tolist(i.inner->batch_size()) == Strings{"x", "y"});
}

TEST_CASE("memmap writes a NonTensorStack field as tensordict does and load_memmap reads it back",
          "[tensorclass][stack]") {
  td_test::TempDir dir;
  const Episode e = Episode::stack({episode(2, "walk", 1), episode(2, "run", 2)});
  const Episode saved = e.memmap((dir / "ep").string());
  CHECK(tasks_of(saved) == Strings{"walk", "walk", "run", "run"});
  // tensordict's layout: _tensordict/task/meta.json holds the NonTensorStack
  CHECK(std::filesystem::exists(dir / "ep" / "_tensordict" / "task" / "meta.json"));
  const Episode loaded = Episode::load_memmap((dir / "ep").string());
  CHECK(tasks_of(loaded) == Strings{"walk", "walk", "run", "run"});
  CHECK(loaded.seed.tolist(loaded.batch_size()) == std::vector<int64_t>{1, 1, 2, 2});
  CHECK(same(loaded.obs, e.obs));
}

TEST_CASE("h5 and consolidate keep a NonTensorStack field of strings", "[tensorclass][stack]") {
  td_test::TempDir dir;
  const Episode e = with_tasks({"a", "b", "c"});
  const Episode c = e.consolidate();
  CHECK(tasks_of(c) == Strings{"a", "b", "c"});
  CHECK(c.is_consolidated());
  Episode h = e;
  h.seed = NonTensorStack<std::int64_t>();  // h5 stores strings only: the default is left out
  // another int is refused rather than lost
  Episode seeded = with_tasks({"a", "b", "c"});
  seeded.seed = 4;
  CHECK(message_of([&] { (void)seeded.to_h5((dir / "s.h5").string()); }) ==
        "to_h5: Episode.seed holds 4, not its default: h5 stores string non-tensor data only (memmap() stores every "
        "field)");
  h.to_h5((dir / "e.h5").string()).close();
  const Episode back = Episode::from_h5((dir / "e.h5").string());
  CHECK(tasks_of(back) == Strings{"a", "b", "c"});
}

TEST_CASE("the compact repr names a NonTensorStack field's kind", "[tensorclass][stack]") {
  // tensordict 0.15.3: A(batch_size=[2], fields={task: NonTensorStack, x: f32[]}) for a stacked `task: str`
  CHECK(with_tasks({"a", "b"}).repr() ==
        "Episode(batch_size=[2], fields={\n    obs: f32[2],\n    seed: int,\n    task: NonTensorStack,\n    inner: None})");
  CHECK(episode(2, "a", 0).repr() == "Episode(batch_size=[2], fields={obs: f32[2], seed: int, task: str, inner: None})");
}

TEST_CASE("obj[i] = other[i] writes other's task into row i only",
          "[tensorclass][stack][ports:test_tensorclass.py::TestTensorClass::test_setitem]") {
  auto make = [](const std::string& task, float fill) {
    return Episode({.obs = at::full({3, 4, 2}, fill), .task = task, .seed = 0}, {3, 4});
  };
  Episode data = make("test_tensorclass", 1);
  const Episode data2 = make("test_bluff", 2);
  data.index_put_({1}, data2.index({1}));
  // tensordict 0.15.3: data.z == [["test_tensorclass"] * 4, ["test_bluff"] * 4, ["test_tensorclass"] * 4]
  Strings expected(4, "test_tensorclass");
  for (int i = 0; i < 4; ++i) expected.push_back("test_bluff");
  for (int i = 0; i < 4; ++i) expected.push_back("test_tensorclass");
  CHECK(tasks_of(data) == expected);
  CHECK(tasks_of(data.index({1})) == Strings(4, "test_bluff"));
  CHECK(same(data.obs.select(0, 1), at::full({4, 2}, 2.f)));
}

TEST_CASE("update_at_ writes a task into a NonTensorStack field", "[tensorclass][stack]") {
  Episode e = episode(3, "walk", 0);
  e.update_at_(TensorDict({{"task", NonTensorData(tensordict::Json("run"))}}, {}), {1});
  CHECK(tasks_of(e) == Strings{"walk", "run", "walk"});
}

TEST_CASE("update_ writes one task into every element of a NonTensorStack field", "[tensorclass][stack]") {
  // tensordict 0.15.3: td.update_(TensorDict(task=NonTensorData("jump", batch_size=[3]), batch_size=[3]))
  // turns a NonTensorStack('walk', 'run', 'walk') into ['jump', 'jump', 'jump'].
  Episode e = with_tasks({"walk", "run", "walk"});
  e.update_(TensorDict({{"task", NonTensorData(tensordict::Json("jump"))}}, {3}));
  CHECK(tasks_of(e) == Strings{"jump", "jump", "jump"});
}

TEST_CASE("the detailed repr prints a NonTensorStack field as tensordict does", "[tensorclass][stack]") {
  tensordict::set_printoptions guard({.compact = false});
  // tensordict 0.15.3, torch.cat of two Episode(task="a"/"b", seed=0) of batch [1], under compact=False
  CHECK(with_tasks({"a", "b"}).repr() ==
        "Episode(\n"
        "    obs=Tensor(shape=torch.Size([2, 2]), device=cpu, dtype=torch.float32, is_shared=False),\n"
        "    seed=NonTensorData(data=0, batch_size=torch.Size([2]), device=None),\n"
        "    task=NonTensorStack(\n"
        "        ['a', 'b'],\n"
        "        batch_size=torch.Size([2]),\n"
        "        device=None),\n"
        "    inner=None,\n"
        "    batch_size=torch.Size([2]),\n"
        "    device=None,\n"
        "    is_shared=False)");
}

TEST_CASE("a NonTensorStack built from values of another type says so where it is read", "[tensorclass][stack]") {
  // The runtime's container as it is (explicit constructor): its values are
  // checked where they are read, with TypeError, not a JSON library's error.
  const NonTensorStack<int64_t> seeds(NonTensorData::stack({tensordict::Json(1), tensordict::Json("two")}, {2}));
  CHECK(seeds.at({2}, {0}) == 1);
  const std::string expected = "NonTensorStack: the element 'two' does not have the stack's element type";
  CHECK(message_of([&] { (void)seeds.at({2}, {1}); }) == expected);
  CHECK(message_of([&] { (void)seeds.tolist({2}); }) == expected);
  CHECK_THROWS_AS(seeds.tolist({2}), tensordict::TypeError);
  const NonTensorStack<bool> flags(NonTensorData(tensordict::Json(2.5)));
  CHECK(message_of([&] { (void)flags.at({1}, {0}); }) ==
        "NonTensorStack: the element 2.5 does not have the stack's element type");
}
