// The C++ side of run_arrow.py. Each command prints the canonical JSON
// (canonical.h) of the tensordict it read or built; an error prints its
// message on stderr and exits with 1.
//   arrow_tool from-arrow <in> <out> <raise|fill|mask>
//       from_arrow(read_parquet_table(in), nulls), then
//       write_parquet_table(to_arrow(it), out) (not for an out of "-")
//   arrow_tool from-parquet <in> [separator]    from_parquet(in, {.separator})
//   arrow_tool write-arrow <out>                the "cpp_arrow" case built here, to_arrow, written to out
//   arrow_tool to-parquet <out>                 the "cpp_tabular" case built here, to_parquet(out, {.separator = "."})
#include <tensordict/arrow.h>
#include <nlohmann/json.hpp>
#include <tensordict/tensordict.h>

#include <iostream>
#include <string>

#include "canonical.h"

using namespace tensordict;

namespace {

ArrowNulls nulls_of(const std::string& name) {
  if (name == "fill") return ArrowNulls::Fill;
  if (name == "mask") return ArrowNulls::Mask;
  return ArrowNulls::Raise;
}

// run_arrow.py's cpp_arrow(): every rule of to_arrow.
TensorDict cpp_arrow() {
  TensorDict td({{"x", at::tensor({1.5f, -2.f})},
                 {"image", at::arange(24, at::kInt).reshape({2, 3, 4})},
                 {"seq", at::_nested_tensor_from_tensor_list(
                             std::vector<at::Tensor>{at::arange(6, at::kDouble).reshape({3, 2}),
                                                     at::arange(2, at::kDouble).reshape({1, 2}) + 10})},
                 {"done", at::arange(2, at::kLong).to(at::kBool)},
                 {NestedKey({"obs", "y"}), at::arange(2, at::kLong) * 7},
                 {NestedKey({"obs", "h"}), at::arange(2, at::kHalf)}},
                {2});
  td.set({"obs", "label"}, NonTensorData::stack({"left", "right"}, {2}));
  td.set_non_tensor("task", "walk");
  td.set("meta", NonTensorData::stack({Json{{"seed", 1}, {"tags", {"a"}}}, Json{{"seed", 2}, {"tags", Json::array()}}}, {2}));
  return td;
}

// run_arrow.py's cpp_tabular(): one column per leaf, nested through ".".
TensorDict cpp_tabular() {
  TensorDict td({{"a", at::arange(3, at::kLong)},
                 {"b", at::arange(3, at::kDouble) / 4},
                 {NestedKey({"obs", "x"}), at::arange(3, at::kFloat) - 1},
                 {"flag", at::arange(3, at::kLong).remainder(2).to(at::kBool)}},
                {3});
  td.set("label", NonTensorData::stack({"u", "v", "w"}, {3}));
  return td;
}

}  // namespace

int main(int argc, char** argv) {
  try {
    const std::string command = argc > 1 ? argv[1] : "";
    TensorDict td;
    if (command == "from-arrow" && argc == 5) {
      td = from_arrow(*read_parquet_table(argv[2]), {.nulls = nulls_of(argv[4])});
      if (std::string(argv[3]) != "-") write_parquet_table(*to_arrow(td), argv[3]);
    } else if (command == "from-parquet" && (argc == 3 || argc == 4)) {
      FromParquetOptions options;
      if (argc == 4) options.separator = argv[3];
      td = from_parquet(argv[2], options);
    } else if (command == "write-arrow" && argc == 3) {
      td = cpp_arrow();
      write_parquet_table(*to_arrow(td), argv[2]);
    } else if (command == "to-parquet" && argc == 3) {
      td = cpp_tabular();
      to_parquet(td, argv[2], {.separator = "."});
    } else {
      std::cerr << "usage: arrow_tool from-arrow <in> <out> <raise|fill|mask> | from-parquet <in> [separator] | "
                   "write-arrow <out> | to-parquet <out>\n";
      return 2;
    }
    std::cout << interop::canonical(td).dump() << "\n";
  } catch (const std::exception& e) {
    std::cerr << e.what() << "\n";
    return 1;
  }
  return 0;
}
