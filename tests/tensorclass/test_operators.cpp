// The reflected, bitwise and remainder operators and their methods on
// generated classes: each result is the dynamic TensorDict's on the
// class's tensordict form, retyped (tensordict 0.15.3's values, as in
// tests/runtime/test_operators.cpp).
#include <ATen/ATen.h>
#include <catch2/catch.hpp>
#include <tensordict/tensordict.h>

#include <vector>

#include "tc_ops.tc.h"

using tct::ops::Bits;
using tct::ops::Flags;
using tct::ops::Num;

namespace {

std::vector<double> values(const at::Tensor& t) {
  const at::Tensor d = t.to(at::kDouble).contiguous();
  return {d.data_ptr<double>(), d.data_ptr<double>() + d.numel()};
}
Num num() {
  return Num({.a = at::tensor({1.f, 2.f, 3.f, 4.f, -5.f, 6.f}).view({3, 2}), .c = at::tensor({1, 2, -3}, at::kLong)},
             {3});
}
Bits bits() { return Bits({.x = at::tensor({1, 2, 3, 12}, at::kLong)}, {4}); }
Flags flags() { return Flags({.m = at::tensor(std::vector<uint8_t>{1, 0, 1, 0}).to(at::kBool)}, {4}); }

}  // namespace

TEST_CASE("a scalar or tensor on the left of a generated class (test_misc.py::TestGeneric::test_r_ops)",
          "[tensorclass][operators]") {
  const Num n = num();
  const Num r = 1 - n;
  CHECK(values(r.a) == std::vector<double>{0, -1, -2, -3, 6, -5});
  CHECK(values(r.c) == std::vector<double>{0, -1, 4});
  CHECK(values((2 * n).a) == std::vector<double>{2, 4, 6, 8, -10, 12});
  CHECK(values(n.rsub(1, 2).a) == std::vector<double>{-1, -3, -5, -7, 11, -11});
  // A float on the left makes c float: the schema's int64 refuses it, naming
  // the field (tensordict's tensorclass has no dtypes to keep).
  CHECK_THROWS_WITH(0.5 + n, "add: Num.c would be float32, but the schema declares int64 (to_tensordict() gives a "
                             "TensorDict free of the schema's dtypes)");
  CHECK_THROWS_WITH(at::tensor({10.f, 20.f, 30.f}) - n, Catch::Matchers::Contains("Num.c would be float32"));
  CHECK_THROWS_WITH(1 / n, Catch::Matchers::Contains("Num.c would be float32"));
  const Num floats = Num::from_tensordict(n.to_tensordict());
  CHECK(values((at::tensor({10.f, 20.f, 30.f}) - floats.to_tensordict()).get("a")) ==
        std::vector<double>{9, 8, 17, 16, 35, 24});
  CHECK(values((n % 3).a) == std::vector<double>{1, 2, 0, 1, 1, 0});
  CHECK(values((n % 3).c) == std::vector<double>{1, 2, 0});
  CHECK(values(n.mod(n).a) == std::vector<double>{0, 0, 0, 0, 0, 0});
  CHECK(n.param_count() == 9);
}

TEST_CASE("&, |, ^, ~ on a generated class's integer and bool fields (test_misc.py::TestGeneric::test_builtins)",
          "[tensorclass][operators]") {
  const Bits b = bits();
  CHECK(values((b & 6).x) == std::vector<double>{0, 2, 2, 4});
  CHECK(values((6 & b).x) == std::vector<double>{0, 2, 2, 4});
  CHECK(values((b | 1).x) == std::vector<double>{1, 3, 3, 13});
  CHECK(values((b ^ 5).x) == std::vector<double>{4, 7, 6, 9});
  CHECK(values((5 ^ b).x) == std::vector<double>{4, 7, 6, 9});
  CHECK(values((~b).x) == std::vector<double>{-2, -3, -4, -13});
  CHECK(values(b.bitwise_and(b).x) == std::vector<double>{1, 2, 3, 12});
  const tensordict::TensorDict logical = b.logical_and(b);
  CHECK(logical.get("x").scalar_type() == at::kBool);
  const Flags f = flags();
  CHECK(values((~f).m) == std::vector<double>{0, 1, 0, 1});
  CHECK(values((f & f).m) == std::vector<double>{1, 0, 1, 0});
  CHECK(values((f | ~f).m) == std::vector<double>{1, 1, 1, 1});
  CHECK(values((false ^ f).m) == std::vector<double>{1, 0, 1, 0});
  // An integer with a bool field is int64: the schema refuses it.
  CHECK_THROWS_WITH(f & 6, "&: Flags.m would be int64, but the schema declares bool (to_tensordict() gives a "
                           "TensorDict free of the schema's dtypes)");
  // ~ of a float field is libtorch's error, with the key.
  CHECK_THROWS_WITH(~num(), Catch::Matchers::Contains("'a'"));
}
