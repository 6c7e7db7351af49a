// The YAML and annotated-header forms of one schema give the same IR and the
// same FieldTable code.
#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

#include "common.h"
#include "tcgen/driver.h"
#include "tcgen/emitter.h"
#include "tcgen/ir_json.h"
#include "tcgen/python_emitter.h"

namespace fs = std::filesystem;

namespace {

// From the first table to the extern templates, whose comment names the
// output file (which differs: agent.tc.cpp, agent_header.tc.cpp).
std::string field_tables(const std::string& header) {
  const auto pos = header.find("template <>");
  const auto end = header.find("\n// The typed engine of these classes");
  REQUIRE(pos != std::string::npos);
  REQUIRE(end != std::string::npos);
  return header.substr(pos, end - pos);
}

}  // namespace

TEST_CASE("YAML and header frontends give identical IR and field tables", "[equivalence]") {
  const fs::path dir = fs::path(tcgen_test::test_dir()) / "schemas";
  auto yaml = tcgen::load_schema((dir / "agent.yaml").string(), {});
  auto header = tcgen::load_schema((dir / "agent_header.h").string(), {});

  const auto yj = tcgen::to_json(yaml.schema, false);
  const auto hj = tcgen::to_json(header.schema, false);
  CHECK(yj.dump(2) == hj.dump(2));

  const std::string yh = tcgen::emit_header(yaml.schema, {});
  const std::string hh = tcgen::emit_header(header.schema, {});
  CHECK(field_tables(yh) == field_tables(hh));
  // The YAML form emits the structs, the header form only the tables.
  CHECK(yh.find("struct Observation :") != std::string::npos);
  CHECK(hh.find("struct Observation :") == std::string::npos);
  CHECK(hh.find("#include \"agent_header.h\"") != std::string::npos);
}

TEST_CASE("YAML and header frontends give the same Python module", "[equivalence]") {
  const fs::path dir = fs::path(tcgen_test::test_dir()) / "schemas";
  const std::string from_yaml =
      tcgen::emit_python(tcgen::load_schema((dir / "agent.yaml").string(), {}).schema, {}).front().text;
  std::string from_header =
      tcgen::emit_python(tcgen::load_schema((dir / "agent_header.h").string(), {}).schema, {}).front().text;
  // Only the source's name differs.
  for (auto at = from_header.find("agent_header.h"); at != std::string::npos; at = from_header.find("agent_header.h"))
    from_header.replace(at, 14, "agent.yaml");
  CHECK(from_yaml == from_header);
  CHECK(from_yaml.find("class Observation:") != std::string::npos);
}

TEST_CASE("YAML and header frontends read NonTensorStack fields alike", "[equivalence]") {
  const fs::path dir = fs::path(tcgen_test::test_dir()) / "schemas";
  auto yaml = tcgen::load_schema((dir / "stack.yaml").string(), {});
  auto header = tcgen::load_schema((dir / "stack_header.h").string(), {});
  const auto yj = tcgen::to_json(yaml.schema, false);
  CHECK(yj.dump(2) == tcgen::to_json(header.schema, false).dump(2));
  CHECK(yj["classes"][0]["fields"][1]["kind"] == "NonTensorStack");
  CHECK(yj["classes"][0]["fields"][1]["value_type"] == "String");
  CHECK(yj["classes"][0]["fields"][2]["value_type"] == "Int");
  CHECK(field_tables(tcgen::emit_header(yaml.schema, {})) == field_tables(tcgen::emit_header(header.schema, {})));
}

TEST_CASE("IR JSON with locations points at the declarations", "[equivalence]") {
  const fs::path dir = fs::path(tcgen_test::test_dir()) / "schemas";
  auto yaml = tcgen::load_schema((dir / "agent.yaml").string(), {});
  const auto j = tcgen::to_json(yaml.schema, true);
  CHECK(j["classes"][1]["name"] == "Observation");
  CHECK(j["classes"][1]["location"]["line"] == 8);
  CHECK(j["classes"][1]["fields"][0]["location"]["line"] == 12);
  CHECK(j["classes"][1]["fields"][0]["location"]["col"] == 7);
  auto header = tcgen::load_schema((dir / "agent_header.h").string(), {});
  const auto hj = tcgen::to_json(header.schema, true);
  CHECK(hj["classes"][1]["fields"][0]["location"]["line"] == 23);
}

TEST_CASE("header frontend: a nested tensorclass from another header", "[equivalence]") {
  const auto dir = tcgen_test::scratch_dir("hdr_nested");
  tcgen_test::write_file(dir / "inc" / "agent_only.h",
                         "#pragma once\n#include <tensordict/annotations.h>\n#include <tensordict/tensorclass.h>\n"
                         "namespace rl::core {\nstruct TC_TENSORCLASS() Agent : tensordict::TensorClass<Agent> {\n"
                         "  at::Tensor pos;\n};\n}\n");
  tcgen_test::write_file(dir / "obs.h",
                         "#pragma once\n#include <agent_only.h>\n"
                         "namespace rl {\nstruct TC_TENSORCLASS() Obs : tensordict::TensorClass<Obs> {\n"
                         "  core::Agent agent;\n};\n}\n");
  tcgen::HeaderOptions opts;
  opts.include_dirs.push_back((dir / "inc").string());
  auto loaded = tcgen::load_schema((dir / "obs.h").string(), opts);
  REQUIRE(loaded.schema.classes.size() == 1);  // Agent belongs to agent_only.h
  const auto& f = loaded.schema.classes[0].fields[0];
  CHECK(f.kind == tcgen::FieldKind::TensorClass);
  CHECK(f.type_cpp == "rl::core::Agent");
  const std::string text = tcgen::emit_header(loaded.schema, {});
  CHECK(text.find("#include \"obs.h\"\n#include \"agent_only.tc.h\"\n") != std::string::npos);
  CHECK(text.find(".type_name = \"rl::core::Agent\"") != std::string::npos);
  CHECK(loaded.dependencies.size() == 2);
}

// The runtime accepts TensorClass<Self> anywhere among the bases (is_base_of),
// so the frontend looks through bases, class templates included (the bad/
// files show what it refuses).
TEST_CASE("header frontend: TensorClass<Self> through a class template base", "[equivalence]") {
  const auto dir = tcgen_test::scratch_dir("hdr_mixin");
  tcgen_test::write_file(dir / "mixin.h",
                         "#pragma once\n#include <tensordict/annotations.h>\n#include <tensordict/tensorclass.h>\n"
                         "namespace rl {\n"
                         "template <class T> struct Mixin : tensordict::TensorClass<T> {};\n"
                         "template <class A, int N, class U> struct Outer : Mixin<U> {};\n"
                         "struct TC_TENSORCLASS() Obs : Outer<int, 3, Obs> {\n  at::Tensor x;\n};\n}\n");
  auto loaded = tcgen::load_schema((dir / "mixin.h").string(), {});
  REQUIRE(loaded.schema.classes.size() == 1);
  CHECK(loaded.schema.classes[0].name == "Obs");
}

// The stand-in headers declare init_'s argument types, which a header's own
// constructor takes (tests/tensorclass/schemas/tc_header.h does, for real).
TEST_CASE("header frontend: a constructor taking init_'s argument types", "[equivalence]") {
  const auto dir = tcgen_test::scratch_dir("hdr_ctor");
  tcgen_test::write_file(dir / "ctor.h",
                         "#pragma once\n#include <tensordict/annotations.h>\n#include <tensordict/tensorclass.h>\n"
                         "namespace rl {\n"
                         "struct TC_TENSORCLASS() Obs : tensordict::TensorClass<Obs> {\n  at::Tensor x;\n"
                         "  Obs() = default;\n"
                         "  Obs(at::Tensor x, tensordict::BatchSizeArg batch_size, tensordict::DeviceArg device = {},\n"
                         "      tensordict::Names names = {});\n"
                         "  Obs(at::Tensor x, at::Device device);\n};\n}\n");
  auto loaded = tcgen::load_schema((dir / "ctor.h").string(), {});
  REQUIRE(loaded.schema.classes.size() == 1);
  CHECK(loaded.schema.classes[0].fields.size() == 1);
}

TEST_CASE("YAML and header frontends give the same TypedTensorDict module (python_form)", "[equivalence]") {
  const fs::path dir = fs::path(tcgen_test::test_dir()) / "schemas";
  auto yaml = tcgen::load_schema((dir / "typed.yaml").string(), {});
  auto header = tcgen::load_schema((dir / "typed_header.h").string(), {});
  CHECK(yaml.schema.python_form == tcgen::PythonForm::TypedTensorDict);
  CHECK(header.schema.python_form == tcgen::PythonForm::TypedTensorDict);
  const std::string from_yaml = tcgen::emit_python(yaml.schema, {}).front().text;
  std::string from_header = tcgen::emit_python(header.schema, {}).front().text;
  for (auto at = from_header.find("typed_header.h"); at != std::string::npos; at = from_header.find("typed_header.h"))
    from_header.replace(at, 14, "typed.yaml");
  CHECK(from_yaml == from_header);
  CHECK(from_yaml.find("class Step(_TypedTensorDict):") != std::string::npos);
  // The nested Agent's header says python_form both: imported from its typed submodule.
  CHECK(from_header.find("from tct.typed.common.typed import Agent\n") != std::string::npos);
}
