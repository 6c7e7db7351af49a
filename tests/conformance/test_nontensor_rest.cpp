// Ports of tensordict's non-tensor tests (test_nontensor.py): stacks of
// non-tensor data under bool masks, and a value through unsqueeze/squeeze.
#include <string>
#include <nlohmann/json.hpp>
#include <vector>

#include "fixtures.h"

using namespace conformance;
using tensordict::Json;
using tensordict::NonTensorData;

TEST_CASE("a bool mask selects the elements of a non-tensor stack (test_nontensor.py::test_nontensorstack_boolean_mask)",
          "[conformance][test_nontensor.py]") {
  const TensorDict td({{"x", at::arange(3)}, {"instr", NonTensorData::stack({"a", "b", "c"}, {3})}}, {3});
  const TensorDict masked = td.index({at::tensor(std::vector<int64_t>{1, 0, 1}).to(at::kBool)});
  CHECK(masked.batch_size() == at::IntArrayRef({2}));
  CHECK(masked.get_value("instr")->is_non_tensor());
  CHECK(masked.get_non_tensor("instr") == Json::array({"a", "c"}));
  const TensorDict empty = td.index({at::zeros({3}, at::kBool)});
  CHECK(empty.batch_size() == at::IntArrayRef({0}));
  CHECK(empty.get_non_tensor("instr") == Json::array());
}

TEST_CASE(
    "bool masks over a 2-d non-tensor stack, reading and writing (test_nontensor.py::"
    "test_nontensorstack_boolean_mask_2d)",
    "[conformance][test_nontensor.py]") {
  TensorDict td({{"instr", NonTensorData::stack({"00", "01", "10", "11", "20", "21"}, {3, 2})},
                 {"x", at::arange(6).view({3, 2})}},
                {3, 2});
  const at::Tensor mask = at::tensor(std::vector<int64_t>{1, 0, 1}).to(at::kBool);
  const TensorDict masked = td.index({mask});
  CHECK(masked.get_non_tensor("instr") == Json::array({Json::array({"00", "01"}), Json::array({"20", "21"})}));
  CHECK(at::equal(masked.get("x"), at::tensor(std::vector<int64_t>{0, 1, 4, 5}).view({2, 2})));
  const at::Tensor full = at::tensor(std::vector<int64_t>{1, 0, 0, 1, 1, 1}).to(at::kBool).view({3, 2});
  CHECK(td.index({full}).get_non_tensor("instr") == Json::array({"00", "11", "20", "21"}));
  const TensorDict value({{"instr", NonTensorData::stack({"p", "q", "r", "s"}, {2, 2})},
                          {"x", at::zeros({2, 2}, at::kLong)}},
                         {2, 2});
  td.index_put_({mask}, value);
  CHECK(td.get_non_tensor("instr") == Json::array({Json::array({"p", "q"}), Json::array({"10", "11"}), Json::array({"r", "s"})}));
}

// tensordict turns the value into a stack ([3]); here an equal value stays
// one value over the new batch size (docs/differences.md:
// capture_non_tensor_stack). Both give the value back on squeeze.
TEST_CASE("unsqueeze and squeeze keep a non-tensor value (test_nontensor.py::test_squeeze_unsqueeze, README row)",
          "[conformance][test_nontensor.py]") {
  const TensorDict td({{"foo", NonTensorData(Json(3))}}, {});
  const TensorDict unsqueezed = td.unsqueeze(0);
  CHECK(unsqueezed.batch_size() == at::IntArrayRef({1}));
  CHECK(unsqueezed.get_non_tensor("foo") == Json(3));
  for (const TensorDict& squeezed : {unsqueezed.squeeze(), unsqueezed.squeeze(0)}) {
    CHECK(squeezed.batch_size().empty());
    CHECK_FALSE(squeezed.get_value("foo")->non_tensor().is_stack());
    CHECK(squeezed.get_non_tensor("foo") == Json(3));
  }
}
