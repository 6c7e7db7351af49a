// Ports of tensordict's memmap tests: memmap_() without a prefix (the leaves move
// into anonymous shared memory: test_methods.py::test_memmap_existing,
// test_memmap_prefix, test_generic.py::test_memory_lock) and nested (jagged)
// leaves in a directory (test_memmap.py::test_save_td_with_nested).
#include <fstream>

#include "fixtures.h"

using namespace conformance;
using tensordict::NestedKey;
using Catch::Contains;

TEST_CASE("memmap_() without a prefix maps every leaf, locks, and has no saved path (test_methods.py::test_memmap_existing)",
          "[conformance][test_methods.py]") {
  for (const char* name : {"td", "nested_td", "stacked_td", "nested_stacked_td", "permute_td", "td_with_non_tensor"}) {
    CAPTURE(name);
    Fixture f = make_fixture(name);
    TensorDict& td = f.td;
    const TensorDict before = td.clone();
    td.memmap_();
    CHECK(td.is_memmap());
    CHECK(td.is_locked());
    CHECK_FALSE(td.saved_path().has_value());
    for (const auto& key : before.keys({.include_nested = true, .leaves_only = true})) {
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
    const bool lazy = td.kind() == tensordict::Kind::LazyStack;
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
  // Shared memory holds no nested (jagged) leaf: refused by name before the
  // tensordict is locked (a directory holds it: the next case).
  TensorDict jagged({{"x", at::_nested_tensor_from_tensor_list({at::ones({2}), at::ones({3})})}}, {});
  CHECK(CONF_MESSAGE(jagged.memmap_()) ==
        "memmap_: key 'x' is a nested (jagged) tensor, which shared memory does not hold: memmap it into a directory");
  CHECK_FALSE(jagged.is_locked());
}

TEST_CASE("memmap stores nested (jagged) tensors as tensordict does: values, then a .shape.memmap of sizes "
          "(test_memmap.py::test_save_td_with_nested, _td_memmap.py:_populate_memmap)",
          "[conformance][test_memmap.py]") {
  const std::vector<at::Tensor> parts{at::arange(12, at::kDouble).view({3, 4}), at::arange(15, at::kDouble).view({3, 5}) + 100};
  TensorDict td({{"a", at::_nested_tensor_from_tensor_list(parts)}, {"x", at::zeros({2, 3})}}, {2, 3});
  td.set({"inner", "a"}, at::_nested_tensor_from_tensor_list({parts[1], parts[0]}));
  td_test::TempDir dir;
  const auto saved = td.memmap((dir / "j").string());
  for (const TensorDict& loaded : {saved, TensorDict(TensorDict::load_memmap((dir / "j").string()))}) {
    REQUIRE(loaded.get("a").is_nested());
    const auto got = loaded.get("a").unbind(0);
    REQUIRE(got.size() == 2);
    for (std::size_t i = 0; i < 2; ++i) CHECK(at::equal(got[i], parts[i]));
    CHECK(at::equal(loaded.get({"inner", "a"}).unbind(0)[0], parts[1]));
  }
  // tensordict's files: the values one after the other, the sizes as int64 [2, 2].
  CHECK(std::filesystem::file_size(dir / "j" / "a.memmap") == 27 * sizeof(double));
  std::vector<int64_t> sizes(4);
  std::ifstream(dir / "j" / "a.shape.memmap", std::ios::binary).read(reinterpret_cast<char*>(sizes.data()), 32);
  CHECK(sizes == std::vector<int64_t>{3, 4, 3, 5});
  // memmap_like keeps the components' shapes, with zero values.
  const auto like = td.memmap_like((dir / "like").string());
  CHECK(at::equal(like.get("a").unbind(0)[1], at::zeros({3, 5}, at::kDouble)));
}
