// The C++ side of run_safetensors.py:
//   safetensors_tool roundtrip <in> <out>   from_safetensors(in), to_safetensors(out)
//   safetensors_tool write <out>            the "nested" case built here (run_safetensors.py builds it too)
#include <tensordict/safetensors.h>
#include <nlohmann/json.hpp>
#include <tensordict/tensordict.h>

#include <iostream>
#include <string>

using namespace tensordict;

int main(int argc, char** argv) {
  try {
    const std::string command = argc > 1 ? argv[1] : "";
    if (command == "roundtrip" && argc == 4) {
      to_safetensors(from_safetensors(argv[2]), argv[3]);
    } else if (command == "write" && argc == 3) {
      // obs = arange(6).reshape(2, 3) float32, ("next", "reward") = arange(2)
      // float64 [2, 1], ("next", "done") = [False, True], names ["env"],
      // task "swing", ("next", "meta") = {"seed": 3, "tags": ["a", "é"], "lr": 1e-05}.
      TensorDict td({{"obs", at::arange(6, at::kFloat).reshape({2, 3})},
                     {NestedKey({"next", "reward"}), at::arange(2, at::kDouble).reshape({2, 1})},
                     {NestedKey({"next", "done"}), at::arange(2, at::kLong).to(at::kBool)}},
                    {2}, std::nullopt, {"env"});
      td.set_non_tensor("task", "swing");
      td.set_non_tensor({"next", "meta"}, Json{{"seed", 3}, {"tags", {"a", "\xc3\xa9"}}, {"lr", 1e-05}});
      to_safetensors(td, argv[2]);
    } else {
      std::cerr << "usage: safetensors_tool roundtrip <in> <out> | write <out>\n";
      return 2;
    }
  } catch (const std::exception& e) {
    std::cerr << "safetensors_tool: " << e.what() << "\n";
    return 1;
  }
  return 0;
}
