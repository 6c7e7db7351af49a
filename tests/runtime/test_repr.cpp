// tensordict's repr, byte for byte.
#include <fmt/format.h>

#include <sstream>

#include "helpers.h"

using namespace tensordict;
using namespace td_test;

// Verbatim from tensordict's documentation of TensorDict.from_dict (the
// nested example: {"a": torch.randn(3), "b": {"c": torch.randn(3, 4)}}).
static const char* kNestedRepr = R"(TensorDict(
    fields={
        a: Tensor(shape=torch.Size([3]), device=cpu, dtype=torch.float32, is_shared=False),
        b: TensorDict(
            fields={
                c: Tensor(shape=torch.Size([3, 4]), device=cpu, dtype=torch.float32, is_shared=False)},
            batch_size=torch.Size([3, 4]),
            device=None,
            is_shared=False)},
    batch_size=torch.Size([3]),
    device=None,
    is_shared=False))";

TEST_CASE("the repr of a nested TensorDict matches tensordict's") {
  // Inserted in reverse order: fields print sorted, as tensordict sorts them.
  TensorDict td({{"b", TensorDict({{"c", at::randn({3, 4})}}, {3, 4})}, {"a", at::randn({3})}}, {3});
  REQUIRE(repr(td) == kNestedRepr);
  std::ostringstream os;
  os << td;
  REQUIRE(os.str() == kNestedRepr);
  REQUIRE(fmt::format("{}", td) == kNestedRepr);
  REQUIRE(fmt::format("{}", TensorDict(td)) == kNestedRepr);
}

TEST_CASE("repr of an empty tensordict, a device and other dtypes") {
  REQUIRE(repr(TensorDict()) ==
          "TensorDict(\n    fields={\n    },\n    batch_size=torch.Size([]),\n    device=None,\n    is_shared=False)");
  TensorDict td({{"mask", at::zeros({2}, at::kBool)}, {"idx", at::zeros({2, 1}, at::kLong)}}, {2}, at::Device(at::kCPU));
  REQUIRE(repr(td) ==
          "TensorDict(\n"
          "    fields={\n"
          "        idx: Tensor(shape=torch.Size([2, 1]), device=cpu, dtype=torch.int64, is_shared=False),\n"
          "        mask: Tensor(shape=torch.Size([2]), device=cpu, dtype=torch.bool, is_shared=False)},\n"
          "    batch_size=torch.Size([2]),\n"
          "    device=cpu,\n"
          "    is_shared=False)");
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
