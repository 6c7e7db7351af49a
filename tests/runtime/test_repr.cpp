// tensordict's repr, byte for byte: the compact form (the default) and the
// detailed one (set_printoptions compact=false). Every expected string is
// what tensordict 0.15.3 prints for the same data (run in the test venv).
#include <tensordict/fmt.h>
#include <nlohmann/json.hpp>

#include <sstream>

#include "helpers.h"

using namespace tensordict;
using namespace td_test;

TEST_CASE("the repr of a nested TensorDict matches tensordict's") {
  // Inserted in reverse order: fields print sorted, as tensordict sorts them.
  TensorDict td({{"b", TensorDict({{"c", at::randn({3, 4})}}, {3, 4})}, {"a", at::randn({3})}}, {3});
  const std::string compact = "TensorDict(batch_size=[3], fields={a: f32[], b: [4]{c: f32[]}})";
  REQUIRE(repr(td) == compact);
  std::ostringstream os;
  os << td;
  REQUIRE(os.str() == compact);
  REQUIRE(fmt::format("{}", td) == compact);
  REQUIRE(fmt::format("{}", TensorDict(td)) == compact);
  set_printoptions detailed({.compact = false});
  REQUIRE(repr(td) ==
          "TensorDict(\n"
          "    fields={\n"
          "        a: Tensor(shape=torch.Size([3]), device=cpu, dtype=torch.float32, is_shared=False),\n"
          "        b: TensorDict(\n"
          "            fields={\n"
          "                c: Tensor(shape=torch.Size([3, 4]), device=cpu, dtype=torch.float32, is_shared=False)},\n"
          "            batch_size=torch.Size([3, 4]),\n"
          "            device=None,\n"
          "            is_shared=False)},\n"
          "    batch_size=torch.Size([3]),\n"
          "    device=None,\n"
          "    is_shared=False)");
}

TEST_CASE("compact repr: tensordict's own example, with a nested level and a string") {
  TensorDict td({{"a", at::zeros({3})}, {"b", TensorDict({{"c", at::zeros({3}, at::kLong)}}, {3})}}, {3});
  td.set_non_tensor("s", "x");
  CHECK(repr(td) == "TensorDict(batch_size=[3], fields={a: f32[], b: {c: i64[]}, s: str})");
}

TEST_CASE("repr of an empty tensordict, a device and other dtypes") {
  CHECK(repr(TensorDict()) == "TensorDict(batch_size=[], fields={})");
  TensorDict td({{"mask", at::zeros({2}, at::kBool)}, {"idx", at::zeros({2, 1}, at::kLong)}}, {2}, at::Device(at::kCPU));
  CHECK(repr(td) == "TensorDict(batch_size=[2], device=cpu, fields={idx: i64[1], mask: bool[]})");
  set_printoptions detailed({.compact = false});
  CHECK(repr(TensorDict()) ==
          "TensorDict(\n"
          "    fields={\n"
          "    },\n"
          "    batch_size=torch.Size([]),\n"
          "    device=None,\n"
          "    is_shared=False)");
  CHECK(repr(td) ==
        "TensorDict(\n"
        "    fields={\n"
        "        idx: Tensor(shape=torch.Size([2, 1]), device=cpu, dtype=torch.int64, is_shared=False),\n"
        "        mask: Tensor(shape=torch.Size([2]), device=cpu, dtype=torch.bool, is_shared=False)},\n"
        "    batch_size=torch.Size([2]),\n"
        "    device=cpu,\n"
        "    is_shared=False)");
}

TEST_CASE("compact repr: names are not shown, every dtype is shortened") {
  CHECK(repr(TensorDict({{"x", at::zeros({2, 3})}}, {2}, std::nullopt, {"env"})) == "TensorDict(batch_size=[2], fields={x: f32[3]})");
  std::vector<TensorDict::Entry> entries;
  for (auto [name, dtype] : {std::pair{"f64", at::kDouble}, {"f16", at::kHalf}, {"bf16", at::kBFloat16}, {"i8", at::kChar},
                             {"i16", at::kShort}, {"i32", at::kInt}, {"u8", at::kByte}, {"c64", at::kComplexFloat},
                             {"c128", at::kComplexDouble}}) {
    entries.emplace_back(name, at::zeros({2}, dtype));
  }
  CHECK(repr(TensorDict(entries, {2})) ==
          "TensorDict(batch_size=[2], fields={\n"
          "    bf16: bf16[],\n"
          "    c128: c128[],\n"
          "    c64: c64[],\n"
          "    f16: f16[],\n"
          "    f64: f64[],\n"
          "    i16: i16[],\n"
          "    i32: i32[],\n"
          "    i8: i8[],\n"
          "    u8: u8[]})");
}

TEST_CASE("compact repr: a leaf off the cpu in a tensordict without a device names its device") {
  const TensorDict td({{"m", at::zeros({2, 3}, at::TensorOptions().device(at::kMeta))}, {"c", at::zeros({2})}}, {2});
  CHECK(repr(td) == "TensorDict(batch_size=[2], fields={c: f32[], m: f32[3]@meta})");
}

TEST_CASE("compact repr: one entry per line past 80 columns, nested levels by the same rule") {
  TensorDict observation({{"pixels", at::zeros({4, 3, 64, 64}, at::kByte)},
                          {"state", at::zeros({4, 17})},
                          {"nested", TensorDict({{"deep_key_one", at::zeros({4, 5})}, {"deep_key_two", at::zeros({4, 5, 6}, at::kInt)}}, {4})}},
                         {4});
  const TensorDict td({{"observation", observation}, {"action", at::zeros({4, 6})}, {"reward", at::zeros({4, 1})},
                       {"done", at::zeros({4, 1}, at::kBool)}},
                      {4});
  CHECK(repr(td) ==
          "TensorDict(batch_size=[4], fields={\n"
          "    action: f32[6],\n"
          "    done: bool[1],\n"
          "    observation: {\n"
          "        nested: {deep_key_one: f32[5], deep_key_two: i32[5,6]},\n"
          "        pixels: u8[3,64,64],\n"
          "        state: f32[17]},\n"
          "    reward: f32[1]})");
}

TEST_CASE("compact repr of lazy stacks: stack_dim, promoted dtypes, -1 where members differ, exclusive fields") {
  const TensorDict member({{"x", at::zeros({2, 3})}, {"y", at::zeros({2}, at::kHalf)}}, {2});
  CHECK(repr(lazy_stack({member, member.clone()}, 0)) ==
          "LazyStackedTensorDict(batch_size=[2,2], stack_dim=0, fields={\n"
          "    x: f32[3],\n"
          "    y: f16[]})");
  const TensorDict a({{"x", at::zeros({3})}, {"e", at::zeros({4})}});
  const TensorDict b({{"x", at::zeros({5}, at::kDouble)}});
  const TensorDict l = lazy_stack({a, b}, 0);
  CHECK(repr(l) ==
          "LazyStackedTensorDict(batch_size=[2], stack_dim=0, fields={\n"
          "    x: f64[-1]}, exclusive_fields={0: {e: f32[4]}})");
  set_printoptions detailed({.compact = false});
  // the detailed form prints a ragged entry with its first member's dtype
  CHECK(repr(l) ==
          "LazyStackedTensorDict(\n"
          "    fields={\n"
          "        x: Tensor(shape=torch.Size([2, -1]), device=cpu, dtype=torch.float32, is_shared=False)},\n"
          "    exclusive_fields={\n"
          "        0 ->\n"
          "            e: Tensor(shape=torch.Size([4]), device=cpu, dtype=torch.float32, is_shared=False)},\n"
          "    batch_size=torch.Size([2]),\n"
          "    device=None,\n"
          "    is_shared=False,\n"
          "    stack_dim=0)");
}

TEST_CASE("compact repr of lazy stacks: the members' devices, nested stacks, nested levels") {
  // tensordict 0.15.3 on the same stacks (run in the test venv)
  const TensorDict a({{"x", at::zeros({2})}, {"n", TensorDict({{"y", at::zeros({3})}})}});
  const TensorDict b({{"x", at::zeros({2}, at::TensorOptions().device(at::kMeta))},
                      {"n", TensorDict({{"y", at::zeros({3}, at::kInt)}})}});
  CHECK(repr(lazy_stack({a, b})) ==
        "LazyStackedTensorDict(batch_size=[2], stack_dim=0, fields={\n"
        "    n: {y: f32[3]},\n"
        "    x: f32[2]@cpu,meta})");
  TensorDict c2 = a.clone(), c3 = a.clone();
  c2.set_non_tensor("s", "a");
  c3.set_non_tensor("s", "b");
  CHECK(repr(lazy_stack({lazy_stack({c2, c3}), lazy_stack({c3.clone(), c2.clone()})})) ==
        "LazyStackedTensorDict(batch_size=[2,2], stack_dim=0, fields={\n"
        "    n: {y: f32[3]},\n"
        "    s: str,\n"
        "    x: f32[2]})");
}

TEST_CASE("compact repr of non-tensor data: the Python type of the value, NonTensorStack for a stack") {
  TensorDict td({{"x", at::zeros({2})}}, {2});
  td.set_non_tensor("s", "a");
  td.set_non_tensor("f", 1.5);
  td.set_non_tensor("i", 3);
  td.set_non_tensor("b", true);
  td.set_non_tensor("l", Json::array({1, 2, 3}));
  td.set_non_tensor("d", Json::object({{"a", 1}}));
  td.set_non_tensor("n", nullptr);
  CHECK(repr(td) ==
          "TensorDict(batch_size=[2], fields={\n"
          "    b: bool,\n"
          "    d: dict,\n"
          "    f: float,\n"
          "    i: int,\n"
          "    l: list,\n"
          "    n: NoneType,\n"
          "    s: str,\n"
          "    x: f32[]})");
  TensorDict x, y;
  x.set_non_tensor("s", "x");
  y.set_non_tensor("s", "y");
  CHECK(repr(stack({x, y})) == "TensorDict(batch_size=[2], fields={s: NonTensorStack})");
  // a lazy stack's entry is its first member's
  x.set("t", at::zeros({2}));
  y.set("t", at::zeros({2}));
  CHECK(repr(lazy_stack({x, y})) == "LazyStackedTensorDict(batch_size=[2], stack_dim=0, fields={s: str, t: f32[2]})");
}

TEST_CASE("compact repr under the print options: sort_keys, show_dtype, the header, verbose") {
  const TensorDict td({{"c", at::zeros({2, 3})}, {"a", at::zeros({2}, at::kLong)},
                       {"b", TensorDict({{"z", at::zeros({2})}, {"y", at::zeros({2})}}, {2})}},
                      {2}, at::Device(at::kCPU));
  {
    set_printoptions guard({.sort_keys = SortKeys::insertion()});
    CHECK(repr(td) ==
          "TensorDict(batch_size=[2], device=cpu, fields={\n"
          "    c: f32[3],\n"
          "    a: i64[],\n"
          "    b: {z: f32[], y: f32[]}})");
  }
  {
    // tensordict's sort_keys=lambda s: s[::-1], as a comparator
    set_printoptions guard({.sort_keys = SortKeys::by([](const std::string& l, const std::string& r) {
                              return std::string(l.rbegin(), l.rend()) < std::string(r.rbegin(), r.rend());
                            })});
    CHECK(repr(td) ==
          "TensorDict(batch_size=[2], device=cpu, fields={\n"
          "    c: f32[3],\n"
          "    a: i64[],\n"
          "    b: {y: f32[], z: f32[]}})");
  }
  {
    set_printoptions guard({.show_dtype = false});
    CHECK(repr(td) ==
          "TensorDict(batch_size=[2], device=cpu, fields={\n"
          "    a: [],\n"
          "    b: {y: [], z: []},\n"
          "    c: [3]})");
  }
  {
    set_printoptions guard({.show_batch_size = false, .show_device = false});
    CHECK(repr(td) == "TensorDict(fields={a: i64[], b: {y: f32[], z: f32[]}, c: f32[3]})");
  }
  {
    set_printoptions guard({.verbose = false});
    CHECK(repr(td) == "TensorDict(batch_size=[2], fields={a: [], b: {y: [], z: []}, c: [3]})");
  }
  {
    set_printoptions guard({.verbose = false, .compact = false});
    CHECK(repr(td) ==
          "TensorDict(\n"
          "    fields={\n"
          "        a: Tensor(shape=torch.Size([2])),\n"
          "        b: TensorDict(\n"
          "            fields={\n"
          "                y: Tensor(shape=torch.Size([2])),\n"
          "                z: Tensor(shape=torch.Size([2]))},\n"
          "            batch_size=torch.Size([2])),\n"
          "        c: Tensor(shape=torch.Size([2, 3]))},\n"
          "    batch_size=torch.Size([2]))");
  }
  {
    set_printoptions guard({.show_is_shared = false});
    CHECK(repr(td) ==
          "TensorDict(\n"
          "    fields={\n"
          "        a: Tensor(shape=torch.Size([2]), device=cpu, dtype=torch.int64, is_shared=False),\n"
          "        b: TensorDict(\n"
          "            fields={\n"
          "                y: Tensor(shape=torch.Size([2]), device=cpu, dtype=torch.float32, is_shared=False),\n"
          "                z: Tensor(shape=torch.Size([2]), device=cpu, dtype=torch.float32, is_shared=False)},\n"
          "            batch_size=torch.Size([2]),\n"
          "            device=cpu),\n"
          "        c: Tensor(shape=torch.Size([2, 3]), device=cpu, dtype=torch.float32, is_shared=False)},\n"
          "    batch_size=torch.Size([2]),\n"
          "    device=cpu)");
  }
  {
    set_printoptions guard({.show_is_shared = false, .compact = true});
    CHECK(repr(td) ==
          "TensorDict(batch_size=[2], device=cpu, fields={\n"
          "    a: i64[],\n"
          "    b: {y: f32[], z: f32[]},\n"
          "    c: f32[3]})");
  }
  {
    set_printoptions guard({.sort_keys = SortKeys::insertion(), .compact = false});
    CHECK(repr(td) ==
          "TensorDict(\n"
          "    fields={\n"
          "        c: Tensor(shape=torch.Size([2, 3]), device=cpu, dtype=torch.float32, is_shared=False),\n"
          "        a: Tensor(shape=torch.Size([2]), device=cpu, dtype=torch.int64, is_shared=False),\n"
          "        b: TensorDict(\n"
          "            fields={\n"
          "                z: Tensor(shape=torch.Size([2]), device=cpu, dtype=torch.float32, is_shared=False),\n"
          "                y: Tensor(shape=torch.Size([2]), device=cpu, dtype=torch.float32, is_shared=False)},\n"
          "            batch_size=torch.Size([2]),\n"
          "            device=cpu,\n"
          "            is_shared=False)},\n"
          "    batch_size=torch.Size([2]),\n"
          "    device=cpu,\n"
          "    is_shared=False)");
  }
}

TEST_CASE("dtype names round trip") {
  for (auto type : {at::kFloat, at::kDouble, at::kHalf, at::kBFloat16, at::kChar, at::kShort, at::kInt, at::kLong, at::kByte,
                    at::kBool, at::kComplexFloat, at::kComplexDouble}) {
    REQUIRE(dtype_from_name(dtype_name(type)) == type);
    REQUIRE(dtype_from_name("torch." + std::string(dtype_name(type))) == type);
  }
  REQUIRE(dtype_name(at::kFloat) == "float32");
  REQUIRE_FALSE(dtype_from_name("half").has_value());
  REQUIRE_THROWS_AS(dtype_name(at::kQInt8), std::invalid_argument);
}
