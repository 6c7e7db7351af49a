// Ports of tensordict's test_repr.py::TestTensorDictRepr on cpu, with device
// None and float32, then device cpu and uint8 (the test's parameters). Every
// expected string is what tensordict 0.15.3 prints for the same data
// (run in the test venv), in the compact form (the default) and under
// set_printoptions(compact=False).
#include "helpers.h"

using namespace tensordict;
using namespace td_test;
using at::indexing::None;
using at::indexing::Slice;

namespace {

// test_repr.py's fixtures: td, nested_td, stacked_td, and the tensordicts
// test_repr_nested_update and test_repr_stacked_het build.
TensorDict td_(std::optional<at::Device> device, at::ScalarType dtype) {
  return TensorDict({{"a", at::zeros({4, 3, 2, 1, 5}, dtype)}}, {4, 3, 2, 1}, device);
}

TensorDict nested(std::optional<at::Device> device, at::ScalarType dtype) {
  return TensorDict({{"my_nested_td", td_(device, dtype)}, {"b", at::zeros({4, 3, 2, 1, 5}, dtype)}}, {4, 3, 2, 1}, device);
}

TensorDict stacked(std::optional<at::Device> device, at::ScalarType dtype) {
  TensorDict td1({{"a", at::zeros({4, 3, 1, 5}, dtype)}, {"c", at::zeros({4, 3, 1, 5}, dtype)}}, {4, 3, 1}, device);
  TensorDict td2({{"a", at::zeros({4, 3, 1, 5}, dtype)}, {"b", at::zeros({4, 3, 1, 10}, dtype)}}, {4, 3, 1}, device);
  return lazy_stack({td1, td2}, 2);
}

TensorDict nested_update(std::optional<at::Device> device, at::ScalarType dtype) {
  TensorDict td = nested(device, dtype);
  td.get_td("my_nested_td").rename_key_("a", "z");
  return td;
}

TensorDict stacked_het(std::optional<at::Device> device, at::ScalarType dtype) {
  return lazy_stack({TensorDict({{"a", at::zeros({3}, dtype)}, {"b", at::zeros({2, 3}, dtype)}}, {}, device),
                     TensorDict({{"a", at::zeros({2}, dtype)}, {"b", at::zeros({}, dtype)}}, {}, device)});
}

// test_repr_nested_lazy's stack: nested_td and its concatenation with
// itself along dim 1 (batch [4, 6, 2, 1], with a nested "another"), stacked
// at dim 1: members of different batch sizes, -1 where they differ.
TensorDict nested_lazy(std::optional<at::Device> device, at::ScalarType dtype) {
  const TensorDict td0 = nested(device, dtype);
  TensorDict td1 = cat({td0, td0}, 1);
  td1.set({"my_nested_td", "another"}, td1.get({"my_nested_td", "a"}));
  return lazy_stack({td0, td1}, 1);
}

// One parameter set of the test and what tensordict prints for it.
struct Case {
  std::optional<at::Device> device;
  at::ScalarType dtype;
  const char* compact;
  const char* detailed;
};

void check_both_forms(const TensorDict& td, const Case& c) {
  CAPTURE(c.dtype);
  CHECK(repr(td) == c.compact);
  set_printoptions detailed({.compact = false});
  CHECK(repr(td) == c.detailed);
}

}  // namespace

TEST_CASE("repr port: td", "[test_repr.py::TestTensorDictRepr::test_repr_plain]") {
  for (const Case& c : std::vector<Case>{
      {std::nullopt, at::kFloat,
       "TensorDict(batch_size=[4,3,2,1], fields={a: f32[5]})",
       "TensorDict(\n"
       "    fields={\n"
       "        a: Tensor(shape=torch.Size([4, 3, 2, 1, 5]), device=cpu, dtype=torch.float32, is_shared=False)},\n"
       "    batch_size=torch.Size([4, 3, 2, 1]),\n"
       "    device=None,\n"
       "    is_shared=False)"},
      {at::Device(at::kCPU), at::kByte,
       "TensorDict(batch_size=[4,3,2,1], device=cpu, fields={a: u8[5]})",
       "TensorDict(\n"
       "    fields={\n"
       "        a: Tensor(shape=torch.Size([4, 3, 2, 1, 5]), device=cpu, dtype=torch.uint8, is_shared=False)},\n"
       "    batch_size=torch.Size([4, 3, 2, 1]),\n"
       "    device=cpu,\n"
       "    is_shared=False)"}}) {
    const TensorDict td = td_(c.device, c.dtype);
    check_both_forms(td, c);
  }
}

TEST_CASE("repr port: nested", "[test_repr.py::TestTensorDictRepr::test_repr_nested]") {
  for (const Case& c : std::vector<Case>{
      {std::nullopt, at::kFloat,
       "TensorDict(batch_size=[4,3,2,1], fields={b: f32[5], my_nested_td: {a: f32[5]}})",
       "TensorDict(\n"
       "    fields={\n"
       "        b: Tensor(shape=torch.Size([4, 3, 2, 1, 5]), device=cpu, dtype=torch.float32, is_shared=False),\n"
       "        my_nested_td: TensorDict(\n"
       "            fields={\n"
       "                a: Tensor(shape=torch.Size([4, 3, 2, 1, 5]), device=cpu, dtype=torch.float32, is_shared=False)},\n"
       "            batch_size=torch.Size([4, 3, 2, 1]),\n"
       "            device=None,\n"
       "            is_shared=False)},\n"
       "    batch_size=torch.Size([4, 3, 2, 1]),\n"
       "    device=None,\n"
       "    is_shared=False)"},
      {at::Device(at::kCPU), at::kByte,
       "TensorDict(batch_size=[4,3,2,1], device=cpu, fields={\n"
       "    b: u8[5],\n"
       "    my_nested_td: {a: u8[5]}})",
       "TensorDict(\n"
       "    fields={\n"
       "        b: Tensor(shape=torch.Size([4, 3, 2, 1, 5]), device=cpu, dtype=torch.uint8, is_shared=False),\n"
       "        my_nested_td: TensorDict(\n"
       "            fields={\n"
       "                a: Tensor(shape=torch.Size([4, 3, 2, 1, 5]), device=cpu, dtype=torch.uint8, is_shared=False)},\n"
       "            batch_size=torch.Size([4, 3, 2, 1]),\n"
       "            device=cpu,\n"
       "            is_shared=False)},\n"
       "    batch_size=torch.Size([4, 3, 2, 1]),\n"
       "    device=cpu,\n"
       "    is_shared=False)"}}) {
    const TensorDict td = nested(c.device, c.dtype);
    check_both_forms(td, c);
  }
}

TEST_CASE("repr port: indexed None", "[test_repr.py::TestTensorDictRepr::test_repr_indexed_tensordict]") {
  for (const Case& c : std::vector<Case>{
      {std::nullopt, at::kFloat,
       "TensorDict(batch_size=[1,4,3,2,1], fields={a: f32[5]})",
       "TensorDict(\n"
       "    fields={\n"
       "        a: Tensor(shape=torch.Size([1, 4, 3, 2, 1, 5]), device=cpu, dtype=torch.float32, is_shared=False)},\n"
       "    batch_size=torch.Size([1, 4, 3, 2, 1]),\n"
       "    device=None,\n"
       "    is_shared=False)"},
      {at::Device(at::kCPU), at::kByte,
       "TensorDict(batch_size=[1,4,3,2,1], device=cpu, fields={a: u8[5]})",
       "TensorDict(\n"
       "    fields={\n"
       "        a: Tensor(shape=torch.Size([1, 4, 3, 2, 1, 5]), device=cpu, dtype=torch.uint8, is_shared=False)},\n"
       "    batch_size=torch.Size([1, 4, 3, 2, 1]),\n"
       "    device=cpu,\n"
       "    is_shared=False)"}}) {
    const TensorDict td = td_(c.device, c.dtype).index({None});
    check_both_forms(td, c);
  }
}

TEST_CASE("repr port: indexed (:,0)", "[test_repr.py::TestTensorDictRepr::test_repr_indexed_tensordict]") {
  for (const Case& c : std::vector<Case>{
      {std::nullopt, at::kFloat,
       "TensorDict(batch_size=[4,2,1], fields={a: f32[5]})",
       "TensorDict(\n"
       "    fields={\n"
       "        a: Tensor(shape=torch.Size([4, 2, 1, 5]), device=cpu, dtype=torch.float32, is_shared=False)},\n"
       "    batch_size=torch.Size([4, 2, 1]),\n"
       "    device=None,\n"
       "    is_shared=False)"},
      {at::Device(at::kCPU), at::kByte,
       "TensorDict(batch_size=[4,2,1], device=cpu, fields={a: u8[5]})",
       "TensorDict(\n"
       "    fields={\n"
       "        a: Tensor(shape=torch.Size([4, 2, 1, 5]), device=cpu, dtype=torch.uint8, is_shared=False)},\n"
       "    batch_size=torch.Size([4, 2, 1]),\n"
       "    device=cpu,\n"
       "    is_shared=False)"}}) {
    const TensorDict td = td_(c.device, c.dtype).index({Slice(), 0});
    check_both_forms(td, c);
  }
}

TEST_CASE("repr port: nested indexed (:,0)", "[test_repr.py::TestTensorDictRepr::test_repr_indexed_nested_tensordict]") {
  for (const Case& c : std::vector<Case>{
      {std::nullopt, at::kFloat,
       "TensorDict(batch_size=[4,2,1], fields={b: f32[5], my_nested_td: {a: f32[5]}})",
       "TensorDict(\n"
       "    fields={\n"
       "        b: Tensor(shape=torch.Size([4, 2, 1, 5]), device=cpu, dtype=torch.float32, is_shared=False),\n"
       "        my_nested_td: TensorDict(\n"
       "            fields={\n"
       "                a: Tensor(shape=torch.Size([4, 2, 1, 5]), device=cpu, dtype=torch.float32, is_shared=False)},\n"
       "            batch_size=torch.Size([4, 2, 1]),\n"
       "            device=None,\n"
       "            is_shared=False)},\n"
       "    batch_size=torch.Size([4, 2, 1]),\n"
       "    device=None,\n"
       "    is_shared=False)"},
      {at::Device(at::kCPU), at::kByte,
       "TensorDict(batch_size=[4,2,1], device=cpu, fields={\n"
       "    b: u8[5],\n"
       "    my_nested_td: {a: u8[5]}})",
       "TensorDict(\n"
       "    fields={\n"
       "        b: Tensor(shape=torch.Size([4, 2, 1, 5]), device=cpu, dtype=torch.uint8, is_shared=False),\n"
       "        my_nested_td: TensorDict(\n"
       "            fields={\n"
       "                a: Tensor(shape=torch.Size([4, 2, 1, 5]), device=cpu, dtype=torch.uint8, is_shared=False)},\n"
       "            batch_size=torch.Size([4, 2, 1]),\n"
       "            device=cpu,\n"
       "            is_shared=False)},\n"
       "    batch_size=torch.Size([4, 2, 1]),\n"
       "    device=cpu,\n"
       "    is_shared=False)"}}) {
    const TensorDict td = nested(c.device, c.dtype).index({Slice(), 0});
    check_both_forms(td, c);
  }
}

TEST_CASE("repr port: stacked", "[test_repr.py::TestTensorDictRepr::test_repr_stacked]") {
  for (const Case& c : std::vector<Case>{
      {std::nullopt, at::kFloat,
       "LazyStackedTensorDict(batch_size=[4,3,2,1], stack_dim=2, fields={\n"
       "    a: f32[5]}, exclusive_fields={0: {c: f32[5]}, 1: {b: f32[10]}})",
       "LazyStackedTensorDict(\n"
       "    fields={\n"
       "        a: Tensor(shape=torch.Size([4, 3, 2, 1, 5]), device=cpu, dtype=torch.float32, is_shared=False)},\n"
       "    exclusive_fields={\n"
       "        0 ->\n"
       "            c: Tensor(shape=torch.Size([4, 3, 1, 5]), device=cpu, dtype=torch.float32, is_shared=False),\n"
       "        1 ->\n"
       "            b: Tensor(shape=torch.Size([4, 3, 1, 10]), device=cpu, dtype=torch.float32, is_shared=False)},\n"
       "    batch_size=torch.Size([4, 3, 2, 1]),\n"
       "    device=None,\n"
       "    is_shared=False,\n"
       "    stack_dim=2)"},
      {at::Device(at::kCPU), at::kByte,
       "LazyStackedTensorDict(batch_size=[4,3,2,1], device=cpu, stack_dim=2, fields={\n"
       "    a: u8[5]}, exclusive_fields={0: {c: u8[5]}, 1: {b: u8[10]}})",
       "LazyStackedTensorDict(\n"
       "    fields={\n"
       "        a: Tensor(shape=torch.Size([4, 3, 2, 1, 5]), device=cpu, dtype=torch.uint8, is_shared=False)},\n"
       "    exclusive_fields={\n"
       "        0 ->\n"
       "            c: Tensor(shape=torch.Size([4, 3, 1, 5]), device=cpu, dtype=torch.uint8, is_shared=False),\n"
       "        1 ->\n"
       "            b: Tensor(shape=torch.Size([4, 3, 1, 10]), device=cpu, dtype=torch.uint8, is_shared=False)},\n"
       "    batch_size=torch.Size([4, 3, 2, 1]),\n"
       "    device=cpu,\n"
       "    is_shared=False,\n"
       "    stack_dim=2)"}}) {
    const TensorDict td = stacked(c.device, c.dtype);
    check_both_forms(td, c);
  }
}

TEST_CASE("repr port: memmap", "[test_repr.py::TestTensorDictRepr::test_repr_memmap]") {
  for (const Case& c : std::vector<Case>{
      {std::nullopt, at::kFloat,
       "TensorDict(batch_size=[4,3,2,1], device=cpu, fields={a: f32[5]})",
       "TensorDict(\n"
       "    fields={\n"
       "        a: MemoryMappedTensor(shape=torch.Size([4, 3, 2, 1, 5]), device=cpu, dtype=torch.float32, is_shared=False)},\n"
       "    batch_size=torch.Size([4, 3, 2, 1]),\n"
       "    device=cpu,\n"
       "    is_shared=False)"},
      {at::Device(at::kCPU), at::kByte,
       "TensorDict(batch_size=[4,3,2,1], device=cpu, fields={a: u8[5]})",
       "TensorDict(\n"
       "    fields={\n"
       "        a: MemoryMappedTensor(shape=torch.Size([4, 3, 2, 1, 5]), device=cpu, dtype=torch.uint8, is_shared=False)},\n"
       "    batch_size=torch.Size([4, 3, 2, 1]),\n"
       "    device=cpu,\n"
       "    is_shared=False)"}}) {
    const TensorDict td = td_(c.device, c.dtype).memmap_();
    check_both_forms(td, c);
  }
}

// After share_memory_() the tensordict and its leaf both say is_shared=True;
// after unlock_() the leaf still is in shared memory, the tensordict no
// longer marked.
TEST_CASE("repr port: share memory", "[test_repr.py::TestTensorDictRepr::test_repr_share_memory]") {
  for (const Case& c : std::vector<Case>{
      {std::nullopt, at::kFloat,
       "TensorDict(batch_size=[4,3,2,1], fields={a: f32[5]})",
       "TensorDict(\n"
       "    fields={\n"
       "        a: Tensor(shape=torch.Size([4, 3, 2, 1, 5]), device=cpu, dtype=torch.float32, is_shared=True)},\n"
       "    batch_size=torch.Size([4, 3, 2, 1]),\n"
       "    device=None,\n"
       "    is_shared=True)"},
      {at::Device(at::kCPU), at::kByte,
       "TensorDict(batch_size=[4,3,2,1], device=cpu, fields={a: u8[5]})",
       "TensorDict(\n"
       "    fields={\n"
       "        a: Tensor(shape=torch.Size([4, 3, 2, 1, 5]), device=cpu, dtype=torch.uint8, is_shared=True)},\n"
       "    batch_size=torch.Size([4, 3, 2, 1]),\n"
       "    device=cpu,\n"
       "    is_shared=True)"}}) {
    TensorDict td = td_(c.device, c.dtype);
    td.share_memory_();
    check_both_forms(td, c);
  }
  TensorDict td = td_(std::nullopt, at::kFloat);
  td.share_memory_().unlock_();
  set_printoptions detailed({.compact = false});
  CHECK(repr(td) ==
        "TensorDict(\n"
        "    fields={\n"
        "        a: Tensor(shape=torch.Size([4, 3, 2, 1, 5]), device=cpu, dtype=torch.float32, is_shared=True)},\n"
        "    batch_size=torch.Size([4, 3, 2, 1]),\n"
        "    device=None,\n"
        "    is_shared=False)");
}

TEST_CASE("repr port: nested update", "[test_repr.py::TestTensorDictRepr::test_repr_nested_update]") {
  for (const Case& c : std::vector<Case>{
      {std::nullopt, at::kFloat,
       "TensorDict(batch_size=[4,3,2,1], fields={b: f32[5], my_nested_td: {z: f32[5]}})",
       "TensorDict(\n"
       "    fields={\n"
       "        b: Tensor(shape=torch.Size([4, 3, 2, 1, 5]), device=cpu, dtype=torch.float32, is_shared=False),\n"
       "        my_nested_td: TensorDict(\n"
       "            fields={\n"
       "                z: Tensor(shape=torch.Size([4, 3, 2, 1, 5]), device=cpu, dtype=torch.float32, is_shared=False)},\n"
       "            batch_size=torch.Size([4, 3, 2, 1]),\n"
       "            device=None,\n"
       "            is_shared=False)},\n"
       "    batch_size=torch.Size([4, 3, 2, 1]),\n"
       "    device=None,\n"
       "    is_shared=False)"},
      {at::Device(at::kCPU), at::kByte,
       "TensorDict(batch_size=[4,3,2,1], device=cpu, fields={\n"
       "    b: u8[5],\n"
       "    my_nested_td: {z: u8[5]}})",
       "TensorDict(\n"
       "    fields={\n"
       "        b: Tensor(shape=torch.Size([4, 3, 2, 1, 5]), device=cpu, dtype=torch.uint8, is_shared=False),\n"
       "        my_nested_td: TensorDict(\n"
       "            fields={\n"
       "                z: Tensor(shape=torch.Size([4, 3, 2, 1, 5]), device=cpu, dtype=torch.uint8, is_shared=False)},\n"
       "            batch_size=torch.Size([4, 3, 2, 1]),\n"
       "            device=cpu,\n"
       "            is_shared=False)},\n"
       "    batch_size=torch.Size([4, 3, 2, 1]),\n"
       "    device=cpu,\n"
       "    is_shared=False)"}}) {
    const TensorDict td = nested_update(c.device, c.dtype);
    check_both_forms(td, c);
  }
}

TEST_CASE("repr port: stacked het", "[test_repr.py::TestTensorDictRepr::test_repr_stacked_het]") {
  for (const Case& c : std::vector<Case>{
      {std::nullopt, at::kFloat,
       "LazyStackedTensorDict(batch_size=[2], stack_dim=0, fields={\n"
       "    a: f32[-1],\n"
       "    b: f32[-1]})",
       "LazyStackedTensorDict(\n"
       "    fields={\n"
       "        a: Tensor(shape=torch.Size([2, -1]), device=cpu, dtype=torch.float32, is_shared=False),\n"
       "        b: Tensor(shape=torch.Size([-1]), device=cpu, dtype=torch.float32, is_shared=False)},\n"
       "    exclusive_fields={\n"
       "    },\n"
       "    batch_size=torch.Size([2]),\n"
       "    device=None,\n"
       "    is_shared=False,\n"
       "    stack_dim=0)"},
      {at::Device(at::kCPU), at::kByte,
       "LazyStackedTensorDict(batch_size=[2], device=cpu, stack_dim=0, fields={\n"
       "    a: u8[-1],\n"
       "    b: u8[-1]})",
       "LazyStackedTensorDict(\n"
       "    fields={\n"
       "        a: Tensor(shape=torch.Size([2, -1]), device=cpu, dtype=torch.uint8, is_shared=False),\n"
       "        b: Tensor(shape=torch.Size([-1]), device=cpu, dtype=torch.uint8, is_shared=False)},\n"
       "    exclusive_fields={\n"
       "    },\n"
       "    batch_size=torch.Size([2]),\n"
       "    device=cpu,\n"
       "    is_shared=False,\n"
       "    stack_dim=0)"}}) {
    const TensorDict td = stacked_het(c.device, c.dtype);
    check_both_forms(td, c);
  }
}

TEST_CASE("repr port: nested lazy", "[test_repr.py::TestTensorDictRepr::test_repr_nested_lazy]") {
  auto detailed = [](const char* dtype, const char* device) {
    return fmt::format(
        "LazyStackedTensorDict(\n"
        "    fields={{\n"
        "        b: Tensor(shape=torch.Size([4, 2, -1, 2, 1, 5]), device=cpu, dtype=torch.{0}, is_shared=False),\n"
        "        my_nested_td: LazyStackedTensorDict(\n"
        "            fields={{\n"
        "                a: Tensor(shape=torch.Size([4, 2, -1, 2, 1, 5]), device=cpu, dtype=torch.{0}, is_shared=False)}},\n"
        "            exclusive_fields={{\n"
        "                1 ->\n"
        "                    another: Tensor(shape=torch.Size([4, 6, 2, 1, 5]), device=cpu, dtype=torch.{0}, is_shared=False)}},\n"
        "            batch_size=torch.Size([4, 2, -1, 2, 1]),\n"
        "            device={1},\n"
        "            is_shared=False,\n"
        "            stack_dim=1)}},\n"
        "    exclusive_fields={{\n"
        "    }},\n"
        "    batch_size=torch.Size([4, 2, -1, 2, 1]),\n"
        "    device={1},\n"
        "    is_shared=False,\n"
        "    stack_dim=1)",
        dtype, device);
  };
  const std::string float_detailed = detailed("float32", "None"), byte_detailed = detailed("uint8", "cpu");
  for (const Case& c : std::vector<Case>{
      {std::nullopt, at::kFloat,
       "LazyStackedTensorDict(batch_size=[4,2,-1,2,1], stack_dim=1, fields={\n"
       "    b: f32[5],\n"
       "    my_nested_td: {a: f32[5]}})",
       float_detailed.c_str()},
      {at::Device(at::kCPU), at::kByte,
       "LazyStackedTensorDict(batch_size=[4,2,-1,2,1], device=cpu, stack_dim=1, fields={\n"
       "    b: u8[5],\n"
       "    my_nested_td: {a: u8[5]}})",
       byte_detailed.c_str()}}) {
    check_both_forms(nested_lazy(c.device, c.dtype), c);
  }
}
