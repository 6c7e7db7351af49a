// Lazy stacks of generated tensorclass objects (tensordict's lazy_stack of
// tensorclasses): members kept, fields stacked on demand, writes split into
// the members. Expected values: the members' own tensors.
#include <ATen/ATen.h>
#include <nlohmann/json.hpp>
#include <catch2/catch.hpp>
#include <tensordict/tensorclass_lazy.h>
#include <tensordict/tensordict.h>

#include <vector>

#include "../builders.h"
#include "../message_of.h"
#include "tc_extras.tc.h"

using tensordict::TensorDict;
using tct::extras::Data;
using tct::extras::Jagged;
using tct::extras::Nest;
using namespace at::indexing;
using td_test::message_of;
using td_test::same;

namespace {

// One member: X counts from `base`.
Data member(float base) {
  const at::Tensor x = at::arange(20, at::kFloat).view({4, 5}) + base;
  return Data({.X = x, .z = "z" + std::to_string(static_cast<int>(base)), .y = Nest({.X = -x, .z = "n"}, {4})}, {4});
}
}  // namespace

TEST_CASE("lazy_stack of tensorclass objects keeps the members (test_tensorclass.py::TestTensorClass::test_stack)",
          "[tensorclass][lazy]") {
  const Data a = member(0), b = member(100);
  auto stack = tensordict::lazy_stack(std::vector<Data>{a, b}, 0);
  CHECK(stack.size() == 2);
  CHECK(stack.stack_dim() == 0);
  CHECK(stack.batch_size() == std::vector<int64_t>{2, 4});
  CHECK(same(stack.get("X"), at::stack({a.X, b.X}, 0)));
  CHECK(same(stack.get({"y", "X"}), at::stack({a.y->X, b.y->X}, 0)));
  CHECK(stack[1].X.is_same(b.X));  // the member itself
  CHECK(stack[-1].z == "z100");
  // contiguous() is T::stack: non-tensor fields must agree.
  CHECK(message_of([&] { (void)stack.contiguous(); }) ==
        "stack: non-tensor field Data.z differs: 'z0' in element 0 but 'z100' in element 1");
  stack[1].z = "z0";
  const Data dense = stack.contiguous();
  CHECK(same(dense.X, at::stack({a.X, b.X})));
  CHECK(same(dense.y->X, at::stack({a.y->X, b.y->X})));
  CHECK(dense.batch_size() == at::IntArrayRef({2, 4}));

  auto on_dim1 = tensordict::lazy_stack(std::vector<Data>{a, b}, 1);
  CHECK(on_dim1.batch_size() == std::vector<int64_t>{4, 2});
  CHECK(same(on_dim1.get("X"), at::stack({a.X, b.X}, 1)));
  CHECK(on_dim1.tensordict().stack_dim() == 1);
  CHECK(on_dim1.tensordict().tensordicts()[1].get_non_tensor("z") == "z100");
  CHECK_THROWS_WITH(stack[2], "LazyStackedTensorClass<Data>[]: index 2 is out of range for 2 members");
}

TEST_CASE("set splits a field into the members, each slice validated first",
          "[tensorclass][lazy]") {
  Data a = member(0), b = member(100);
  auto stack = tensordict::lazy_stack(std::vector<Data>{a, b});
  const at::Tensor value = at::rand({2, 4, 5});
  stack.set("X", value);
  CHECK(same(stack[0].X, value[0]));
  CHECK(same(stack[1].X, value[1]));
  CHECK(same(stack.get("X"), value));
  CHECK(message_of([&] { stack.set("X", at::rand({3, 4, 5})); }) ==
        "LazyStackedTensorClass<Data>.set: 'X' needs 2 entries along the stack dim 0 (one per member), got shape [3, 4, 5]");
  // A slice the schema refuses: no member changes.
  CHECK_THROWS_WITH(stack.set("X", at::rand({2, 4, 6})), Catch::Matchers::Contains("Data.X"));
  CHECK(same(stack.get("X"), value));
}

TEST_CASE("members whose fields differ in shape stay lazy (test_tensorclass.py::TestTensorClass::test_get_lazystack)",
          "[tensorclass][lazy]") {
  const Jagged a({.obs = at::ones({3})}, {});
  const Jagged b({.obs = at::full({2}, 2.f)}, {});
  auto stack = tensordict::lazy_stack(std::vector<Jagged>{a, b});
  const auto list = stack.get_list("obs");
  REQUIRE(list.size() == 2);
  CHECK(list[1].sizes() == at::IntArrayRef({2}));
  const at::Tensor padded = stack.get_padded("obs");
  CHECK(padded.sizes() == at::IntArrayRef({2, 3}));
  CHECK(padded[1][2].item<float>() == 0.f);
  CHECK(padded[1][1].item<float>() == 2.f);
  CHECK_THROWS_WITH(stack.get("obs"), Catch::Matchers::Contains("get_list"));
  CHECK(message_of([&] { (void)stack.contiguous(); }) ==
        "stack: tensor field Jagged.obs has feature shape [3] in element 0 but [2] in element 1 (lazy_stack keeps "
        "objects whose shapes differ)");
  stack.append(Jagged({.obs = at::zeros({5})}, {}));
  CHECK(stack.size() == 3);
  CHECK(stack[2].obs.size(0) == 5);
  stack.insert(-1, Jagged({.obs = at::zeros({4})}, {}));
  CHECK(stack[2].obs.size(0) == 4);
  CHECK(stack[3].obs.size(0) == 5);
  CHECK(message_of([&] { stack.insert(5, Jagged({.obs = at::zeros({1})}, {})); }) ==
        "LazyStackedTensorClass<Jagged>.insert: position 5 is out of range for 4 members");
  CHECK(stack.size() == 4);
  CHECK(stack.clone()[0].obs.is_same(a.obs) == false);
  CHECK_THROWS_WITH(tensordict::lazy_stack(std::vector<Jagged>{}), "lazy_stack: items cannot be empty");
  // Members of different batch sizes: -1 where they differ (tensordict
  // 0.15's lazy_stack); another number of batch dims is refused.
  CHECK(tensordict::lazy_stack(std::vector<Data>{member(0), member(0).index({Slice(0, 2)})}).batch_size() ==
        std::vector<int64_t>{2, -1});
  CHECK_THROWS_WITH(tensordict::lazy_stack(std::vector<Data>{member(0), member(0).index({0})}),
                    Catch::Matchers::Contains("the members of a lazy stack have as many batch dims"));
}

TEST_CASE("ops on the dynamic form of a jagged stack of objects run member by member (test_lazy.py::test_add_mul_exp_clamp_hetero)",
          "[tensorclass][lazy]") {
  const Jagged a({.obs = at::ones({3}), .tag = "a"}, {});
  const Jagged b({.obs = at::full({2}, 2.f), .tag = "b"}, {});
  auto stack = tensordict::lazy_stack(std::vector<Jagged>{a, b});
  // tensordict 0.15.3 runs math on a lazy stack of tensorclasses member by
  // member: obs * 2 is [2, 2, 2] and [4, 4].
  const auto doubled = stack.apply_tensordict([](const TensorDict& td) { return td * 2; });
  CHECK(same(doubled[0].obs, at::full({3}, 2.f)));
  CHECK(same(doubled[1].obs, at::full({2}, 4.f)));
  CHECK(doubled[1].tag == "b");  // the member's own non-tensor field
  const auto exp = stack.apply([](const at::Tensor& t) { return t.exp(); });
  CHECK(same(exp[1].obs, at::full({2}, 2.f).exp()));
  // In place through the dynamic stack: into the members' own tensors.
  stack.tensordict().add_(1);
  CHECK(same(stack[0].obs, at::full({3}, 2.f)));
  CHECK(same(stack[1].obs, at::full({2}, 3.f)));
  CHECK(same(a.obs, at::full({3}, 2.f)));  // the member shares a's tensor
  CHECK(message_of([&] { (void)stack.apply_tensordict([](const TensorDict& td) { return td.index({0}); }); }) ==
        "LazyStackedTensorClass<Jagged>.apply_tensordict: the function must return a lazy stack of 2 members along dim 0, "
        "got a TensorDict of batch size []");
}
