// Golden tests: every schema under schemas/ renders byte for byte to
// golden/<name>.tc.h. Regenerate with TC_UPDATE_GOLDEN=1 (see README.md).
#include <catch2/catch.hpp>

#include <cstdlib>

#include "common.h"
#include "tcgen/driver.h"
#include "tcgen/emitter.h"

namespace fs = std::filesystem;

namespace {

std::string render(const std::string& schema) {
  auto loaded = tcgen::load_schema(schema, {});
  return tcgen::emit_header(loaded.schema, {});
}

}  // namespace

TEST_CASE("generated headers match the golden files", "[golden]") {
  const char* update = std::getenv("TC_UPDATE_GOLDEN");
  const bool updating = update && std::string(update) == "1";
  const std::string names[] = {"common.yaml", "rollout.yaml", "agent.yaml", "agent_header.h", "misc.yaml"};
  for (const auto& name : names) {
    DYNAMIC_SECTION(name) {
      const fs::path schema = fs::path(tcgen_test::test_dir()) / "schemas" / name;
      const fs::path golden = fs::path(tcgen_test::test_dir()) / "golden" / tcgen::output_name(name);
      std::string text;
      try {
        text = render(schema.string());
      } catch (const tcgen::Error& e) {
        FAIL(e.what());
      }
      if (updating) {
        tcgen_test::write_file(golden, text);
        WARN("updated " << golden.string());
      } else {
        REQUIRE(fs::exists(golden));
        CHECK(text == tcgen_test::read_file(golden));
      }
    }
  }
}

TEST_CASE("rendering is deterministic", "[golden]") {
  const auto schema = (fs::path(tcgen_test::test_dir()) / "schemas" / "rollout.yaml").string();
  CHECK(render(schema) == render(schema));
}

TEST_CASE("templates option: a template directory gives the same output as the embedded template", "[golden]") {
  const auto schema = (fs::path(tcgen_test::test_dir()) / "schemas" / "rollout.yaml").string();
  auto loaded = tcgen::load_schema(schema, {});
  tcgen::EmitOptions from_dir;
  from_dir.templates_dir = (fs::path(tcgen_test::test_dir()) / ".." / ".." / "templates").string();
  CHECK(tcgen::emit_header(loaded.schema, from_dir) == tcgen::emit_header(loaded.schema, {}));
}

TEST_CASE("nested classes are emitted before their users", "[golden]") {
  const auto schema = (fs::path(tcgen_test::test_dir()) / "schemas" / "rollout.yaml").string();
  const std::string text = render(schema);
  CHECK(text.find("struct Goal :") < text.find("struct Observation :"));
  CHECK(text.find("FieldTable<::rl::Goal>") < text.find("FieldTable<::rl::Observation>"));
}
