// Parquet files: read_parquet_table and write_parquet_table (pyarrow's
// read_table and write_table), and tensordict's from_parquet / to_parquet,
// with tensordict's tests of them (test/tensordict/test_tabular.py; its
// from_pandas and to_pandas cases share these conversions, here through a
// Parquet file) and their error messages.
#include <tensordict/arrow.h>
#include <nlohmann/json.hpp>

#include <arrow/api.h>

#include <cmath>
#include <fstream>
#include <limits>

#include "../runtime/helpers.h"
#include "../temp_dir.h"
#include "arrow_builders.h"

using namespace tensordict;
using td_test::array;
using td_test::doubles;
using td_test::longs;
using td_test::iota;
using td_test::same;
using td_test::table;
using td_test::TempDir;

namespace {


// A Parquet file of `t`, as pq.write_table(t, path) writes it.
std::string parquet_of(const TempDir& dir, const std::shared_ptr<arrow::Table>& t, const std::string& name = "t") {
  const std::string path = (dir / (name + ".parquet")).string();
  write_parquet_table(*t, path);
  return path;
}

}  // namespace

TEST_CASE("parquet: a table written and read back keeps its types, extension types and large lists included",
          "[arrow]") {
  TempDir dir;
  const auto t = table({{"u8", array(arrow::uint8(), "[1, 2]")},
                        {"h", array(arrow::float16(), "[0.5, null]")},
                        {"seq", array(arrow::large_list(arrow::int32()), "[[1], [2, 3]]")},
                        {"image", td_test::tensor_array(arrow::float32(), {1, 2}, {}, "[[1, 2], [3, 4]]")},
                        {"s", array(arrow::struct_({arrow::field("w", arrow::utf8())}), R"([{"w": "a"}, null])")}});
  const auto back = read_parquet_table(parquet_of(dir, t));
  CHECK(back->schema()->Equals(*t->schema()));
  CHECK(back->Equals(*t));
  for (const auto& entry : std::filesystem::directory_iterator(dir.path())) {
    CHECK(entry.path().filename() == "t.parquet");  // no temporary left
  }
}

TEST_CASE("parquet: read_parquet_table reads the columns asked for, in that order, a missing one is a KeyError",
          "[arrow][test_tabular.py::TestParquet::test_parquet_column_selection]") {
  TempDir dir;
  const auto path = parquet_of(dir, table({{"a", array(arrow::int64(), "[1, 2]")},
                                           {"b", array(arrow::float64(), "[3, 4]")},
                                           {"c", array(arrow::int64(), "[5, 6]")}}));
  CHECK(read_parquet_table(path, std::vector<std::string>{"c", "a"})->schema()->field_names() ==
        std::vector<std::string>{"c", "a"});
  const TensorDict td = from_parquet(path, {.columns = std::vector<std::string>{"a", "c"}});
  CHECK(td.contains("a"));
  CHECK(td.contains("c"));
  CHECK(!td.contains("b"));
  CHECK(TD_MESSAGE(from_parquet(path, {.columns = std::vector<std::string>{"z"}})) ==
        "the Parquet file " + path + " has no column 'z' (its columns: 'a', 'b', 'c')");
}

TEST_CASE("parquet: a file that cannot be written is refused, naming it", "[arrow]") {
  TempDir dir;
  const auto path = (dir / "missing" / "t.parquet").string();
  const std::string message = TD_MESSAGE(write_parquet_table(*table({{"a", array(arrow::int64(), "[1]")}}), path));
  CHECK(message.rfind("cannot write " + path + ": ", 0) == 0);
}

TEST_CASE("parquet: a file that is not Parquet is refused, naming it", "[arrow]") {
  TempDir dir;
  const auto path = (dir / "bad.parquet").string();
  std::ofstream(path) << "not parquet at all";
  const std::string message = TD_MESSAGE(read_parquet_table(path));
  CHECK(message.rfind("cannot read the Parquet file " + path + ": ", 0) == 0);
  const auto missing = (dir / "missing.parquet").string();
  CHECK(TD_MESSAGE(from_parquet(missing)).rfind("cannot read the Parquet file " + missing + ": ", 0) == 0);
}

TEST_CASE("from_parquet: a file pyarrow wrote reads with the batch size [num_rows]",
          "[arrow][test_tabular.py::TestParquet::test_from_parquet][test_tabular.py::TestParquet::test_module_level_"
          "function][test_tabular.py::TestFromPandas::test_numeric_columns][test_tabular.py::TestFromPandas::test_batch_"
          "size_default]") {
  TempDir dir;
  const auto path = parquet_of(dir, table({{"a", array(arrow::int64(), "[1, 2, 3]")},
                                           {"b", array(arrow::float64(), "[4.0, 5.0, 6.0]")}}));
  const TensorDict td = from_parquet(path);
  CHECK(td.batch_size().vec() == std::vector<int64_t>{3});
  CHECK(same(td.get("a"), longs({1, 2, 3})));
  CHECK(same(td.get("b"), doubles({4, 5, 6})));
}

TEST_CASE("to_parquet then from_parquet gives the columns back",
          "[arrow][test_tabular.py::TestParquet::test_to_parquet][test_tabular.py::TestParquet::test_parquet_"
          "roundtrip][test_tabular.py::TestToPandas::test_numeric_only]") {
  TempDir dir;
  const auto path = (dir / "out.parquet").string();
  to_parquet(TensorDict({{"x", at::arange(3)}, {"y", at::zeros({3})}}, {3}), path);
  const auto written = read_parquet_table(path);
  CHECK(written->num_rows() == 3);
  CHECK(written->schema()->field_names() == std::vector<std::string>{"x", "y"});

  const TensorDict td({{"a", longs({1, 2, 3})}, {"b", doubles({4, 5, 6})}}, {3});
  to_parquet(td, path);
  const TensorDict back = from_parquet(path);
  CHECK(same(back.get("a"), td.get("a")));
  CHECK(same(back.get("b"), td.get("b")));
}

TEST_CASE("from_parquet: batch_size, auto_batch_size and device, as tensordict's keywords",
          "[arrow][test_tabular.py::TestFromPandas::test_batch_size_explicit][test_tabular.py::TestFromPandas::test_"
          "auto_batch_size][test_tabular.py::TestFromPandas::test_auto_batch_size_conflicts_batch_size][test_tabular."
          "py::TestFromPandas::test_device]") {
  TempDir dir;
  const auto path = parquet_of(dir, table({{"x", array(arrow::int64(), "[0, 1, 2, 3, 4, 5]")}}));
  CHECK(from_parquet(path, {.batch_size = std::vector<int64_t>{6}}).batch_size().vec() == std::vector<int64_t>{6});
  CHECK(from_parquet(path, {.batch_size = std::vector<int64_t>{}}).batch_size().empty());
  CHECK(from_parquet(path, {.auto_batch_size = true}).batch_size().vec() == std::vector<int64_t>{6});
  const std::string conflict =
      "Conflicting batch sizes in from_parquet: batch_size and auto_batch_size cannot be both specified.";
  CHECK(TD_MESSAGE(from_parquet(path, {.batch_size = std::vector<int64_t>{6}, .auto_batch_size = true})) == conflict);
  CHECK(TD_MESSAGE(from_parquet(path, {.batch_size = std::vector<int64_t>{6}, .batch_dims = 1})) == conflict);
  CHECK(from_parquet(path, {.device = at::Device(at::kCPU)}).device() == at::Device(at::kCPU));
}

TEST_CASE("from_parquet: a separator nests the columns, a leaf that is also a prefix is refused",
          "[arrow][test_tabular.py::TestFromPandas::test_separator_nested][test_tabular.py::TestRoundtrip::test_"
          "pandas_roundtrip_nested]") {
  TempDir dir;
  const auto path = parquet_of(dir, table({{"obs.x", array(arrow::float64(), "[1.0, 2.0]")},
                                           {"obs.y", array(arrow::float64(), "[3.0, 4.0]")},
                                           {"action", array(arrow::int64(), "[0, 1]")}}));
  const TensorDict td = from_parquet(path, {.separator = "."});
  CHECK(td.contains("obs"));
  CHECK(same(td.get({"obs", "x"}), doubles({1, 2})));
  CHECK(same(td.get({"obs", "y"}), doubles({3, 4})));
  CHECK(same(td.get("action"), longs({0, 1})));
  const auto again = (dir / "again.parquet").string();
  to_parquet(td, again, {.separator = "."});
  CHECK(read_parquet_table(again)->schema()->field_names() == std::vector<std::string>{"obs.x", "obs.y", "action"});

  const auto clash = parquet_of(
      dir, table({{"a", array(arrow::int64(), "[1]")}, {"a.b", array(arrow::int64(), "[2]")}}), "clash");
  CHECK(TD_MESSAGE(from_parquet(clash, {.separator = "."})) ==
        "Key conflict: 'a' is both a leaf and a prefix in column names");
}

TEST_CASE("from_parquet: dtype casts the numeric and boolean columns only",
          "[arrow][test_tabular.py::TestFromPandas::test_dtype_override]") {
  TempDir dir;
  const auto path = parquet_of(dir, table({{"a", array(arrow::int64(), "[1, 2, 3]")},
                                           {"b", array(arrow::float64(), "[4.0, 5.0, 6.0]")},
                                           {"s", array(arrow::utf8(), R"(["x", "y", "z"])")},
                                           {"t", array(arrow::timestamp(arrow::TimeUnit::SECOND), "[1, 2, 3]")}}));
  const TensorDict td = from_parquet(path, {.dtype = at::kFloat});
  CHECK(td.get("a").scalar_type() == at::kFloat);
  CHECK(td.get("b").scalar_type() == at::kFloat);
  CHECK(td.get("t").scalar_type() == at::kLong);
  CHECK(td.get_non_tensor("s") == Json::array({"x", "y", "z"}));
}

TEST_CASE("from_parquet: an empty file has the batch size [0]", "[arrow][test_tabular.py::TestFromPandas::test_empty_"
                                                                "dataframe]") {
  TempDir dir;
  const TensorDict td = from_parquet(
      parquet_of(dir, table({{"a", array(arrow::int64(), "[]")}, {"b", array(arrow::float64(), "[]")}})));
  CHECK(td.batch_size().vec() == std::vector<int64_t>{0});
}

TEST_CASE("from_parquet: strings are a non-tensor stack, booleans a bool tensor",
          "[arrow][test_tabular.py::TestFromPandas::test_string_columns][test_tabular.py::TestFromPandas::test_bool_"
          "columns]") {
  TempDir dir;
  const TensorDict td = from_parquet(parquet_of(dir, table({{"name", array(arrow::utf8(), R"(["alice", "bob", "charlie"])")},
                                                            {"age", array(arrow::int64(), "[25, 30, 35]")},
                                                            {"flag", array(arrow::boolean(), "[true, false, true]")}})));
  CHECK(td.batch_size().vec() == std::vector<int64_t>{3});
  CHECK(td.get("age").scalar_type() == at::kLong);
  CHECK(td.get_non_tensor("name") == Json::array({"alice", "bob", "charlie"}));
  CHECK(same(td.get("flag"), td_test::mask({1, 0, 1})));
}

TEST_CASE("from_parquet: nulls, timestamps, tensor columns and lists follow tensordict's tabular rules", "[arrow]") {
  TempDir dir;
  const auto t = table(
      {{"i", array(arrow::int32(), "[1, null, 3]")},
       {"f", array(arrow::float32(), "[1.5, null, 3]")},
       {"b", array(arrow::boolean(), "[true, null, false]")},
       {"ts", array(arrow::timestamp(arrow::TimeUnit::MILLI), "[1, null, 3]")},
       {"image", td_test::tensor_array(arrow::int16(), {2}, {}, "[[1, 2], [3, 4], [5, 6]]")},
       {"pair", array(arrow::fixed_size_list(arrow::int32(), 2), "[[1, 2], [3, 4], [5, 6]]")},
       {"floats", array(arrow::list(arrow::float64()), "[[0.5], [1.5], [2.5]]")},
       {"ragged", array(arrow::list(arrow::int64()), "[[1, 2], [3], []]")},
       {"st", array(arrow::struct_({arrow::field("x", arrow::int64())}), R"([{"x": 1}, {"x": 2}, null])")}});
  const TensorDict td = from_parquet(parquet_of(dir, t));
  const at::Tensor i = td.get("i");
  CHECK(i.scalar_type() == at::kDouble);
  CHECK(std::isnan(i[1].item<double>()));
  CHECK(i[2].item<double>() == 3.0);
  CHECK(td.get("f").scalar_type() == at::kFloat);
  CHECK(std::isnan(td.get("f")[1].item<float>()));
  CHECK(td.get_non_tensor("b") == Json::array({true, nullptr, false}));
  CHECK(same(td.get("ts"), longs({1000000, std::numeric_limits<int64_t>::min(), 3000000})));
  CHECK(same(td.get("image"), longs({1, 2, 3, 4, 5, 6}).to(at::kShort).reshape({3, 2})));
  CHECK(same(td.get("pair"), longs({1, 2, 3, 4, 5, 6}).reshape({3, 2})));  // int64, as torch.tensor infers
  CHECK(same(td.get("floats"), at::tensor({0.5f, 1.5f, 2.5f}).reshape({3, 1})));  // float32, torch's default
  CHECK(td.get_non_tensor("ragged") == Json::parse("[[1, 2], [3], []]"));
  CHECK(td.get_non_tensor("st") == Json::parse(R"([{"x": 1}, {"x": 2}, null])"));
}

TEST_CASE("to_parquet: nested entries need a separator, tensors must be 1-D, values of one type per column",
          "[arrow][test_tabular.py::TestToPandas::test_nested_without_separator_raises][test_tabular.py::TestToPandas::"
          "test_multidim_tensor_raises][test_tabular.py::TestToPandas::test_nested_with_separator]") {
  TempDir dir;
  const auto path = (dir / "x.parquet").string();
  const TensorDict nested({{"nested", TensorDict({{"x", at::ones({2})}}, {2})}}, {2});
  CHECK(TD_MESSAGE(to_parquet(nested, path)) ==
        "Nested TensorDict at key 'nested' requires a separator parameter to flatten to DataFrame columns. Use "
        "to_pandas(separator='.').");
  CHECK(TD_MESSAGE(to_parquet(TensorDict({{"matrix", at::ones({3, 4})}}, {3}), path)) ==
        "Cannot convert tensor with shape torch.Size([3, 4]) at key 'matrix' to a single DataFrame column. Only 1D "
        "tensors (matching the batch size) are supported.");
  TensorDict mixed({{"x", iota({2})}}, {2});
  mixed.set("v", NonTensorData::stack({"a", 1}, {2}));
  CHECK(TD_MESSAGE(to_parquet(mixed, path)) ==
        "to_parquet cannot convert the non-tensor entry at 'v': its values are str and int, which no one Arrow type "
        "holds");
  TensorDict unbatched({{"a", iota({2})}, {"b", iota({3})}}, {});
  CHECK(TD_MESSAGE(to_parquet(unbatched, path)) == "to_parquet: the column 'b' has 3 rows, the column 'a' 2");
  TensorDict no_rows({{"a", iota({2})}}, {});
  no_rows.set_non_tensor("v", "x");
  CHECK(TD_MESSAGE(to_parquet(no_rows, path)) ==
        "Cannot convert the non-tensor entry at key 'v' to a single DataFrame column: its tensordict has the batch "
        "size torch.Size([]), not one batch dimension.");
  CHECK(!std::filesystem::exists(path));

  TensorDict obs({{NestedKey({"obs", "x"}), at::ones({2})}, {NestedKey({"obs", "y"}), at::zeros({2})},
                  {"action", longs({0, 1})}},
                 {2});
  obs.set("label", NonTensorData::stack({"l", "r"}, {2}));
  to_parquet(obs, path, {.separator = "."});
  const auto written = read_parquet_table(path);
  CHECK(written->schema()->field_names() == std::vector<std::string>{"obs.x", "obs.y", "action", "label"});
  CHECK(from_parquet(path).get_non_tensor("label") == Json::array({"l", "r"}));
}
