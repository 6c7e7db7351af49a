// Golden tests: every schema under schemas/ renders byte for byte to
// golden/<name>.tc.h and golden/<name>.tc.cpp. Regenerate with TC_UPDATE_GOLDEN=1 (see tests/generator/README.md).
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

std::string render_source(const std::string& schema) {
  return tcgen::emit_source(tcgen::load_schema(schema, {}).schema, {});
}

std::string render_python(const std::string& schema) {
  auto loaded = tcgen::load_schema(schema, {});
  return tcgen::emit_python(loaded.schema, {}).front().text;
}

// The modules of a schema: its Python module's, then (python_form both) the
// TypedTensorDicts'.
std::vector<tcgen::PythonModule> render_python_modules(const std::string& schema) {
  return tcgen::emit_python(tcgen::load_schema(schema, {}).schema, {});
}

}  // namespace

TEST_CASE("generated headers match the golden files", "[golden]") {
  const char* update = std::getenv("TC_UPDATE_GOLDEN");
  const bool updating = update && std::string(update) == "1";
  const std::string names[] = {"common.yaml", "rollout.yaml", "agent.yaml", "agent_header.h", "misc.yaml",
                               "literals.yaml", "stack.yaml", "typed_common.yaml", "typed.yaml"};
  for (const auto& name : names) {
    // agent_header's Python module is agent's (test_equivalence.cpp).
    for (const bool python : {false, name != "agent_header.h"}) {
    DYNAMIC_SECTION(name << (python ? " (python)" : "")) {
      const fs::path schema = fs::path(tcgen_test::test_dir()) / "schemas" / name;
      const std::string stem = fs::path(name).stem().string();
      // Python goldens: <stem>.py, and <stem>.typed.py for the TypedTensorDicts
      // beside the @tensorclasses (the modules' own paths are checked below).
      std::vector<std::pair<fs::path, std::string>> outputs;
      try {
        if (python) {
          const auto modules = render_python_modules(schema.string());
          for (std::size_t i = 0; i < modules.size(); ++i)
            outputs.emplace_back(stem + (i == 0 ? ".py" : ".typed.py"), modules[i].text);
        } else {
          outputs.emplace_back(tcgen::output_name(name), render(schema.string()));
          outputs.emplace_back(tcgen::source_output_name(name), render_source(schema.string()));
        }
      } catch (const tcgen::Error& e) {
        FAIL(e.what());
      }
      for (const auto& [file, text] : outputs) {
        const fs::path golden = fs::path(tcgen_test::test_dir()) / "golden" / file;
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
}

TEST_CASE("Python modules go to their package's __init__.py", "[golden]") {
  const fs::path dir = fs::path(tcgen_test::test_dir()) / "schemas";
  const auto paths = [&](const std::string& name, tcgen::EmitOptions options = {}) {
    std::vector<std::string> out;
    for (const auto& m : tcgen::emit_python(tcgen::load_schema((dir / name).string(), {}).schema, options))
      out.push_back(m.path);
    return out;
  };
  using Paths = std::vector<std::string>;
  CHECK(paths("rollout.yaml") == Paths{"rl/types/__init__.py"});
  CHECK(paths("misc.yaml") == Paths{"tc/test/misc/__init__.py"});
  // python_form: typed_tensordict, and both (the TypedTensorDicts in the submodule typed).
  CHECK(paths("typed.yaml") == Paths{"tct/typed/__init__.py"});
  CHECK(paths("typed_common.yaml") == Paths{"tct/typed/common/__init__.py", "tct/typed/common/typed/__init__.py"});
  // The run's form (--python-form) wins over the schema's.
  tcgen::EmitOptions both;
  both.python_form = tcgen::PythonForm::Both;
  CHECK(paths("common.yaml", both) == Paths{"rl/common/__init__.py", "rl/common/typed/__init__.py"});
  tcgen::EmitOptions tensorclass;
  tensorclass.python_form = tcgen::PythonForm::Tensorclass;
  CHECK(paths("typed_common.yaml", tensorclass) == Paths{"tct/typed/common/__init__.py"});
}

TEST_CASE("Python: a TypedTensorDict imports another schema's TypedTensorDict from where that schema puts it",
          "[golden]") {
  const fs::path dir = fs::path(tcgen_test::test_dir()) / "schemas";
  auto loaded = tcgen::load_schema((dir / "typed.yaml").string(), {});
  // typed_common.yaml says both: its TypedTensorDicts are in its module's submodule typed.
  CHECK(tcgen::emit_python(loaded.schema, {}).front().text.find("from tct.typed.common.typed import Agent\n") !=
        std::string::npos);
  // --python-form typed_tensordict makes every schema of the run, imports too, that form alone.
  tcgen::EmitOptions typed;
  typed.python_form = tcgen::PythonForm::TypedTensorDict;
  CHECK(tcgen::emit_python(loaded.schema, typed).front().text.find("from tct.typed.common import Agent\n") !=
        std::string::npos);
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
