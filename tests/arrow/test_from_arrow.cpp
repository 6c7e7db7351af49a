// from_arrow against tensordict/_arrow.py 0.15.3: its docstring's examples,
// each column rule, the null rules and every error, by message. Round trips
// with tensordict itself: tests/interop/run_arrow.py.
#include <tensordict/arrow.h>
#include <nlohmann/json.hpp>

#include <arrow/api.h>

#include <cmath>

#include "../runtime/helpers.h"
#include "arrow_builders.h"

using namespace tensordict;
using td_test::array;
using td_test::doubles;
using td_test::longs;
using td_test::same;
using td_test::table;

TEST_CASE("from_arrow: numbers are tensors, lists jagged tensors, strings a non-tensor stack (its docstring's example)",
          "[arrow][tensordict/_arrow.py::from_arrow]") {
  const auto t = table({{"x", array(arrow::float64(), "[1.0, 2.0, 3.0]")},
                        {"ids", array(arrow::list(arrow::int64()), "[[1, 2], [3], []]")},
                        {"text", array(arrow::utf8(), R"(["a", "b", "c"])")}});
  const TensorDict td = from_arrow(*t);
  CHECK(td.batch_size().vec() == std::vector<int64_t>{3});
  CHECK(same(td.get("x"), doubles({1, 2, 3})));
  const auto ids = td.get("ids").unbind(0);
  REQUIRE(ids.size() == 3);
  CHECK(same(ids[0], longs({1, 2})));
  CHECK(same(ids[1], longs({3})));
  CHECK(same(ids[2], at::empty({0}, at::kLong)));
  CHECK(td.get_non_tensor("text") == Json::array({"a", "b", "c"}));
  CHECK(!td.device().has_value());
}

TEST_CASE("from_arrow: nulls='mask' fills NaN and adds ('_mask', key), true where the row is not null (its docstring)",
          "[arrow][tensordict/_arrow.py::from_arrow]") {
  const TensorDict td = from_arrow(*table({{"y", array(arrow::float64(), "[1.0, null]")}}), {.nulls = ArrowNulls::Mask});
  const at::Tensor y = td.get("y");
  CHECK(y[0].item<double>() == 1.0);
  CHECK(std::isnan(y[1].item<double>()));
  CHECK(same(td.get({"_mask", "y"}), td_test::mask({1, 0})));
}

TEST_CASE("from_arrow: every integer, floating-point and boolean type keeps its dtype", "[arrow]") {
  const auto t = table({{"i8", array(arrow::int8(), "[-1, 2]")},
                        {"i16", array(arrow::int16(), "[-1, 2]")},
                        {"i32", array(arrow::int32(), "[-1, 2]")},
                        {"i64", array(arrow::int64(), "[-1, 2]")},
                        {"u8", array(arrow::uint8(), "[1, 255]")},
                        {"f16", array(arrow::float16(), "[0.5, 2.0]")},
                        {"f32", array(arrow::float32(), "[0.5, 2.0]")},
                        {"f64", array(arrow::float64(), "[0.5, 2.0]")},
                        {"b", array(arrow::boolean(), "[true, false]")}});
  const TensorDict td = from_arrow(*t);
  CHECK(same(td.get("i8"), longs({-1, 2}).to(at::kChar)));
  CHECK(same(td.get("i16"), longs({-1, 2}).to(at::kShort)));
  CHECK(same(td.get("i32"), longs({-1, 2}).to(at::kInt)));
  CHECK(same(td.get("i64"), longs({-1, 2})));
  CHECK(same(td.get("u8"), longs({1, 255}).to(at::kByte)));
  CHECK(same(td.get("f16"), doubles({0.5, 2}).to(at::kHalf)));
  CHECK(same(td.get("f32"), doubles({0.5, 2}).to(at::kFloat)));
  CHECK(same(td.get("f64"), doubles({0.5, 2})));
  CHECK(same(td.get("b"), td_test::mask({1, 0})));
}

TEST_CASE("from_arrow: uint16, uint32 and uint64 need a libtorch with those dtypes, else a TypeError names the column",
          "[arrow]") {
  const auto t = table({{"u32", array(arrow::uint32(), "[1, 4000000000]")}});
  const std::string message = TD_MESSAGE(from_arrow(*t));
  if (message == "<no exception>") {
    const at::Tensor u = from_arrow(*t).get("u32");
    CHECK(u.element_size() == 4);
    CHECK(u.to(at::kLong)[1].item<int64_t>() == 4000000000LL);
  } else {
    CHECK(message ==
          "The Arrow column ('u32',) has the type uint32, which this libtorch has no dtype for (uint16, uint32 and "
          "uint64 came with libtorch 2.3). Cast it first, for example to int64.");
  }
}

TEST_CASE("from_arrow: a column views Arrow's mutable buffer, at the array's offset, and keeps it alive", "[arrow]") {
  const auto values = array(arrow::int64(), "[10, 11, 12, 13]");
  const auto sliced = values->Slice(1, 2);
  const auto* base = values->data()->buffers[1]->data();
  at::Tensor view;
  {
    const TensorDict td = from_arrow(*table({{"x", sliced}}));
    view = td.get("x");
  }
  CHECK(view.data_ptr() == static_cast<const void*>(base + 8));
  CHECK(same(view, longs({11, 12})));
  const TensorDict copied = from_arrow(*table({{"x", sliced}}), {.copy = true});
  CHECK(copied.get("x").data_ptr() != static_cast<const void*>(base + 8));
  CHECK(same(copied.get("x"), longs({11, 12})));
}

TEST_CASE("from_arrow: an immutable buffer (a memory-mapped file's) is copied unless copy=false", "[arrow]") {
  static int64_t storage[3] = {1, 2, 3};
  auto buffer = std::make_shared<arrow::Buffer>(reinterpret_cast<const uint8_t*>(storage), sizeof storage);
  REQUIRE(!buffer->is_mutable());
  const auto column = arrow::MakeArray(arrow::ArrayData::Make(arrow::int64(), 3, {nullptr, buffer}, 0));
  const auto t = table({{"x", column}});
  CHECK(from_arrow(*t).get("x").data_ptr() != static_cast<void*>(storage));
  CHECK(from_arrow(*t, {.copy = false}).get("x").data_ptr() == static_cast<void*>(storage));
  CHECK(same(from_arrow(*t).get("x"), longs({1, 2, 3})));
}

TEST_CASE("from_arrow: fixed-size lists and arrow.fixed_shape_tensor columns are tensors with feature dims", "[arrow]") {
  const auto t = table(
      {{"pair", array(arrow::fixed_size_list(arrow::int32(), 2), "[[1, 2], [3, 4], [5, 6]]")},
       {"grid", array(arrow::fixed_size_list(arrow::fixed_size_list(arrow::float32(), 2), 2),
                      "[[[1, 2], [3, 4]], [[5, 6], [7, 8]], [[9, 10], [11, 12]]]")},
       {"image", td_test::tensor_array(arrow::int32(), {2, 3}, {}, "[[0,1,2,3,4,5],[6,7,8,9,10,11],[0,0,0,0,0,0]]")},
       {"permuted",
        td_test::tensor_array(arrow::int32(), {2, 3}, {1, 0}, "[[0,1,2,3,4,5],[6,7,8,9,10,11],[0,0,0,0,0,0]]")}});
  const TensorDict td = from_arrow(*t);
  CHECK(same(td.get("pair"), longs({1, 2, 3, 4, 5, 6}).to(at::kInt).reshape({3, 2})));
  CHECK(same(td.get("grid"), at::arange(1, 13, at::kFloat).reshape({3, 2, 2})));
  const at::Tensor image = at::cat({at::arange(12, at::kInt), at::zeros({6}, at::kInt)}).reshape({3, 2, 3});
  CHECK(same(td.get("image"), image));
  // shape is the physical shape; the permutation orders the logical dims (pyarrow's to_numpy_ndarray too).
  CHECK(same(td.get("permuted"), image.permute({0, 2, 1})));
}

TEST_CASE("from_arrow: list columns of fixed-size lists are jagged tensors with a feature dim, a sliced column's rows",
          "[arrow]") {
  const auto points = array(arrow::large_list(arrow::fixed_size_list(arrow::float64(), 2)),
                            "[[[0, 1]], [[2, 3], [4, 5]], [], [[6, 7]]]")
                          ->Slice(1, 3);
  const auto rows = from_arrow(*table({{"p", points}})).get("p").unbind(0);
  REQUIRE(rows.size() == 3);
  CHECK(same(rows[0], doubles({2, 3, 4, 5}).reshape({2, 2})));
  CHECK(same(rows[1], at::empty({0, 2}, at::kDouble)));
  CHECK(same(rows[2], doubles({6, 7}).reshape({1, 2})));
}

TEST_CASE("from_arrow: struct columns are nested tensordicts, a null struct row makes its fields null", "[arrow]") {
  const auto s = array(arrow::struct_({arrow::field("x", arrow::float32()), arrow::field("name", arrow::utf8())}),
                       R"([{"x": 1, "name": "a"}, null, {"x": 3, "name": null}])");
  CHECK(TD_MESSAGE(from_arrow(*table({{"s", s}}))) ==
        "The Arrow column ('s', 'x') has 1 null value(s). Pass nulls='fill' to fill them, or nulls='mask' to also get "
        "a mask entry.");
  const TensorDict td = from_arrow(*table({{"s", s}}), {.nulls = ArrowNulls::Mask});
  CHECK(td.get_td("s").batch_size().vec() == std::vector<int64_t>{3});
  const at::Tensor x = td.get({"s", "x"});
  CHECK(x[0].item<float>() == 1.f);
  CHECK(std::isnan(x[1].item<float>()));
  CHECK(td.get_non_tensor({"s", "name"}) == Json::array({"a", nullptr, nullptr}));
  CHECK(same(td.get({"_mask", "s", "x"}), td_test::mask({1, 0, 1})));
  CHECK(same(td.get({"_mask", "s", "name"}), td_test::mask({1, 0, 0})));
}

TEST_CASE("from_arrow: nulls='fill' gives NaN, 0, false and empty lists, and no mask", "[arrow]") {
  const auto t = table({{"f", array(arrow::float32(), "[null, 2]")},
                        {"i", array(arrow::int64(), "[null, 2]")},
                        {"u", array(arrow::uint8(), "[7, null]")},
                        {"b", array(arrow::boolean(), "[true, null]")},
                        {"pair", array(arrow::fixed_size_list(arrow::int16(), 2), "[[1, 2], null]")},
                        {"ids", array(arrow::list(arrow::int64()), "[null, [5, 6]]")},
                        {"text", array(arrow::utf8(), R"(["a", null])")}});
  const TensorDict td = from_arrow(*t, {.nulls = ArrowNulls::Fill});
  CHECK(std::isnan(td.get("f")[0].item<float>()));
  CHECK(same(td.get("i"), longs({0, 2})));
  CHECK(same(td.get("u"), longs({7, 0}).to(at::kByte)));
  CHECK(same(td.get("b"), td_test::mask({1, 0})));
  CHECK(same(td.get("pair"), longs({1, 2, 0, 0}).to(at::kShort).reshape({2, 2})));
  const auto ids = td.get("ids").unbind(0);
  CHECK(same(ids[0], at::empty({0}, at::kLong)));
  CHECK(same(ids[1], longs({5, 6})));
  CHECK(td.get_non_tensor("text") == Json::array({"a", nullptr}));
  CHECK(!td.contains("_mask"));
}

TEST_CASE("from_arrow: nulls='raise' refuses a null row and a null inside a list, naming the column", "[arrow]") {
  const std::string tail = " Pass nulls='fill' to fill them, or nulls='mask' to also get a mask entry.";
  CHECK(TD_MESSAGE(from_arrow(*table({{"x", array(arrow::int64(), "[1, null, null]")}}))) ==
        "The Arrow column ('x',) has 2 null value(s)." + tail);
  CHECK(TD_MESSAGE(from_arrow(*table({{"ids", array(arrow::list(arrow::int64()), "[[1, null]]")}}))) ==
        "The Arrow column ('ids',) has 1 null value(s)." + tail);
  CHECK(TD_MESSAGE(from_arrow(*table({{"words", array(arrow::list(arrow::utf8()), R"([["a", null], ["b"]])")}}))) ==
        "The Arrow column ('words',) has 1 null value(s)." + tail);
  CHECK(TD_MESSAGE(from_arrow(*table({{"m", array(arrow::map(arrow::utf8(), arrow::int64()), R"([[["k", null]]])")}}))) ==
        "The Arrow column ('m',) has 1 null value(s)." + tail);
  const auto codes = array(arrow::int32(), "[0, 1, 0]");
  const auto words = array(arrow::utf8(), R"(["a", null])");
  const auto encoded = td_test::ok(arrow::DictionaryArray::FromArrays(arrow::dictionary(arrow::int32(), arrow::utf8()),
                                                                      codes, words));
  CHECK(TD_MESSAGE(from_arrow(*table({{"d", encoded}}))) == "The Arrow column ('d',) has 1 null value(s)." + tail);
}

TEST_CASE("from_arrow: other columns are non-tensor stacks of their values: lists, structs of strings, maps, dictionary "
          "values",
          "[arrow]") {
  const auto codes = array(arrow::int8(), "[1, 0, 1]");
  const auto encoded = td_test::ok(arrow::DictionaryArray::FromArrays(
      arrow::dictionary(arrow::int8(), arrow::utf8()), codes, array(arrow::utf8(), R"(["low", "high"])")));
  const auto t = table(
      {{"words", array(arrow::list(arrow::utf8()), R"([["a"], [], ["b", "c"]])")},
       {"nested", array(arrow::list(arrow::list(arrow::int64())), "[[[1], [2, 3]], [], [[4]]]")},
       {"tags", array(arrow::struct_({arrow::field("k", arrow::utf8())}), R"([{"k": "x"}, {"k": "y"}, {"k": "z"}])")},
       {"m", array(arrow::map(arrow::utf8(), arrow::int64()), R"([[["a", 1]], [], [["b", 2], ["c", 3]]])")},
       {"level", encoded}});
  const TensorDict td = from_arrow(*t);
  CHECK(td.get_non_tensor("words") == Json::parse(R"([["a"], [], ["b", "c"]])"));
  CHECK(td.get_non_tensor("nested") == Json::parse("[[[1], [2, 3]], [], [[4]]]"));
  CHECK(td.get_non_tensor({"tags", "k"}) == Json::array({"x", "y", "z"}));
  CHECK(td.get_non_tensor("m") == Json::parse(R"([[["a", 1]], [], [["b", 2], ["c", 3]]])"));
  CHECK(td.get_non_tensor("level") == Json::array({"high", "low", "high"}));
}

TEST_CASE("from_arrow: a column with no JSON form is a TypeError naming it and its type", "[arrow]") {
  CHECK(TD_MESSAGE(from_arrow(*table({{"raw", array(arrow::binary(), R"(["ab"])")}}))) ==
        "The Arrow column ('raw',) has the type binary, whose values have no JSON form for a non-tensor entry. Cast it "
        "first, for example to a string or a number type.");
  CHECK(TD_MESSAGE(from_arrow(*table({{"t", array(arrow::list(arrow::timestamp(arrow::TimeUnit::MILLI)), "[[1]]")}}))) ==
        "The Arrow column ('t',) has the type list<item: timestamp[ms]>, whose values have no JSON form for a "
        "non-tensor entry. Cast it first, for example to a string or a number type.");
}

TEST_CASE("from_arrow: its option errors, with tensordict's messages", "[arrow]") {
  const auto t = table({{"x", array(arrow::float64(), "[1.0]")}, {"_mask", array(arrow::float64(), "[null]")}});
  CHECK(TD_MESSAGE(from_arrow(*t, {.mask_key = NestedKey("m")})) ==
        "from_arrow got a mask_key but nulls='raise', not 'mask'.");
  CHECK(TD_MESSAGE(from_arrow(*t, {.nulls = ArrowNulls::Fill, .mask_key = NestedKey("m")})) ==
        "from_arrow got a mask_key but nulls='fill', not 'mask'.");
  CHECK(TD_MESSAGE(from_arrow(*t, {.nulls = ArrowNulls::Mask})) ==
        "nulls='mask' writes the masks under the key '_mask', which is a column of the table.");
  const TensorDict td = from_arrow(*t, {.nulls = ArrowNulls::Mask, .mask_key = NestedKey({"valid", "rows"})});
  CHECK(same(td.get({"valid", "rows", "_mask"}), td_test::mask({0})));
}

TEST_CASE("from_arrow: chunked columns, record batches, empty tables and the device", "[arrow]") {
  const auto chunked = std::make_shared<arrow::ChunkedArray>(
      arrow::ArrayVector{array(arrow::int64(), "[1, 2]"), array(arrow::int64(), "[3]")});
  const auto t = arrow::Table::Make(arrow::schema({arrow::field("x", arrow::int64())}), {chunked});
  CHECK(same(from_arrow(*t).get("x"), longs({1, 2, 3})));

  const auto batch = arrow::RecordBatch::Make(arrow::schema({arrow::field("y", arrow::float32())}), 2,
                                              {array(arrow::float32(), "[1, 2]")});
  const TensorDict from_batch = from_arrow(*batch, {.device = at::Device(at::kCPU)});
  CHECK(same(from_batch.get("y"), at::tensor({1.f, 2.f})));
  CHECK(from_batch.device() == at::Device(at::kCPU));

  const TensorDict empty = from_arrow(*table({{"x", array(arrow::int64(), "[]")},
                                              {"ids", array(arrow::list(arrow::int64()), "[]")},
                                              {"s", array(arrow::utf8(), "[]")}}));
  CHECK(empty.batch_size().vec() == std::vector<int64_t>{0});
  CHECK(empty.get("x").sizes().vec() == std::vector<int64_t>{0});
  CHECK(empty.get("ids").is_nested());
  CHECK(empty.get_non_tensor("s") == Json::array());
}

TEST_CASE("from_arrow: an arrow.fixed_shape_tensor whose shape or permutation does not fit its storage is refused",
          "[arrow]") {
  const auto storage = array(arrow::fixed_size_list(arrow::int32(), 6), "[[0, 1, 2, 3, 4, 5]]");
  const auto wrong_shape = std::make_shared<arrow::extension::FixedShapeTensorType>(
      arrow::int32(), 6, std::vector<int64_t>{2, 2}, std::vector<int64_t>{});
  CHECK(TD_MESSAGE(from_arrow(*table({{"t", arrow::ExtensionType::WrapArray(wrong_shape, storage)}}))) ==
        "The Arrow column ('t',) is an arrow.fixed_shape_tensor whose shape [2, 2] and permutation [] do not fit its "
        "storage fixed_size_list<item: int32>[6]");
  const auto wrong_permutation = std::make_shared<arrow::extension::FixedShapeTensorType>(
      arrow::int32(), 6, std::vector<int64_t>{2, 3}, std::vector<int64_t>{0, 0});
  CHECK(TD_MESSAGE(from_arrow(*table({{"t", arrow::ExtensionType::WrapArray(wrong_permutation, storage)}}))) ==
        "The Arrow column ('t',) is an arrow.fixed_shape_tensor whose shape [2, 3] and permutation [0, 0] do not fit "
        "its storage fixed_size_list<item: int32>[6]");
}
