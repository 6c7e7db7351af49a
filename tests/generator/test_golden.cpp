// Golden tests: every schema under schemas/ renders byte for byte to
// golden/<name>.tc.h. Regenerate with TC_UPDATE_GOLDEN=1 (see README.md).
#include <catch2/catch.hpp>

#include <cstdlib>

#include "common.h"
#include "tcgen/driver.h"
#include "tcgen/emitter.h"
#include "tcgen/python_emitter.h"

namespace fs = std::filesystem;

namespace {

std::string render(const std::string& schema) {
  auto loaded = tcgen::load_schema(schema, {});
  return tcgen::emit_header(loaded.schema, {});
}

std::string render_python(const std::string& schema) {
  auto loaded = tcgen::load_schema(schema, {});
  return tcgen::emit_python(loaded.schema, {});
}

}  // namespace

TEST_CASE("generated headers match the golden files", "[golden]") {
  const char* update = std::getenv("TC_UPDATE_GOLDEN");
  const bool updating = update && std::string(update) == "1";
  const std::string names[] = {"common.yaml", "rollout.yaml", "agent.yaml", "agent_header.h", "misc.yaml",
                               "literals.yaml", "stack.yaml"};
  for (const auto& name : names) {
    // agent_header's Python module is agent's (test_equivalence.cpp).
    for (const bool python : {false, name != "agent_header.h"}) {
    DYNAMIC_SECTION(name << (python ? " (python)" : "")) {
      const fs::path schema = fs::path(tcgen_test::test_dir()) / "schemas" / name;
      // Python goldens: <stem>.py (the module's own path is in the IR tests).
      const fs::path golden = fs::path(tcgen_test::test_dir()) / "golden" /
                              (python ? fs::path(name).stem().string() + ".py" : tcgen::output_name(name));
      std::string text;
      try {
        text = python ? render_python(schema.string()) : render(schema.string());
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
}

TEST_CASE("Python modules go to their package's __init__.py", "[golden]") {
  const fs::path dir = fs::path(tcgen_test::test_dir()) / "schemas";
  CHECK(tcgen::python_output_name(tcgen::load_schema((dir / "rollout.yaml").string(), {}).schema) ==
        "rl/types/__init__.py");
  CHECK(tcgen::python_output_name(tcgen::load_schema((dir / "misc.yaml").string(), {}).schema) ==
        "tc/test/misc/__init__.py");
}

TEST_CASE("Python: imported classes are imported from their module", "[golden]") {
  const std::string text =
      render_python((fs::path(tcgen_test::test_dir()) / "schemas" / "rollout.yaml").string());
  CHECK(text.find("from rl.common import Agent\n") != std::string::npos);
  CHECK(text.find("class Goal:") < text.find("class Observation:"));
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
