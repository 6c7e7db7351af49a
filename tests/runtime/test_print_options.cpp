// set_printoptions and get_printoptions: ports of tensordict's
// test_repr.py::TestSetPrintoptions. Every expected string is what
// tensordict 0.15.3 prints for the same data (run in the test venv), where
// the compact form is the default.
#include <thread>

#include "helpers.h"

using namespace tensordict;
using namespace td_test;

namespace {
// The tensordict most of TestSetPrintoptions prints.
TensorDict a34() { return TensorDict({{"a", at::randn({3, 4})}}); }

// Whether two option sets hold the same values (sort_keys: the same mode).
bool same_options(const PrintOptions& a, const PrintOptions& b) {
  return a.show_batch_size == b.show_batch_size && a.show_device == b.show_device &&
         a.show_is_shared == b.show_is_shared && a.show_shape == b.show_shape &&
         a.show_field_device == b.show_field_device && a.show_dtype == b.show_dtype &&
         a.show_field_is_shared == b.show_field_is_shared && a.show_grad == b.show_grad &&
         a.show_is_contiguous == b.show_is_contiguous && a.show_is_view == b.show_is_view &&
         a.show_storage_size == b.show_storage_size && a.plain == b.plain && a.compact == b.compact &&
         a.sort_keys.is_alphabetical() == b.sort_keys.is_alphabetical() &&
         static_cast<bool>(a.sort_keys.less()) == static_cast<bool>(b.sort_keys.less());
}
}  // namespace

TEST_CASE("get_printoptions returns tensordict's defaults, as a copy",
          "[print_options][test_repr.py::TestSetPrintoptions::test_get_printoptions_returns_copy]") {
  PrintOptions opts = get_printoptions();
  // tensordict 0.15.3's get_printoptions(), html aside
  CHECK(opts.show_batch_size);
  CHECK(opts.show_device);
  CHECK(opts.show_is_shared);
  CHECK(opts.show_shape);
  CHECK(opts.show_field_device);
  CHECK(opts.show_dtype);
  CHECK(opts.show_field_is_shared);
  CHECK_FALSE(opts.show_grad);
  CHECK_FALSE(opts.show_is_contiguous);
  CHECK_FALSE(opts.show_is_view);
  CHECK_FALSE(opts.show_storage_size);
  CHECK_FALSE(opts.plain);
  CHECK(opts.sort_keys.is_alphabetical());
  CHECK(opts.compact);
  opts.show_device = false;
  CHECK(get_printoptions().show_device);
}

TEST_CASE("set_printoptions restores the options it found",
          "[print_options][test_repr.py::TestSetPrintoptions::test_context_manager_restores]"
          "[test_repr.py::TestSetPrintoptions::test_sort_keys_restores]"
          "[test_repr.py::TestSetPrintoptions::test_verbose_false_restores]") {
  const PrintOptions before = get_printoptions();
  {
    set_printoptions guard({.show_device = false, .show_is_shared = false});
    CHECK_FALSE(get_printoptions().show_device);
    CHECK_FALSE(get_printoptions().show_is_shared);
    // an option only the detailed form reads turns the compact form off
    CHECK_FALSE(get_printoptions().compact);
  }
  CHECK(same_options(get_printoptions(), before));
  {
    set_printoptions guard({.sort_keys = SortKeys::insertion()});
    CHECK_FALSE(get_printoptions().sort_keys.is_alphabetical());
  }
  CHECK(get_printoptions().sort_keys.is_alphabetical());
  {
    set_printoptions guard({.verbose = false});
    const PrintOptions opts = get_printoptions();
    CHECK_FALSE(opts.show_device);
    CHECK_FALSE(opts.show_dtype);
    CHECK_FALSE(opts.show_is_shared);
    CHECK_FALSE(opts.show_field_device);
    CHECK_FALSE(opts.show_field_is_shared);
    CHECK(opts.show_shape);
    CHECK(opts.show_batch_size);
    // verbose=false alone keeps the compact form
    CHECK(opts.compact);
  }
  CHECK(same_options(get_printoptions(), before));
  {
    set_printoptions guard({.verbose = true});
    CHECK(same_options(get_printoptions(), before));
  }
}

TEST_CASE("set_printoptions::set keeps the options past the guard",
          "[print_options][test_repr.py::TestSetPrintoptions::test_global_set]") {
  const PrintOptions before = get_printoptions();
  {
    // restores what it found when this test ends
    set_printoptions restore({});
    set_printoptions::set({.show_is_shared = false});
    CHECK_FALSE(get_printoptions().show_is_shared);
    CHECK(repr(TensorDict({{"a", at::zeros({2})}})) ==
          "TensorDict(\n"
          "    fields={\n"
          "        a: Tensor(shape=torch.Size([2]), device=cpu, dtype=torch.float32, is_shared=False)},\n"
          "    batch_size=torch.Size([]),\n"
          "    device=None)");
  }
  CHECK(same_options(get_printoptions(), before));
}

TEST_CASE("set_printoptions: each repr reads one copy of the options while other threads set them", "[print_options]") {
  const TensorDict td = a34();
  const std::string compact = repr(td);
  std::string detailed;
  {
    set_printoptions guard({.compact = false});
    detailed = repr(td);
  }
  std::thread setter([] {
    for (int i = 0; i < 200; ++i) set_printoptions guard({.compact = i % 2 == 0});
  });
  for (int i = 0; i < 200; ++i) {
    const std::string text = repr(td);
    REQUIRE((text == compact || text == detailed));
  }
  setter.join();
  CHECK(repr(td) == compact);
}

TEST_CASE("the default repr is the compact form", "[print_options][test_repr.py::TestSetPrintoptions::test_default_repr_unchanged]") {
  CHECK(repr(a34()) == "TensorDict(batch_size=[], fields={a: f32[3,4]})");
}

TEST_CASE("set_printoptions: hide device", "[print_options][test_repr.py::TestSetPrintoptions::test_hide_device]") {
  set_printoptions guard({.show_device = false});
  CHECK(repr(a34()) ==
        "TensorDict(batch_size=[], fields={a: f32[3,4]})");
}

TEST_CASE("set_printoptions: hide is shared", "[print_options][test_repr.py::TestSetPrintoptions::test_hide_is_shared]") {
  set_printoptions guard({.show_is_shared = false});
  CHECK(repr(a34()) ==
        "TensorDict(\n"
        "    fields={\n"
        "        a: Tensor(shape=torch.Size([3, 4]), device=cpu, dtype=torch.float32, is_shared=False)},\n"
        "    batch_size=torch.Size([]),\n"
        "    device=None)");
}

TEST_CASE("set_printoptions: hide batch size", "[print_options][test_repr.py::TestSetPrintoptions::test_hide_batch_size]") {
  set_printoptions guard({.show_batch_size = false});
  CHECK(repr(a34()) ==
        "TensorDict(fields={a: f32[3,4]})");
}

TEST_CASE("set_printoptions: hide dtype", "[print_options][test_repr.py::TestSetPrintoptions::test_hide_dtype]") {
  set_printoptions guard({.show_dtype = false});
  CHECK(repr(a34()) ==
        "TensorDict(batch_size=[], fields={a: [3,4]})");
}

TEST_CASE("set_printoptions: hide field device", "[print_options][test_repr.py::TestSetPrintoptions::test_hide_field_device]") {
  set_printoptions guard({.show_field_device = false});
  CHECK(repr(a34()) ==
        "TensorDict(\n"
        "    fields={\n"
        "        a: Tensor(shape=torch.Size([3, 4]), dtype=torch.float32, is_shared=False)},\n"
        "    batch_size=torch.Size([]),\n"
        "    device=None,\n"
        "    is_shared=False)");
}

TEST_CASE("set_printoptions: hide field is shared", "[print_options][test_repr.py::TestSetPrintoptions::test_hide_field_is_shared]") {
  set_printoptions guard({.show_field_is_shared = false});
  CHECK(repr(a34()) ==
        "TensorDict(\n"
        "    fields={\n"
        "        a: Tensor(shape=torch.Size([3, 4]), device=cpu, dtype=torch.float32)},\n"
        "    batch_size=torch.Size([]),\n"
        "    device=None,\n"
        "    is_shared=False)");
}

TEST_CASE("set_printoptions: hide multiple", "[print_options][test_repr.py::TestSetPrintoptions::test_hide_multiple]") {
  set_printoptions guard({.show_device = false, .show_is_shared = false, .show_dtype = false, .show_field_is_shared = false});
  CHECK(repr(a34()) ==
        "TensorDict(\n"
        "    fields={\n"
        "        a: Tensor(shape=torch.Size([3, 4]), device=cpu)},\n"
        "    batch_size=torch.Size([]))");
}

TEST_CASE("set_printoptions: show is contiguous", "[print_options][test_repr.py::TestSetPrintoptions::test_show_is_contiguous]") {
  set_printoptions guard({.show_is_contiguous = true});
  CHECK(repr(a34()) ==
        "TensorDict(\n"
        "    fields={\n"
        "        a: Tensor(shape=torch.Size([3, 4]), device=cpu, dtype=torch.float32, is_shared=False, is_contiguous=True)},\n"
        "    batch_size=torch.Size([]),\n"
        "    device=None,\n"
        "    is_shared=False)");
}

TEST_CASE("set_printoptions: show storage size", "[print_options][test_repr.py::TestSetPrintoptions::test_show_storage_size]") {
  set_printoptions guard({.show_storage_size = true});
  CHECK(repr(a34()) ==
        "TensorDict(\n"
        "    fields={\n"
        "        a: Tensor(shape=torch.Size([3, 4]), device=cpu, dtype=torch.float32, is_shared=False, storage_size=48)},\n"
        "    batch_size=torch.Size([]),\n"
        "    device=None,\n"
        "    is_shared=False)");
}

TEST_CASE("set_printoptions: verbose false", "[print_options][test_repr.py::TestSetPrintoptions::test_verbose_false]") {
  set_printoptions guard({.verbose = false});
  CHECK(repr(a34()) ==
        "TensorDict(batch_size=[], fields={a: [3,4]})");
}

TEST_CASE("set_printoptions: verbose false explicit override", "[print_options][test_repr.py::TestSetPrintoptions::test_verbose_false_explicit_override]") {
  set_printoptions guard({.verbose = false, .show_dtype = true});
  CHECK(repr(a34()) ==
        "TensorDict(batch_size=[], fields={a: f32[3,4]})");
}

TEST_CASE("set_printoptions: verbose false with compact false", "[print_options][test_repr.py::TestSetPrintoptions::test_verbose_false]") {
  set_printoptions guard({.verbose = false, .compact = false});
  CHECK(repr(a34()) ==
        "TensorDict(\n"
        "    fields={\n"
        "        a: Tensor(shape=torch.Size([3, 4]))},\n"
        "    batch_size=torch.Size([]))");
}

TEST_CASE("set_printoptions: show grad", "[print_options][test_repr.py::TestSetPrintoptions::test_show_grad]") {
  set_printoptions guard({.show_grad = true});
  CHECK(repr(TensorDict({{"a", at::randn({3}).requires_grad_()}})) ==
        "TensorDict(\n"
        "    fields={\n"
        "        a: Tensor(shape=torch.Size([3]), device=cpu, dtype=torch.float32, is_shared=False, requires_grad=True)},\n"
        "    batch_size=torch.Size([]),\n"
        "    device=None,\n"
        "    is_shared=False)");
}

TEST_CASE("set_printoptions: show is view", "[print_options][test_repr.py::TestSetPrintoptions::test_show_is_view]") {
  const at::Tensor base = at::randn({3, 4});
  set_printoptions guard({.show_is_view = true});
  CHECK(repr(TensorDict({{"a", base.slice(0, 0, 3, 2)}})) ==
        "TensorDict(\n"
        "    fields={\n"
        "        a: Tensor(shape=torch.Size([2, 4]), device=cpu, dtype=torch.float32, is_shared=False, is_view=True)},\n"
        "    batch_size=torch.Size([]),\n"
        "    device=None,\n"
        "    is_shared=False)");
}

TEST_CASE("set_printoptions: plain mode", "[print_options][test_repr.py::TestSetPrintoptions::test_plain_mode]") {
  set_printoptions guard({.plain = true});
  CHECK(repr(TensorDict({{"a", at::ones({10})}})) ==
        "TensorDict(\n"
        "    fields={\n"
        "        a: Tensor(shape=torch.Size([10]), device=cpu, dtype=torch.float32, is_shared=False, mean=1, std=0)},\n"
        "    batch_size=torch.Size([]),\n"
        "    device=None,\n"
        "    is_shared=False)");
}

TEST_CASE("set_printoptions: plain mode summarises each dtype", "[print_options][test_repr.py::TestSetPrintoptions::test_plain_mode]") {
  set_printoptions guard({.plain = true});
  const TensorDict td({{"f", at::arange(6, at::kFloat).reshape({2, 3})}, {"one", at::ones({2, 1})}, {"i", at::arange(4).reshape({2, 2})},
                      {"b", at::tensor({1, 0}).to(at::kBool)}, {"e", at::zeros({2, 0})},
                      {"c", at::complex(at::tensor({1.f, 3.f}), at::tensor({2.f, -1.f}))}},
                     {2});
  CHECK(repr(td) ==
        "TensorDict(\n"
        "    fields={\n"
        "        b: Tensor(shape=torch.Size([2]), device=cpu, dtype=torch.bool, is_shared=False, min=False, max=True),\n"
        "        c: Tensor(shape=torch.Size([2]), device=cpu, dtype=torch.complex64, is_shared=False, mean=2+0.5j, std=2.55),\n"
        "        e: Tensor(shape=torch.Size([2, 0]), device=cpu, dtype=torch.float32, is_shared=False, []),\n"
        "        f: Tensor(shape=torch.Size([2, 3]), device=cpu, dtype=torch.float32, is_shared=False, mean=2.5, std=1.871),\n"
        "        i: Tensor(shape=torch.Size([2, 2]), device=cpu, dtype=torch.int64, is_shared=False, min=0, max=3),\n"
        "        one: Tensor(shape=torch.Size([2, 1]), device=cpu, dtype=torch.float32, is_shared=False, mean=1, std=0)},\n"
        "    batch_size=torch.Size([2]),\n"
        "    device=None,\n"
        "    is_shared=False)");
}

TEST_CASE("set_printoptions: a lazy stack respects the options", "[print_options][test_repr.py::TestSetPrintoptions::test_lazy_stacked_respects_options]") {
  const TensorDict stacked = lazy_stack({TensorDict({{"a", at::randn({3})}}), TensorDict({{"a", at::randn({3})}})});
  set_printoptions guard({.show_device = false, .show_is_shared = false});
  CHECK(repr(stacked) ==
        "LazyStackedTensorDict(\n"
        "    fields={\n"
        "        a: Tensor(shape=torch.Size([2, 3]), device=cpu, dtype=torch.float32, is_shared=False)},\n"
        "    exclusive_fields={\n"
        "    },\n"
        "    batch_size=torch.Size([2]),\n"
        "    stack_dim=0)");
}

TEST_CASE("set_printoptions: sort keys alphabetical by default", "[print_options][test_repr.py::TestSetPrintoptions::test_sort_keys_alphabetical_default]") {
  CHECK(repr(TensorDict({{"c", at::randn({2})}, {"a", at::randn({2})}, {"b", at::randn({2})}})) ==
        "TensorDict(batch_size=[], fields={a: f32[2], b: f32[2], c: f32[2]})");
}

TEST_CASE("set_printoptions: sort keys in insertion order", "[print_options][test_repr.py::TestSetPrintoptions::test_sort_keys_insertion]") {
  const TensorDict td = TensorDict({{"c", at::randn({2})}, {"a", at::randn({2})}, {"b", at::randn({2})}});
  set_printoptions guard({.sort_keys = SortKeys::insertion()});
  CHECK(repr(td) ==
        "TensorDict(batch_size=[], fields={c: f32[2], a: f32[2], b: f32[2]})");
  set_printoptions detailed({.compact = false});
  CHECK(repr(td) ==
        "TensorDict(\n"
        "    fields={\n"
        "        c: Tensor(shape=torch.Size([2]), device=cpu, dtype=torch.float32, is_shared=False),\n"
        "        a: Tensor(shape=torch.Size([2]), device=cpu, dtype=torch.float32, is_shared=False),\n"
        "        b: Tensor(shape=torch.Size([2]), device=cpu, dtype=torch.float32, is_shared=False)},\n"
        "    batch_size=torch.Size([]),\n"
        "    device=None,\n"
        "    is_shared=False)");
}

TEST_CASE("set_printoptions: sort keys by a comparator", "[print_options][test_repr.py::TestSetPrintoptions::test_sort_keys_callable]") {
  // tensordict's sort_keys=lambda s: s[::-1], as a comparator
  auto reversed_less = [](const std::string& a, const std::string& b) {
    return std::string(a.rbegin(), a.rend()) < std::string(b.rbegin(), b.rend());
  };
  const TensorDict td({{"xb", at::randn({2})}, {"ya", at::randn({2})}, {"za", at::randn({2})}});
  set_printoptions guard({.sort_keys = SortKeys::by(reversed_less)});
  CHECK(repr(td) ==
        "TensorDict(batch_size=[], fields={ya: f32[2], za: f32[2], xb: f32[2]})");
  set_printoptions detailed({.compact = false});
  CHECK(repr(td) ==
        "TensorDict(\n"
        "    fields={\n"
        "        ya: Tensor(shape=torch.Size([2]), device=cpu, dtype=torch.float32, is_shared=False),\n"
        "        za: Tensor(shape=torch.Size([2]), device=cpu, dtype=torch.float32, is_shared=False),\n"
        "        xb: Tensor(shape=torch.Size([2]), device=cpu, dtype=torch.float32, is_shared=False)},\n"
        "    batch_size=torch.Size([]),\n"
        "    device=None,\n"
        "    is_shared=False)");
}
