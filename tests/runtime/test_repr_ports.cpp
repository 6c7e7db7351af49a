// Ports of tensordict's test_repr.py::TestTensorDictRepr on cpu, with device
// None and float32, then device cpu and uint8 (the test's parameters). Every
// expected string is what tensordict 0.15.3 prints for the same data
// (run in the test venv), in the compact form (the default) and under
// set_printoptions(compact=False). Not ported: test_repr_share_memory (there
// is no share_memory_()) and test_repr_nested_lazy (its members differ in
// batch size, which lazy_stack refuses here).
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

}  // namespace

TEST_CASE("repr port: td, device None, torch.float32", "[test_repr.py::TestTensorDictRepr::test_repr_plain]") {
  const std::optional<at::Device> device = std::nullopt;
  const at::ScalarType dtype = at::kFloat;
  const TensorDict td = td_(device, dtype);
  CHECK(repr(td) ==
        "TensorDict(batch_size=[4,3,2,1], fields={a: f32[5]})");
  set_printoptions detailed({.compact = false});
  CHECK(repr(td) ==
        "TensorDict(\n"
        "    fields={\n"
        "        a: Tensor(shape=torch.Size([4, 3, 2, 1, 5]), device=cpu, dtype=torch.float32, is_shared=False)},\n"
        "    batch_size=torch.Size([4, 3, 2, 1]),\n"
        "    device=None,\n"
        "    is_shared=False)");
}

TEST_CASE("repr port: nested, device None, torch.float32", "[test_repr.py::TestTensorDictRepr::test_repr_nested]") {
  const std::optional<at::Device> device = std::nullopt;
  const at::ScalarType dtype = at::kFloat;
  const TensorDict td = nested(device, dtype);
  CHECK(repr(td) ==
        "TensorDict(batch_size=[4,3,2,1], fields={b: f32[5], my_nested_td: {a: f32[5]}})");
  set_printoptions detailed({.compact = false});
  CHECK(repr(td) ==
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
        "    is_shared=False)");
}

TEST_CASE("repr port: indexed None, device None, torch.float32", "[test_repr.py::TestTensorDictRepr::test_repr_indexed_tensordict]") {
  const std::optional<at::Device> device = std::nullopt;
  const at::ScalarType dtype = at::kFloat;
  const TensorDict td = td_(device, dtype).index({None});
  CHECK(repr(td) ==
        "TensorDict(batch_size=[1,4,3,2,1], fields={a: f32[5]})");
  set_printoptions detailed({.compact = false});
  CHECK(repr(td) ==
        "TensorDict(\n"
        "    fields={\n"
        "        a: Tensor(shape=torch.Size([1, 4, 3, 2, 1, 5]), device=cpu, dtype=torch.float32, is_shared=False)},\n"
        "    batch_size=torch.Size([1, 4, 3, 2, 1]),\n"
        "    device=None,\n"
        "    is_shared=False)");
}

TEST_CASE("repr port: indexed (:,0), device None, torch.float32", "[test_repr.py::TestTensorDictRepr::test_repr_indexed_tensordict]") {
  const std::optional<at::Device> device = std::nullopt;
  const at::ScalarType dtype = at::kFloat;
  const TensorDict td = td_(device, dtype).index({Slice(), 0});
  CHECK(repr(td) ==
        "TensorDict(batch_size=[4,2,1], fields={a: f32[5]})");
  set_printoptions detailed({.compact = false});
  CHECK(repr(td) ==
        "TensorDict(\n"
        "    fields={\n"
        "        a: Tensor(shape=torch.Size([4, 2, 1, 5]), device=cpu, dtype=torch.float32, is_shared=False)},\n"
        "    batch_size=torch.Size([4, 2, 1]),\n"
        "    device=None,\n"
        "    is_shared=False)");
}

TEST_CASE("repr port: nested indexed (:,0), device None, torch.float32", "[test_repr.py::TestTensorDictRepr::test_repr_indexed_nested_tensordict]") {
  const std::optional<at::Device> device = std::nullopt;
  const at::ScalarType dtype = at::kFloat;
  const TensorDict td = nested(device, dtype).index({Slice(), 0});
  CHECK(repr(td) ==
        "TensorDict(batch_size=[4,2,1], fields={b: f32[5], my_nested_td: {a: f32[5]}})");
  set_printoptions detailed({.compact = false});
  CHECK(repr(td) ==
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
        "    is_shared=False)");
}

TEST_CASE("repr port: stacked, device None, torch.float32", "[test_repr.py::TestTensorDictRepr::test_repr_stacked]") {
  const std::optional<at::Device> device = std::nullopt;
  const at::ScalarType dtype = at::kFloat;
  const TensorDict td = stacked(device, dtype);
  CHECK(repr(td) ==
        "LazyStackedTensorDict(batch_size=[4,3,2,1], stack_dim=2, fields={\n"
        "    a: f32[5]}, exclusive_fields={0: {c: f32[5]}, 1: {b: f32[10]}})");
  set_printoptions detailed({.compact = false});
  CHECK(repr(td) ==
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
        "    stack_dim=2)");
}

TEST_CASE("repr port: memmap, device None, torch.float32", "[test_repr.py::TestTensorDictRepr::test_repr_memmap]") {
  const std::optional<at::Device> device = std::nullopt;
  const at::ScalarType dtype = at::kFloat;
  const TensorDict td = td_(device, dtype).memmap_();
  CHECK(repr(td) ==
        "TensorDict(batch_size=[4,3,2,1], device=cpu, fields={a: f32[5]})");
  set_printoptions detailed({.compact = false});
  CHECK(repr(td) ==
        "TensorDict(\n"
        "    fields={\n"
        "        a: MemoryMappedTensor(shape=torch.Size([4, 3, 2, 1, 5]), device=cpu, dtype=torch.float32, is_shared=False)},\n"
        "    batch_size=torch.Size([4, 3, 2, 1]),\n"
        "    device=cpu,\n"
        "    is_shared=False)");
}

TEST_CASE("repr port: nested update, device None, torch.float32", "[test_repr.py::TestTensorDictRepr::test_repr_nested_update]") {
  const std::optional<at::Device> device = std::nullopt;
  const at::ScalarType dtype = at::kFloat;
  const TensorDict td = nested_update(device, dtype);
  CHECK(repr(td) ==
        "TensorDict(batch_size=[4,3,2,1], fields={b: f32[5], my_nested_td: {z: f32[5]}})");
  set_printoptions detailed({.compact = false});
  CHECK(repr(td) ==
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
        "    is_shared=False)");
}

TEST_CASE("repr port: stacked het, device None, torch.float32", "[test_repr.py::TestTensorDictRepr::test_repr_stacked_het]") {
  const std::optional<at::Device> device = std::nullopt;
  const at::ScalarType dtype = at::kFloat;
  const TensorDict td = stacked_het(device, dtype);
  CHECK(repr(td) ==
        "LazyStackedTensorDict(batch_size=[2], stack_dim=0, fields={\n"
        "    a: f32[-1],\n"
        "    b: f32[-1]})");
  set_printoptions detailed({.compact = false});
  CHECK(repr(td) ==
        "LazyStackedTensorDict(\n"
        "    fields={\n"
        "        a: Tensor(shape=torch.Size([2, -1]), device=cpu, dtype=torch.float32, is_shared=False),\n"
        "        b: Tensor(shape=torch.Size([-1]), device=cpu, dtype=torch.float32, is_shared=False)},\n"
        "    exclusive_fields={\n"
        "    },\n"
        "    batch_size=torch.Size([2]),\n"
        "    device=None,\n"
        "    is_shared=False,\n"
        "    stack_dim=0)");
}

TEST_CASE("repr port: td, device cpu, torch.uint8", "[test_repr.py::TestTensorDictRepr::test_repr_plain]") {
  const std::optional<at::Device> device = at::Device(at::kCPU);
  const at::ScalarType dtype = at::kByte;
  const TensorDict td = td_(device, dtype);
  CHECK(repr(td) ==
        "TensorDict(batch_size=[4,3,2,1], device=cpu, fields={a: u8[5]})");
  set_printoptions detailed({.compact = false});
  CHECK(repr(td) ==
        "TensorDict(\n"
        "    fields={\n"
        "        a: Tensor(shape=torch.Size([4, 3, 2, 1, 5]), device=cpu, dtype=torch.uint8, is_shared=False)},\n"
        "    batch_size=torch.Size([4, 3, 2, 1]),\n"
        "    device=cpu,\n"
        "    is_shared=False)");
}

TEST_CASE("repr port: nested, device cpu, torch.uint8", "[test_repr.py::TestTensorDictRepr::test_repr_nested]") {
  const std::optional<at::Device> device = at::Device(at::kCPU);
  const at::ScalarType dtype = at::kByte;
  const TensorDict td = nested(device, dtype);
  CHECK(repr(td) ==
        "TensorDict(batch_size=[4,3,2,1], device=cpu, fields={\n"
        "    b: u8[5],\n"
        "    my_nested_td: {a: u8[5]}})");
  set_printoptions detailed({.compact = false});
  CHECK(repr(td) ==
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
        "    is_shared=False)");
}

TEST_CASE("repr port: indexed None, device cpu, torch.uint8", "[test_repr.py::TestTensorDictRepr::test_repr_indexed_tensordict]") {
  const std::optional<at::Device> device = at::Device(at::kCPU);
  const at::ScalarType dtype = at::kByte;
  const TensorDict td = td_(device, dtype).index({None});
  CHECK(repr(td) ==
        "TensorDict(batch_size=[1,4,3,2,1], device=cpu, fields={a: u8[5]})");
  set_printoptions detailed({.compact = false});
  CHECK(repr(td) ==
        "TensorDict(\n"
        "    fields={\n"
        "        a: Tensor(shape=torch.Size([1, 4, 3, 2, 1, 5]), device=cpu, dtype=torch.uint8, is_shared=False)},\n"
        "    batch_size=torch.Size([1, 4, 3, 2, 1]),\n"
        "    device=cpu,\n"
        "    is_shared=False)");
}

TEST_CASE("repr port: indexed (:,0), device cpu, torch.uint8", "[test_repr.py::TestTensorDictRepr::test_repr_indexed_tensordict]") {
  const std::optional<at::Device> device = at::Device(at::kCPU);
  const at::ScalarType dtype = at::kByte;
  const TensorDict td = td_(device, dtype).index({Slice(), 0});
  CHECK(repr(td) ==
        "TensorDict(batch_size=[4,2,1], device=cpu, fields={a: u8[5]})");
  set_printoptions detailed({.compact = false});
  CHECK(repr(td) ==
        "TensorDict(\n"
        "    fields={\n"
        "        a: Tensor(shape=torch.Size([4, 2, 1, 5]), device=cpu, dtype=torch.uint8, is_shared=False)},\n"
        "    batch_size=torch.Size([4, 2, 1]),\n"
        "    device=cpu,\n"
        "    is_shared=False)");
}

TEST_CASE("repr port: nested indexed (:,0), device cpu, torch.uint8", "[test_repr.py::TestTensorDictRepr::test_repr_indexed_nested_tensordict]") {
  const std::optional<at::Device> device = at::Device(at::kCPU);
  const at::ScalarType dtype = at::kByte;
  const TensorDict td = nested(device, dtype).index({Slice(), 0});
  CHECK(repr(td) ==
        "TensorDict(batch_size=[4,2,1], device=cpu, fields={\n"
        "    b: u8[5],\n"
        "    my_nested_td: {a: u8[5]}})");
  set_printoptions detailed({.compact = false});
  CHECK(repr(td) ==
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
        "    is_shared=False)");
}

TEST_CASE("repr port: stacked, device cpu, torch.uint8", "[test_repr.py::TestTensorDictRepr::test_repr_stacked]") {
  const std::optional<at::Device> device = at::Device(at::kCPU);
  const at::ScalarType dtype = at::kByte;
  const TensorDict td = stacked(device, dtype);
  CHECK(repr(td) ==
        "LazyStackedTensorDict(batch_size=[4,3,2,1], device=cpu, stack_dim=2, fields={\n"
        "    a: u8[5]}, exclusive_fields={0: {c: u8[5]}, 1: {b: u8[10]}})");
  set_printoptions detailed({.compact = false});
  CHECK(repr(td) ==
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
        "    stack_dim=2)");
}

TEST_CASE("repr port: memmap, device cpu, torch.uint8", "[test_repr.py::TestTensorDictRepr::test_repr_memmap]") {
  const std::optional<at::Device> device = at::Device(at::kCPU);
  const at::ScalarType dtype = at::kByte;
  const TensorDict td = td_(device, dtype).memmap_();
  CHECK(repr(td) ==
        "TensorDict(batch_size=[4,3,2,1], device=cpu, fields={a: u8[5]})");
  set_printoptions detailed({.compact = false});
  CHECK(repr(td) ==
        "TensorDict(\n"
        "    fields={\n"
        "        a: MemoryMappedTensor(shape=torch.Size([4, 3, 2, 1, 5]), device=cpu, dtype=torch.uint8, is_shared=False)},\n"
        "    batch_size=torch.Size([4, 3, 2, 1]),\n"
        "    device=cpu,\n"
        "    is_shared=False)");
}

TEST_CASE("repr port: nested update, device cpu, torch.uint8", "[test_repr.py::TestTensorDictRepr::test_repr_nested_update]") {
  const std::optional<at::Device> device = at::Device(at::kCPU);
  const at::ScalarType dtype = at::kByte;
  const TensorDict td = nested_update(device, dtype);
  CHECK(repr(td) ==
        "TensorDict(batch_size=[4,3,2,1], device=cpu, fields={\n"
        "    b: u8[5],\n"
        "    my_nested_td: {z: u8[5]}})");
  set_printoptions detailed({.compact = false});
  CHECK(repr(td) ==
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
        "    is_shared=False)");
}

TEST_CASE("repr port: stacked het, device cpu, torch.uint8", "[test_repr.py::TestTensorDictRepr::test_repr_stacked_het]") {
  const std::optional<at::Device> device = at::Device(at::kCPU);
  const at::ScalarType dtype = at::kByte;
  const TensorDict td = stacked_het(device, dtype);
  CHECK(repr(td) ==
        "LazyStackedTensorDict(batch_size=[2], device=cpu, stack_dim=0, fields={\n"
        "    a: u8[-1],\n"
        "    b: u8[-1]})");
  set_printoptions detailed({.compact = false});
  CHECK(repr(td) ==
        "LazyStackedTensorDict(\n"
        "    fields={\n"
        "        a: Tensor(shape=torch.Size([2, -1]), device=cpu, dtype=torch.uint8, is_shared=False),\n"
        "        b: Tensor(shape=torch.Size([-1]), device=cpu, dtype=torch.uint8, is_shared=False)},\n"
        "    exclusive_fields={\n"
        "    },\n"
        "    batch_size=torch.Size([2]),\n"
        "    device=cpu,\n"
        "    is_shared=False,\n"
        "    stack_dim=0)");
}
