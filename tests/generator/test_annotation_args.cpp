// The annotation argument parser: grammar, errors with offsets, robustness.
#include <catch2/catch.hpp>

#include <random>

#include "tcgen/annotation_args.h"

using tcgen::AnnotationArg;
using tcgen::AnnotationParseError;
using tcgen::parse_annotation_args;

namespace {

std::vector<AnnotationArg> ok(std::string_view text) {
  auto r = parse_annotation_args(text);
  if (auto* e = std::get_if<AnnotationParseError>(&r)) FAIL("unexpected error: " << e->message);
  return std::get<std::vector<AnnotationArg>>(r);
}

AnnotationParseError err(std::string_view text) {
  auto r = parse_annotation_args(text);
  REQUIRE(std::holds_alternative<AnnotationParseError>(r));
  return std::get<AnnotationParseError>(r);
}

}  // namespace

TEST_CASE("annotation args: strings, integers and flags", "[annotation]") {
  CHECK(ok("").empty());
  CHECK(ok("   ").empty());
  auto a = ok(R"(dtype = "uint8", shape = "..., 3, H, W", optional)");
  REQUIRE(a.size() == 3);
  CHECK(a[0].key == "dtype");
  CHECK(a[0].value == AnnotationArg::Value::String);
  CHECK(a[0].string_value == "uint8");
  CHECK(a[1].string_value == "..., 3, H, W");
  CHECK(a[2].key == "optional");
  CHECK(a[2].value == AnnotationArg::Value::Flag);

  auto b = ok("n=-42,m = 9223372036854775807 , k=-9223372036854775808");
  REQUIRE(b.size() == 3);
  CHECK(b[0].value == AnnotationArg::Value::Integer);
  CHECK(b[0].int_value == -42);
  CHECK(b[1].int_value == INT64_MAX);
  CHECK(b[2].int_value == INT64_MIN);

  auto c = ok(R"(doc = "say \"hi\"\\ \n")");
  CHECK(c[0].string_value == "say \"hi\"\\ \n");
}

TEST_CASE("annotation args: errors carry offsets", "[annotation]") {
  CHECK(err(R"(dtype "x")").offset == 6);
  CHECK(err("dtype =").message == "expected a value for 'dtype' after '='");
  CHECK(err("dtype = x").message == "expected a string or an integer for 'dtype', found 'x'");
  CHECK(err(R"(dtype = "abc)").message == "unterminated string for 'dtype'");
  CHECK(err(R"(dtype = "abc)").offset == 8);
  CHECK(err("a,").message == "expected an argument after ','");
  CHECK(err(",a").message == "expected an argument name, found ','");
  CHECK(err("n = 99999999999999999999").message == "integer out of range for 'n'");
  CHECK(err("n = 9223372036854775808").message == "integer out of range for 'n'");
  CHECK(err("n = 12abc").message == "invalid integer for 'n'");
  CHECK(err("n = -").message == "expected digits after '-' for 'n'");
  CHECK(err(R"(d = "\q")").message == "unknown escape sequence '\\q' in string for 'd'");
  CHECK(err("a b").message == "expected ',' or end of arguments, found 'b'");
  CHECK(err("a \x01").message == "expected ',' or end of arguments, found byte 0x01");
}

TEST_CASE("annotation args: random input never crashes", "[annotation]") {
  std::mt19937 rng(12345);
  const std::string alphabet = "ab_=,\" \\-0123456789\n\x7f\xff";
  for (int i = 0; i < 20000; ++i) {
    std::string s(rng() % 24, ' ');
    for (auto& ch : s) ch = alphabet[rng() % alphabet.size()];
    auto r = parse_annotation_args(s);
    if (auto* e = std::get_if<AnnotationParseError>(&r)) {
      CHECK(e->offset <= s.size());
      CHECK(!e->message.empty());
    }
  }
}
