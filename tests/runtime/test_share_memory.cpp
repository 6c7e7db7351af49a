// share_memory_() and is_shared(): where the leaves go (asked of libtorch's
// own allocator record), which tensordicts are marked shared and locked, what
// keeps and what drops the mark, and every refusal. Each expectation is what
// tensordict 0.15.3 does with the same data (run in the test venv); the
// cases that port a tensordict test name it in their tags.
#include <ATen/MapAllocator.h>
#include <nlohmann/json.hpp>

#include <functional>
#include <string>
#include <vector>

#include "helpers.h"
#include "persist_helpers.h"

using Catch::Matchers::Contains;
using namespace tensordict;
using namespace td_test;
using at::indexing::Ellipsis;
using at::indexing::None;
using at::indexing::Slice;

namespace {

// What torch's Tensor.is_shared() answers for a CPU tensor: its storage's
// memory was mapped by ATen's MapAllocator.
bool in_shared_memory(const at::Tensor& t) { return at::MapAllocator::fromDataPtr(t.storage().data_ptr()) != nullptr; }

// Every tensor leaf of `td` (members of lazy stacks included) in shared memory.
bool all_leaves_shared(const TensorDict& td) {
  bool all = true;
  for (const auto& leaf : td.values({.include_nested = true, .leaves_only = true})) {
    if (leaf.is_tensor()) all = all && in_shared_memory(leaf.tensor());
  }
  return all;
}

bool shared_and_locked(const TensorDict& td) { return td.is_shared() && td.is_locked(); }

}  // namespace

TEST_CASE("share_memory_: the docstring example", "[share_memory][docstring]") {
  TensorDict td({{"a", at::zeros({3})}}, {3});
  TensorDict& same = td.share_memory_();
  REQUIRE(&same == &td);
  REQUIRE(td.is_shared());
  REQUIRE(td.is_locked());
  REQUIRE(in_shared_memory(td.get("a")));
}

TEST_CASE("share_memory_ moves every leaf's storage into shared memory in place, marks and locks every level",
          "[share_memory]") {
  TensorDict td = sample({3});
  const TensorDict expected = td.clone();
  REQUIRE_FALSE(td.is_shared());
  REQUIRE_FALSE(in_shared_memory(td.get("a")));
  // Tensors taken before: the leaf itself, and a view of its storage.
  const at::Tensor held = td.get("a");
  const at::Tensor view = held.select(1, 2);
  td.share_memory_();
  REQUIRE(all_leaves_shared(td));
  REQUIRE(in_shared_memory(held));
  REQUIRE(in_shared_memory(view));
  REQUIRE(held.data_ptr() == td.get("a").data_ptr());
  REQUIRE(td.allclose(expected));
  REQUIRE(shared_and_locked(td));
  REQUIRE(shared_and_locked(td.get_td("nested")));
  // The storage's descriptor is kept, for a child process or a Unix socket.
  REQUIRE(at::MapAllocator::fromDataPtr(held.storage().data_ptr())->fd() >= 0);
  // Writes through a view taken before land in the shared leaf.
  view.fill_(42);
  REQUIRE(td.get("a").select(1, 2).eq(42).all().item<bool>());
}

TEST_CASE("share_memory_: in-place writes work, new, replaced and removed entries do not",
          "[share_memory][test_generic.py::TestGeneric::test_memory_lock]") {
  TensorDict td({{"a", at::randn({4, 5})}}, {4, 5});
  td.share_memory_();
  td.set_("a", at::ones({4, 5}));  // set_ writes in place, which the lock allows
  REQUIRE(td.get("a").eq(1).all().item<bool>());
  REQUIRE(in_shared_memory(td.get("a")));
  td.update_(TensorDict({{"a", at::full({4, 5}, 2.0)}}, {4, 5}));
  REQUIRE(td.get("a").eq(2).all().item<bool>());
  REQUIRE_THAT(TD_MESSAGE(td.set("a", at::randn({4, 5}))), Contains("Cannot modify locked TensorDict"));
  REQUIRE_THAT(TD_MESSAGE(td.set("b", at::randn({4, 5}))), Contains("Cannot modify locked TensorDict"));
  REQUIRE_THAT(TD_MESSAGE(td.del_("a")), Contains("Cannot modify locked TensorDict"));
  REQUIRE_THAT(TD_MESSAGE(td.rename_key_("a", "c")), Contains("Cannot modify locked TensorDict"));
  REQUIRE(td.keys().size() == 1);
}

TEST_CASE("is_shared: only share_memory_ marks, unlock_ clears the mark and leaves the memory",
          "[share_memory][test_methods.py::TestTensorDictsBase::test_unlock]") {
  // Built from tensors already in shared memory: not marked.
  TensorDict built({{"a", at::zeros({3})}}, {3});
  built.share_memory_();
  REQUIRE_FALSE(TensorDict({{"a", built.get("a")}}, {3}).is_shared());

  TensorDict td = sample({3});
  REQUIRE_FALSE(td.is_shared());
  td.share_memory_();
  const TensorDict nested = td.get_td("nested");
  td.unlock_();
  REQUIRE_FALSE(td.is_locked());
  REQUIRE_FALSE(td.is_shared());
  REQUIRE_FALSE(nested.is_shared());
  REQUIRE_FALSE(nested.is_locked());
  REQUIRE(all_leaves_shared(td));
  // Locking again does not mark it: a new entry may have joined meanwhile.
  td.set("fresh", at::zeros({3}));
  td.lock_();
  REQUIRE_FALSE(td.is_shared());
  // A nested level of a shared tensordict cannot be unlocked alone.
  TensorDict again = sample({3});
  again.share_memory_();
  REQUIRE_THAT(TD_MESSAGE(again.get_td("nested").unlock_()),
               Contains("Cannot unlock a tensordict that is part of a locked graph"));
  REQUIRE(again.get_td("nested").is_shared());
}

TEST_CASE("share_memory_ twice, and of leaves already in shared memory, moves nothing", "[share_memory]") {
  TensorDict td = sample({2});
  td.share_memory_();
  const void* before = td.get("a").data_ptr();
  td.share_memory_();
  REQUIRE(td.get("a").data_ptr() == before);
  REQUIRE(shared_and_locked(td));
  // A consolidated tensordict: the one storage moves once and the leaves stay its views.
  TensorDict consolidated = sample({2}).consolidate();
  const at::Tensor storage = *consolidated.consolidated_storage();
  consolidated.share_memory_();
  REQUIRE(consolidated.is_consolidated());
  REQUIRE(in_shared_memory(storage));
  REQUIRE(all_leaves_shared(consolidated));
  REQUIRE(consolidated.allclose(sample({2})));
  // consolidate's shared storage is shared memory already, but not marked (tensordict's rule).
  TensorDict into_shm = sample({2}).consolidate({.share_memory = true});
  REQUIRE_FALSE(into_shm.is_shared());
  const void* mapped = into_shm.get("a").data_ptr();
  into_shm.share_memory_();
  REQUIRE(into_shm.get("a").data_ptr() == mapped);
  REQUIRE(into_shm.is_shared());
}

TEST_CASE("share_memory_: leaves without elements, nested tensors, leaves that require grad", "[share_memory]") {
  TensorDict empty({{"a", at::zeros({0})}}, {});
  empty.share_memory_();
  REQUIRE(in_shared_memory(empty.get("a")));  // torch maps an empty object too
  REQUIRE(empty.is_shared());

  TensorDict none({}, {});
  none.share_memory_();
  REQUIRE(shared_and_locked(none));

  const at::Tensor jagged = at::_nested_tensor_from_tensor_list({at::ones({2}), at::full({3}, 2.0)});
  TensorDict nested({{"j", jagged}}, {2});
  nested.share_memory_();
  REQUIRE(in_shared_memory(nested.get("j")));
  REQUIRE(nested.get("j").unbind(0)[1].eq(2).all().item<bool>());

  TensorDict grad({{"w", at::ones({3}).requires_grad_()}}, {3});
  grad.share_memory_();
  REQUIRE(in_shared_memory(grad.get("w")));
  REQUIRE(grad.get("w").requires_grad());
}

TEST_CASE("share_memory_: a shared storage cannot be resized", "[share_memory]") {
  TensorDict td({{"a", at::zeros({3})}}, {3});
  td.share_memory_();
  // torch's own share_memory_ leaves the storage resizable with no allocator,
  // and resizing it crashes; here libtorch refuses. (A failed resize_ has
  // changed its tensor's sizes already: a view takes the blow.)
  at::Tensor alias = td.get("a").view({3});
  REQUIRE_THAT(TD_MESSAGE(alias.resize_({100})), Contains("not resizable"));
  REQUIRE(td.get("a").numel() == 3);
  REQUIRE(td.get("a").storage().nbytes() == 3 * sizeof(float));
}

TEST_CASE("share_memory_ leaves non-CPU leaves and non-tensor data where they are", "[share_memory]") {
  TensorDict mixed({{"a", at::zeros({3})}, {"m", at::zeros({3}, at::TensorOptions().device(at::kMeta))}}, {3});
  mixed.set_non_tensor("s", "hello");
  mixed.share_memory_();
  REQUIRE(shared_and_locked(mixed));
  REQUIRE(in_shared_memory(mixed.get("a")));
  REQUIRE(mixed.get("m").is_meta());
  REQUIRE(mixed.get_non_tensor("s") == "hello");

  TensorDict meta({{"a", at::zeros({3})}}, {3}, at::Device(at::kMeta));
  meta.share_memory_();
  REQUIRE(shared_and_locked(meta));
}

TEST_CASE("share_memory_ on a CUDA device changes nothing: CUDA tensors are shared already", "[share_memory][cuda]") {
  if (!at::hasCUDA()) return;
  TensorDict td({{"a", at::zeros({3})}}, {3}, at::Device(at::kCUDA));
  REQUIRE(td.is_shared());
  td.share_memory_();
  REQUIRE(td.is_shared());
  REQUIRE_FALSE(td.is_locked());
  td.unlock_();
  REQUIRE(td.is_shared());
  // Without a device, CUDA leaves stay on the GPU; the CPU ones move.
  TensorDict mixed({{"g", at::zeros({3}, at::TensorOptions().device(at::kCUDA))}, {"c", at::zeros({3})}}, {3});
  mixed.share_memory_();
  REQUIRE(mixed.get("g").is_cuda());
  REQUIRE(in_shared_memory(mixed.get("c")));
  REQUIRE(shared_and_locked(mixed));
}

// ---- what keeps the mark -------------------------------------------------------------

TEST_CASE("share_memory_: key operations drop the mark, shape operations keep it",
          "[share_memory][test_generic.py::TestGeneric::test_shared_inheritance]") {
  TensorDict td({{"a", at::randn({3, 4})}}, {3, 4});
  td.share_memory_();
  auto not_shared = [](const TensorDict& x) { return !x.is_shared() && !x.is_locked(); };
  REQUIRE(not_shared(td.exclude({"a"})));
  REQUIRE(not_shared(td.select({"a"})));
  {
    LockGuard unlocked(td, LockGuard::Unlock);
    TensorDict& renamed = td.rename_key_("a", "a.a");
    REQUIRE_FALSE(renamed.is_shared());
  }
  REQUIRE(td.is_locked());
  REQUIRE_FALSE(td.is_shared());
  td.share_memory_();
  REQUIRE(not_shared(td.unflatten_keys(".")));
  REQUIRE(not_shared(td.flatten_keys(".")));

  REQUIRE(shared_and_locked(td.unbind(1).front()));
  REQUIRE(shared_and_locked(td.split(1, 0).front()));
  REQUIRE(shared_and_locked(td.view({-1})));
  REQUIRE(shared_and_locked(td.permute({1, 0})));
  const TensorDict unsqueezed = td.unsqueeze(0);
  REQUIRE(shared_and_locked(unsqueezed));
  REQUIRE(shared_and_locked(unsqueezed.squeeze(0)));
}

TEST_CASE("share_memory_: an index that keeps the leaves' storage keeps the mark, at every level",
          "[share_memory][test_methods.py::TestTensorDictsBase::test_indexed_properties]") {
  TensorDict td = sample({2, 3});
  td.share_memory_();
  const std::vector<std::pair<const char*, std::vector<TensorIndex>>> kept = {
      {"0", {0}},
      {"[0:1]", {Slice(0, 1)}},
      {"None", {None}},
      {"...", {Ellipsis}},
      {"0, :2", {0, Slice(None, 2)}},
      {"::2", {Slice(None, None, 2)}},
  };
  for (const auto& [label, index] : kept) {
    INFO(label);
    const TensorDict out = td.index(index);
    REQUIRE(shared_and_locked(out));
    REQUIRE(shared_and_locked(out.get_td("nested")));
    REQUIRE(all_leaves_shared(out));
  }
  // tensordict's _index_preserve_data_ptr counts these out, views or not.
  const std::vector<std::pair<const char*, std::vector<TensorIndex>>> dropped = {
      {"[1:]", {Slice(1, None)}},
      {"True", {true}},
      {"tensor(0)", {at::tensor(0)}},
      {"[0, 1]", {at::tensor({0, 1})}},
      {"mask", {mask({1, 0})}},
  };
  for (const auto& [label, index] : dropped) {
    INFO(label);
    const TensorDict out = td.index(index);
    REQUIRE_FALSE(out.is_shared());
    REQUIRE_FALSE(out.is_locked());
  }
}

TEST_CASE("share_memory_: which other ops keep the mark (tensordict 0.15.3's choice)", "[share_memory]") {
  TensorDict td({{"a", at::zeros({2, 3, 4})}, {"n", TensorDict({{"b", at::ones({2, 3, 4, 5})}}, {2, 3, 4})}}, {2, 3});
  td.share_memory_();
  // Views of the leaves: shared and locked, their nested levels too.
  for (const auto& [label, out] : std::vector<std::pair<const char*, TensorDict>>{
           {"transpose", td.transpose(0, 1)},
           {"movedim", td.movedim(0, 1)},
           {"narrow", td.narrow(0, 0, 1)},
           {"squeeze()", td.squeeze()},
           {"view same", td.view({2, 3})},
           {"chunk", td.chunk(2, 0).back()},
           {"sub-tensordict", td.get_sub_tensordict({0})},
       }) {
    INFO(label);
    REQUIRE(shared_and_locked(out));
    REQUIRE(out.get_td("n").is_shared());
  }
  // Copies, and the views tensordict does not count: not marked (a locked
  // source may still give a locked result).
  for (const auto& [label, out] : std::vector<std::pair<const char*, TensorDict>>{
           {"reshape", td.reshape({-1})},
           {"flatten", td.flatten(0, 1)},
           {"expand", td.expand({4, 2, 3})},
           {"clone", td.clone()},
           {"clone(recurse=false)", td.clone({.recurse = false})},
           {"contiguous", td.contiguous()},
           {"to(float64)", td.to(at::kDouble)},
           {"to(cpu)", td.to(at::Device(at::kCPU))},
           {"detach", td.detach()},
           {"apply", td.apply([](const at::Tensor& t) { return t + 1; })},
           {"empty", td.empty()},
           {"to_tensordict", td.to_tensordict()},
           {"masked_select", td.masked_select(at::ones({2, 3}, at::kBool))},
       }) {
    INFO(label);
    REQUIRE_FALSE(out.is_shared());
  }
  REQUIRE_FALSE(td.clone().is_locked());
  REQUIRE_FALSE(all_leaves_shared(td.clone()));
}

// ---- kinds -----------------------------------------------------------------------------

TEST_CASE("share_memory_ of a lazy stack shares its members, whose marks is_shared reads", "[share_memory][lazy]") {
  TensorDict a({{"x", at::zeros({2})}}, {2});
  TensorDict b({{"x", at::ones({2})}}, {2});
  TensorDict stack = lazy_stack({a, b}, 0);
  REQUIRE_FALSE(stack.is_shared());
  REQUIRE(&stack.share_memory_() == &stack);
  REQUIRE(shared_and_locked(stack));
  REQUIRE(shared_and_locked(a));
  REQUIRE(in_shared_memory(b.get("x")));
  // Indexed, still the members' views; cloned, not.
  REQUIRE(stack.index({0}).is_shared());
  REQUIRE(stack.index({Slice(), 0}).is_shared());
  REQUIRE_FALSE(stack.clone().is_shared());
  {
    set_printoptions detailed({.compact = false});
    // The stacked value is a new tensor, not in shared memory.
    REQUIRE_THAT(repr(stack), Contains("dtype=torch.float32, is_shared=False)},"));
  }
  stack.unlock_();
  REQUIRE_FALSE(stack.is_shared());
  REQUIRE_FALSE(a.is_shared());
  REQUIRE_FALSE(a.is_locked());

  // Members shared one by one: the stack is shared and locked through them.
  TensorDict c({{"x", at::zeros({2})}}, {2});
  TensorDict d({{"x", at::ones({2})}}, {2});
  c.share_memory_();
  d.share_memory_();
  TensorDict of_shared = lazy_stack({c, d}, 0);
  REQUIRE(shared_and_locked(of_shared));

  // No members: never shared.
  TensorDict empty = LazyStackedTensorDict(std::vector<TensorDict>{}, 0);
  empty.share_memory_();
  REQUIRE_FALSE(empty.is_shared());
}

TEST_CASE("is_shared of a lazy stack whose members disagree raises", "[share_memory][lazy]") {
  TensorDict c({{"x", at::zeros({2})}}, {2});
  TensorDict d({{"x", at::ones({2})}}, {2});
  c.share_memory_();
  const TensorDict mixed = lazy_stack({c, d}, 0);
  REQUIRE_THAT(TD_MESSAGE(mixed.is_shared()),
               Contains("tensordicts shared status mismatch, got 1 shared tensordicts and 1 non shared tensordict"));
  REQUIRE_FALSE(mixed.is_locked());
}

TEST_CASE("share_memory_ of a tensordict holding a lazy stack shares the stack's members", "[share_memory][lazy]") {
  TensorDict g({{"x", at::zeros({2})}}, {2});
  TensorDict h({{"x", at::ones({2})}}, {2});
  TensorDict outer({{"s", lazy_stack({g, h}, 0)}, {"y", at::zeros({2})}}, {2});
  outer.share_memory_();
  REQUIRE(shared_and_locked(outer));
  REQUIRE(outer.get_td("s").is_shared());
  REQUIRE(shared_and_locked(g));
  REQUIRE(in_shared_memory(h.get("x")));
}

TEST_CASE("share_memory_ of a sub-tensordict is refused, and its mark is its source's", "[share_memory][sub]") {
  TensorDict source({{"a", at::zeros({3, 2})}}, {3, 2});
  const SubTensorDict sub = source.get_sub_tensordict({0});
  REQUIRE_FALSE(sub.is_shared());
  TensorDict view = sub;
  REQUIRE_THAT(TD_MESSAGE(view.share_memory_()),
               Contains("Casting a sub-tensordict values to shared memory cannot be done."));
  REQUIRE_FALSE(in_shared_memory(source.get("a")));
  REQUIRE_FALSE(source.is_locked());
  source.share_memory_();
  REQUIRE(sub.is_shared());
  REQUIRE(source.get_sub_tensordict({1}).is_shared());
  // Nested in a tensordict, refused before anything moves.
  TensorDict holder({{"plain", at::zeros({2})}, {"view", TensorDict(TensorDict({{"a", at::zeros({3, 2})}}, {3, 2}).get_sub_tensordict({0}))}}, {2});
  REQUIRE_THAT(TD_MESSAGE(holder.share_memory_()), Contains("Casting a sub-tensordict values to shared memory"));
  REQUIRE_FALSE(in_shared_memory(holder.get("plain")));
  REQUIRE_FALSE(holder.is_locked());
}

TEST_CASE("share_memory_ of an h5 file is refused", "[share_memory][h5]") {
  TempDir tmp;
  PersistentTensorDict file = TensorDict({{"a", at::zeros({3})}}, {3}).to_h5((tmp / "x.h5").string());
  REQUIRE_FALSE(file.is_shared());
  TensorDict td = file;
  REQUIRE_THAT(TD_MESSAGE(td.share_memory_()),
               Contains("Cannot call share_memory_ on a PersistentTensorDict. Call `to_tensordict()` first."));
  REQUIRE_THROWS_AS(td.share_memory_(), NotImplementedError);
  REQUIRE_FALSE(td.is_locked());
  TensorDict copy = td.to_tensordict();
  copy.share_memory_();
  REQUIRE(copy.is_shared());
}

// ---- memmap --------------------------------------------------------------------------

TEST_CASE("memmap and shared memory are exclusive", "[share_memory][memmap]") {
  TempDir tmp;
  TensorDict mapped = TensorDict({{"a", at::zeros({3})}}, {3}).memmap_();
  REQUIRE_FALSE(mapped.is_shared());
  REQUIRE_THAT(TD_MESSAGE(mapped.share_memory_()), Contains("memmap and shared memory are mutually exclusive features."));
  TensorDict on_disk = TensorDict({{"a", at::zeros({3})}}, {3}).memmap_((tmp / "d").string());
  REQUIRE_FALSE(on_disk.is_shared());
  REQUIRE_THAT(TD_MESSAGE(on_disk.share_memory_()), Contains("mutually exclusive"));
  // Unlocked, it is still memory-mapped here (tensordict forgets it, then shares).
  on_disk.unlock_();
  REQUIRE(on_disk.is_memmap());
  REQUIRE_THAT(TD_MESSAGE(on_disk.share_memory_()), Contains("mutually exclusive"));

  TensorDict shared = sample({3});
  shared.share_memory_();
  REQUIRE_THAT(TD_MESSAGE(shared.memmap_()), Contains("memmap and shared memory are mutually exclusive features."));
  REQUIRE_THAT(TD_MESSAGE(shared.memmap_((tmp / "e").string())), Contains("mutually exclusive"));
  REQUIRE_FALSE(shared.is_memmap());
  REQUIRE(shared.is_shared());
  // A memory-mapped copy is memory-mapped, not shared.
  const TensorDict copy = shared.memmap((tmp / "f").string());
  REQUIRE(copy.is_memmap());
  REQUIRE_FALSE(copy.is_shared());
}

// ---- refusals before anything moves -----------------------------------------------------

TEST_CASE("share_memory_ refuses a leaf without a storage, naming it, before anything moves", "[share_memory]") {
  TensorDict td({{"dense", at::zeros({3, 3})},
                 {"n", TensorDict({{"sparse", at::zeros({3, 3}).to_sparse()}}, {3})}},
                {3});
  const std::string message = TD_MESSAGE(td.share_memory_());
  REQUIRE_THAT(message, Contains("share_memory_: key ('n', 'sparse') is a Sparse tensor") &&
                            Contains("no storage to move into shared memory"));
  REQUIRE_THROWS_AS(td.share_memory_(), NotImplementedError);
  REQUIRE_FALSE(in_shared_memory(td.get("dense")));
  REQUIRE_FALSE(td.is_locked());
  REQUIRE_FALSE(td.is_shared());
}

// ---- non-tensor data ---------------------------------------------------------------------

TEST_CASE("a shared tensordict's one non-tensor value cannot become a stack by an indexed write",
          "[share_memory][test_nontensor.py::TestNonTensorData::test_shared_limitations]") {
  // Unshared, the write makes a stack.
  TensorDict free({}, {10});
  free.set_non_tensor("val", 0);
  free.index_put_({Slice(1, None, 2)}, [] {
    TensorDict v({}, {5});
    v.set_non_tensor("val", 1);
    return v;
  }());
  REQUIRE(free.get_value("val")->non_tensor().is_stack());

  TensorDict td({}, {10});
  td.set_non_tensor("val", 0);
  td.share_memory_();
  TensorDict other({}, {5});
  other.set_non_tensor("val", 1);
  REQUIRE_THAT(TD_MESSAGE(td.index_put_({Slice(1, None, 2)}, other)),
               Contains("You're attempting to update a leaf in-place with a shared tensordict, but the new value does "
                        "not match the previous") &&
                   Contains("key 'val'"));
  REQUIRE_FALSE(td.get_value("val")->non_tensor().is_stack());
  // The same value: nothing changes, nothing to refuse.
  TensorDict same({}, {5});
  same.set_non_tensor("val", 0);
  td.index_put_({Slice(1, None, 2)}, same);
  REQUIRE(td.get_non_tensor("val") == 0);
}

// ---- every other op: as on a tensordict that is only locked -------------------------------

namespace {

// The outcome of `op` on `td`: the error message, or the result's batch
// size and each leaf's sum.
std::string outcome(const std::function<TensorDict(TensorDict&)>& op, TensorDict td) {
  try {
    const TensorDict result = op(td);
    std::string out = "batch";
    for (int64_t d : result.batch_size()) out += " " + std::to_string(d);
    for (const auto& [key, value] : result.items({.include_nested = true, .leaves_only = true})) {
      if (value.is_tensor()) out += "; " + key.repr() + " " + std::to_string(value.tensor().to(at::kDouble).sum().item<double>());
    }
    return out;
  } catch (const std::exception& e) {
    return std::string("error: ") + e.what();
  }
}

}  // namespace

TEST_CASE("share_memory_: every op runs on a shared tensordict as on a locked one", "[share_memory]") {
  // The shared mark locks the views it keeps; no op may then trip over its
  // own intermediate results.
  using Op = std::function<TensorDict(TensorDict&)>;
  const std::vector<std::pair<const char*, Op>> ops = {
      {"index_put_", [](TensorDict& td) { return td.index_put_({Slice(0, 2)}, 1.0); }},
      {"index_put_ td", [](TensorDict& td) { return td.index_put_({0}, td.index({1}).clone()); }},
      {"set_at_", [](TensorDict& td) { return td.set_at_("a", at::ones({4}), {1}); }},
      {"update_at_", [](TensorDict& td) { return td.update_at_(td.index({Slice(0, 2)}).clone() + 1, {Slice(1, 3)}); }},
      {"copy_", [](TensorDict& td) { return td.copy_(td.clone() * 2); }},
      {"apply_", [](TensorDict& td) { return td.apply_([](const at::Tensor& t) { return t * 3; }); }},
      {"zero_", [](TensorDict& td) { return td.zero_(); }},
      {"add_", [](TensorDict& td) { return td.add_(1); }},
      {"clamp_", [](TensorDict& td) { return td.clamp_(0, 5); }},
      {"masked_fill_", [](TensorDict& td) { return td.masked_fill_(mask({1, 0, 1}), 7); }},
      {"rename_ dims", [](TensorDict& td) { return td.rename_({"x"}); }},
      {"stack", [](TensorDict& td) { return stack(td.unbind(0), 0); }},
      {"cat", [](TensorDict& td) { return cat(td.split(1, 0), 0); }},
      {"lazy_stack of pieces", [](TensorDict& td) { return TensorDict(lazy_stack(td.unbind(0), 0)).contiguous(); }},
      {"pad", [](TensorDict& td) { return pad(td, {1, 1}); }},
      {"where", [](TensorDict& td) { return td.where(mask({1, 0, 1}), 0); }},
      {"gather", [](TensorDict& td) { return td.gather(0, at::tensor({2, 0})); }},
      {"repeat", [](TensorDict& td) { return td.repeat({2}); }},
      {"flip", [](TensorDict& td) { return td.flip({0}); }},
      {"roll", [](TensorDict& td) { return td.roll(1, 0); }},
      {"softmax", [](TensorDict& td) { return td.select({"a"}).softmax(0); }},
      {"split_keys", [](TensorDict& td) { return td.split_keys({{"a"}}).front(); }},
      {"densify", [](TensorDict& td) { return td.densify(); }},
      {"consolidate", [](TensorDict& td) { return td.consolidate(); }},
      {"index then update_", [](TensorDict& td) { return td.index({0}).update_(td.index({1}).clone()); }},
      {"unbind then set_", [](TensorDict& td) { return td.unbind(0)[2].set_("b", at::tensor(5)); }},
      {"set on a view", [](TensorDict& td) { return td.index({0}).set("new", at::zeros({})); }},
      {"del_", [](TensorDict& td) { return td.del_("a"); }},
  };
  for (const auto& [label, op] : ops) {
    INFO(label);
    TensorDict locked = sample({3});
    locked.lock_();
    TensorDict shared = sample({3});
    shared.share_memory_();
    const std::string expected = outcome(op, locked);
    // A view of a shared tensordict is locked where one of a locked tensordict may not be.
    if (std::string(label) == "set on a view") {
      REQUIRE_THAT(outcome(op, shared), Contains("Cannot modify locked TensorDict"));
      continue;
    }
    REQUIRE(outcome(op, shared) == expected);
    REQUIRE(all_leaves_shared(shared));
  }
}
