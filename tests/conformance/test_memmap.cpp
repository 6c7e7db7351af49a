// Ports of tensordict's tests of memmap_() without a prefix: the leaves move
// into anonymous shared memory (test_methods.py::test_memmap_existing,
// test_memmap_prefix, test_generic.py::test_memory_lock).
#include "fixtures.h"

using namespace conformance;
using tensordict::NestedKey;
using Catch::Contains;

TEST_CASE("memmap_() without a prefix maps every leaf, locks, and has no saved path (test_methods.py::test_memmap_existing)",
          "[conformance][test_methods.py]") {
  for (const char* name : {"td", "nested_td", "stacked_td", "nested_stacked_td", "permute_td", "td_with_non_tensor"}) {
    CAPTURE(name);
    Fixture f = make_fixture(name);
    TensorDictBase& td = f.td;
    const TensorDictBase before = td.clone();
    td.memmap_();
    CHECK(td.is_memmap());
    CHECK(td.is_locked());
    CHECK_FALSE(td.saved_path().has_value());
    for (const auto& key : before.keys(true, true)) {
      CAPTURE(key.repr());
      const auto value = before.get_value(key);
      if (!value->is_tensor()) continue;
      CHECK(same_tensor(td.get(key), value->tensor()));
    }
    // Writes land in the shared memory and read back.
    td.fill_("a", 3);
    CHECK((td.get("a") == 3).all().item<bool>());
    // A second call keeps the same memory (tensordict: no-op).
    // (A lazy stack stacks on get: its first member's tensor is compared.)
    const bool lazy = td.type_name() == "LazyStackedTensorDict";
    auto b_ptr = [&] { return lazy ? tensordict::LazyStackedTensorDict(td).tensordicts()[0].get("b").data_ptr() : td.get("b").data_ptr(); };
    const auto ptr = b_ptr();
    td.memmap_();
    CHECK(b_ptr() == ptr);
    // Locked: a non in-place set raises, set_ works (test_generic.py::test_memory_lock).
    CHECK_THROWS_WITH(td.set("a", at::zeros_like(td.get("a"))), Contains("Cannot modify locked TensorDict"));
    td.set_("a", at::zeros_like(td.get("a")));
    CHECK((td.get("a") == 0).all().item<bool>());
  }
}

TEST_CASE("memmap_() without a prefix maps a dense tensordict's leaves in place (the same tensordict, its nested levels too)",
          "[conformance][test_methods.py]") {
  Fixture f = make_fixture("nested_td");
  const auto nested = f.td.get_td("my_nested_td").impl();
  f.td.memmap_();
  CHECK(f.td.get_td("my_nested_td").impl() == nested);
  CHECK(f.td.get_td("my_nested_td").is_memmap());
  CHECK(f.td.device() == at::Device(at::kCPU));
  // Not ordinary memory: the storage is not libtorch's allocator's.
  CHECK(f.td.get("a").storage().data_ptr().get_deleter() != at::zeros({1}).storage().data_ptr().get_deleter());
}

TEST_CASE("memmap_() without a prefix refuses views and files (test_methods.py::test_memmap_prefix)", "[conformance][test_methods.py]") {
  Fixture sub = make_fixture("sub_td");
  CHECK(CONF_MESSAGE(sub.td.memmap_()) == "memmap_: Converting a sub-tensordict values to memmap cannot be done.");
  CHECK_FALSE(sub.td.is_memmap());
  Fixture h5 = make_fixture("td_h5");
  CHECK(CONF_MESSAGE(h5.td.memmap_()) == "memmap_: Cannot build a memmap TensorDict in-place from a PersistentTensorDict.");
  // A nested (jagged) leaf is refused by name before the tensordict is locked.
  TensorDict jagged({{"x", at::_nested_tensor_from_tensor_list({at::ones({2}), at::ones({3})})}}, {});
  CHECK(CONF_MESSAGE(jagged.memmap_()) == "memmap_: key 'x' is a nested (jagged) tensor, which memmap does not store yet");
  CHECK_FALSE(jagged.is_locked());
  // With a prefix too, before anything is written (the libtorch
  // "NestedTensorImpl doesn't support sizes" leaked before).
  td_test::TempDir dir;
  CHECK(CONF_MESSAGE(jagged.memmap((dir / "j").string())) == "memmap: key 'x' is a nested (jagged) tensor, which memmap does not store yet");
  CHECK_FALSE(std::filesystem::exists(dir / "j"));
}
