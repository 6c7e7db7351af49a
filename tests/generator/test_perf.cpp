// Performance sanity: prints timings, asserts nothing about them.
#include <catch2/catch.hpp>

#include <chrono>
#include <iostream>

#include "common.h"
#include "tcgen/driver.h"
#include "tcgen/emitter.h"

namespace fs = std::filesystem;

namespace {

template <class F>
double seconds(F&& f) {
  const auto t0 = std::chrono::steady_clock::now();
  f();
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

}  // namespace

TEST_CASE("timing: 20-class YAML schema and one annotated header", "[perf]") {
  const auto dir = tcgen_test::scratch_dir("perf");
  std::string yaml = "namespace: perf\ntensorclasses:\n";
  for (int i = 0; i < 20; ++i) {
    yaml += "  C" + std::to_string(i) + ":\n    batch: [env]\n    fields:\n";
    for (int f = 0; f < 8; ++f)
      yaml += "      t" + std::to_string(f) + ": {dtype: float32, shape: [..., " + std::to_string(f + 1) + ", H]}\n";
    yaml += "      label: {type: string, default: x}\n";
    if (i > 0) yaml += "      prev: {type: C" + std::to_string(i - 1) + "}\n";
  }
  tcgen_test::write_file(dir / "twenty.yaml", yaml);

  std::string text;
  const double t_yaml = seconds([&] {
    auto s = tcgen::load_schema((dir / "twenty.yaml").string(), {});
    text = tcgen::emit_header(s.schema, {});
  });
  CHECK(text.find("FieldTable<::perf::C19>") != std::string::npos);

  const auto header = (fs::path(tcgen_test::test_dir()) / "schemas" / "agent_header.h").string();
  const double t_header = seconds([&] {
    auto s = tcgen::load_schema(header, {});
    text = tcgen::emit_header(s.schema, {});
  });
  std::cout << "[perf] 20-class YAML (180 fields): " << t_yaml * 1000 << " ms; annotated header: " << t_header * 1000
            << " ms\n";
}
