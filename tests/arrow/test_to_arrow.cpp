// to_arrow against tensordict/_arrow.py 0.15.3: its docstring's example, each
// entry rule, and every error, by message; and round trips through
// from_arrow. Against tensordict itself: tests/interop/run_arrow.py.
#include <tensordict/arrow.h>
#include <nlohmann/json.hpp>

#include <arrow/api.h>
#include <arrow/extension/fixed_shape_tensor.h>

#include <cmath>
#include <limits>

#include "../runtime/helpers.h"
#include "arrow_builders.h"

using namespace tensordict;
using td_test::iota;
using td_test::same;

TEST_CASE("to_arrow: 1-D tensors are primitive columns, more dims fixed_shape_tensor, nested tensordicts structs "
          "(its docstring's example)",
          "[arrow][tensordict/_arrow.py::to_arrow]") {
  const TensorDict td({{"x", at::tensor({1.f, 2.f})},
                       {"image", at::zeros({2, 3, 4})},
                       {"obs", TensorDict({{"y", at::tensor({int64_t{3}, int64_t{4}})}}, {2})}},
                      {2});
  const auto table = to_arrow(td);
  CHECK(table->num_rows() == 2);
  CHECK(table->schema()->ToString() ==
        "x: float\n"
        "image: extension<arrow.fixed_shape_tensor[value_type=float, shape=[3,4], permutation=[0,1]]>\n"
        "obs: struct<y: int64>");
}

TEST_CASE("to_arrow: a contiguous CPU tensor's column views its memory, bools and halves keep their types", "[arrow]") {
  const at::Tensor x = iota({4}, at::kDouble);
  const TensorDict td({{"x", x}, {"flag", td_test::mask({1, 0, 0, 1})}, {"h", iota({4}, at::kHalf)}}, {4});
  const auto table = to_arrow(td);
  const auto column = table->column(0)->chunk(0);
  CHECK(column->data()->buffers[1]->data() == static_cast<const uint8_t*>(x.data_ptr()));
  CHECK(table->column(1)->type()->id() == arrow::Type::BOOL);
  CHECK(static_cast<const arrow::BooleanArray&>(*table->column(1)->chunk(0)).Value(3));
  CHECK(table->column(2)->type()->id() == arrow::Type::HALF_FLOAT);
}

TEST_CASE("to_arrow: nested tensors are large_list columns, a ragged dim elsewhere than 1 is refused", "[arrow]") {
  const at::Tensor jagged =
      at::_nested_tensor_from_tensor_list(std::vector<at::Tensor>{iota({3, 2}), iota({1, 2}) + 10});
  const auto table = to_arrow(TensorDict({{"seq", jagged}}, {2}));
  CHECK(table->schema()->field(0)->type()->ToString() ==
        "large_list<item: extension<arrow.fixed_shape_tensor[value_type=float, shape=[2], permutation=[0]]>>");
  const auto rows = from_arrow(*table).get("seq").unbind(0);
  CHECK(same(rows[0], iota({3, 2})));
  CHECK(same(rows[1], iota({1, 2}) + 10));

  const at::Tensor wrong = at::_nested_tensor_from_tensor_list(std::vector<at::Tensor>{iota({2, 3}), iota({2, 1})});
  CHECK(TD_MESSAGE(to_arrow(TensorDict({{"w", wrong}}, {2}))) ==
        "to_arrow needs the ragged dim of the jagged tensor 'w' at position 1, got 2. Move it there first, for example "
        "with .transpose(1, 2).");
}

TEST_CASE("to_arrow: non-tensor entries are columns of the type pyarrow infers from their values", "[arrow]") {
  TensorDict td({{"x", iota({2})}}, {2});
  td.set("labels", NonTensorData::stack({"a", "b"}, {2}));
  td.set_non_tensor("task", "walk");
  td.set("meta", NonTensorData::stack({Json{{"seed", 1}}, Json{{"lr", 0.5}, {"seed", 2}}}, {2}));
  td.set("mixed", NonTensorData::stack({1, 2.5}, {2}));
  td.set("lists", NonTensorData::stack({Json::array({1, 2}), nullptr}, {2}));
  const auto table = to_arrow(td);
  CHECK(table->schema()->ToString() ==
        "x: float\n"
        "labels: string\n"
        "task: string\n"
        "meta: struct<seed: int64, lr: double>\n"
        "mixed: double\n"
        "lists: list<item: int64>");
  // Back as from_arrow converts those columns: a stack of one value is that value here.
  const TensorDict back = from_arrow(*table, {.nulls = ArrowNulls::Fill});
  CHECK(back.get_non_tensor("labels") == Json::array({"a", "b"}));
  CHECK(back.get_non_tensor("task") == "walk");
  CHECK(same(back.get({"meta", "seed"}), at::tensor({int64_t{1}, int64_t{2}})));
  CHECK(std::isnan(back.get({"meta", "lr"})[0].item<double>()));
  CHECK(same(back.get("mixed"), at::tensor({1.0, 2.5}, at::kDouble)));
  CHECK(same(back.get("lists").unbind(0)[0], at::tensor({int64_t{1}, int64_t{2}})));
  CHECK(back.get("lists").unbind(0)[1].numel() == 0);
}

TEST_CASE("to_arrow: what Arrow cannot hold is refused, naming the key", "[arrow]") {
  CHECK(TD_MESSAGE(to_arrow(TensorDict({{"x", iota({2, 3})}}, {2, 3}))) ==
        "to_arrow needs a tensordict with one batch dimension, got the batch size torch.Size([2, 3]). Call "
        "td.reshape(-1) first to flatten it.");
  CHECK(TD_MESSAGE(to_arrow(TensorDict({{"b", iota({2}, at::kBFloat16)}}, {2}))) ==
        "to_arrow cannot convert the tensor at 'b': its dtype BFloat16 has no Arrow type. Cast it first, for example "
        "to float32.");
  TensorDict mixed({}, {2});
  mixed.set({"n", "v"}, NonTensorData::stack({"a", 1}, {2}));
  CHECK(TD_MESSAGE(to_arrow(mixed)) ==
        "to_arrow cannot convert the non-tensor entry at ('n', 'v'): its values are str and int, which no one Arrow "
        "type holds");
  TensorDict wide({}, {2});
  wide.set("w", NonTensorData::stack({Json(-1), Json(uint64_t{1} << 63)}, {2}));
  CHECK(TD_MESSAGE(to_arrow(wide)) ==
        "to_arrow cannot convert the non-tensor entry at 'w': its integers span more than int64 and uint64 hold");
  TensorDict bytes({}, {2});
  bytes.set("raw", NonTensorData::stack({Json::binary({1, 2}), nullptr}, {2}));
  CHECK(TD_MESSAGE(to_arrow(bytes)) ==
        "to_arrow cannot convert the non-tensor entry at 'raw': its values are bytes, which no one Arrow type holds");
  const at::Tensor scalars = at::_nested_tensor_from_tensor_list(std::vector<at::Tensor>{at::ones({}), at::ones({})});
  CHECK(TD_MESSAGE(to_arrow(TensorDict({{"n", scalars}}, {2}))) ==
        "to_arrow cannot convert the nested tensor at 'n': its components must have one dim or more, the same number "
        "in each");
}

TEST_CASE("to_arrow: unsigned integers beyond int64 are a uint64 column", "[arrow]") {
  TensorDict td({}, {2});
  td.set("big", NonTensorData::stack({Json(1), Json(std::numeric_limits<uint64_t>::max())}, {2}));
  CHECK(to_arrow(td)->column(0)->type()->id() == arrow::Type::UINT64);
}

TEST_CASE("to_arrow: an empty nested tensordict is a struct column without fields, no entries, no rows", "[arrow]") {
  TensorDict td({{"x", iota({3})}}, {3});
  td.create_nested("empty");
  const auto table = to_arrow(td);
  CHECK(table->column(1)->type()->ToString() == "struct<>");
  CHECK(table->column(1)->length() == 3);
  const TensorDict back = from_arrow(*table);
  CHECK(back.get_td("empty").batch_size().vec() == std::vector<int64_t>{3});
  CHECK(to_arrow(TensorDict({}, {5}))->num_rows() == 0);
}

TEST_CASE("to_arrow then from_arrow gives the tensordict back: dtypes, feature dims, nested levels, values", "[arrow]") {
  TensorDict td({{"a", iota({3, 4})},
                 {"b", iota({3}, at::kLong) * 10},
                 {"u8", iota({3}, at::kByte)},
                 {"done", td_test::mask({0, 0, 1})},
                 {NestedKey({"next", "obs"}), iota({3, 2, 2}, at::kDouble)},
                 {NestedKey({"next", "reward"}), iota({3, 1}, at::kHalf)}},
                {3});
  td.set({"next", "label"}, NonTensorData::stack({"a", "b", "c"}, {3}));
  const TensorDict back = from_arrow(*to_arrow(td));
  CHECK(back.batch_size().vec() == std::vector<int64_t>{3});
  for (const auto& key : td.keys({.include_nested = true, .leaves_only = true})) {
    INFO(key.repr());
    CHECK(same(back.get(key), td.get(key)));
  }
  CHECK(back.get_non_tensor({"next", "label"}) == Json::array({"a", "b", "c"}));
  CHECK(back.get_td("next").batch_size().vec() == std::vector<int64_t>{3});
}
