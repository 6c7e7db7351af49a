// Every file under bad/ must fail with exactly the diagnostics listed in its
// trailing "expect:" comments ("# expect: 5:7: error: ..." in YAML,
// "// expect: ..." in headers). $FILE / $DIR stand for the file's path / its
// directory; an expectation without a line:col is "<file>: error: ...".
#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

#include <algorithm>

#include "common.h"
#include "tcgen/driver.h"

namespace fs = std::filesystem;

namespace {

std::string replace_all(std::string s, const std::string& from, const std::string& to) {
  for (std::size_t pos = 0; (pos = s.find(from, pos)) != std::string::npos; pos += to.size())
    s.replace(pos, from.size(), to);
  return s;
}

std::vector<std::string> expectations(const fs::path& file) {
  std::vector<std::string> out;
  std::istringstream in(tcgen_test::read_file(file));
  const std::string marker = "expect: ";
  for (std::string line; std::getline(in, line);) {
    if (line.rfind("# " + marker, 0) != 0 && line.rfind("// " + marker, 0) != 0) continue;
    std::string rest = line.substr(line.find(marker) + marker.size());
    rest = replace_all(rest, "$FILE", file.string());
    rest = replace_all(rest, "$DIR", file.parent_path().string());
    const bool has_pos = !rest.empty() && rest[0] >= '0' && rest[0] <= '9';
    out.push_back(file.string() + (has_pos ? ":" : ": ") + rest);
  }
  return out;
}

}  // namespace

TEST_CASE("bad schemas fail with exact file:line:col diagnostics", "[diagnostics]") {
  std::vector<fs::path> files;
  for (const auto& e : fs::directory_iterator(fs::path(tcgen_test::test_dir()) / "bad")) files.push_back(e.path());
  std::sort(files.begin(), files.end());
  REQUIRE(files.size() >= 25);
  for (const auto& file : files) {
    DYNAMIC_SECTION(file.filename().string()) {
      const auto expected = expectations(file);
      REQUIRE(!expected.empty());
      std::vector<std::string> actual;
      try {
        tcgen::load_schema(file.string(), {});
      } catch (const tcgen::Error& e) {
        for (const auto& d : e.diagnostics()) actual.push_back(d.str());
      }
      CHECK(actual == expected);
    }
  }
}

TEST_CASE("diagnostics format", "[diagnostics]") {
  tcgen::Diagnostic d{{"a.yaml", 3, 7}, tcgen::Severity::Error, "boom"};
  CHECK(d.str() == "a.yaml:3:7: error: boom");
  d.loc.line = 0;
  CHECK(d.str() == "a.yaml: error: boom");
  d.loc.file.clear();
  CHECK(d.str() == "error: boom");
}

TEST_CASE("several errors in one schema are all reported", "[diagnostics]") {
  const auto dir = tcgen_test::scratch_dir("multi");
  tcgen_test::write_file(dir / "multi.yaml",
                         "namespace: rl\n"
                         "tensorclasses:\n"
                         "  Obs:\n"
                         "    fields:\n"
                         "      a: {dtype: f32}\n"
                         "      b: {shape: [W, ...]}\n");
  std::vector<std::string> actual;
  try {
    tcgen::load_schema((dir / "multi.yaml").string(), {});
  } catch (const tcgen::Error& e) {
    for (const auto& d : e.diagnostics()) actual.push_back(d.str());
  }
  REQUIRE(actual.size() == 2);
  CHECK(actual[0].find("multi.yaml:5:18: error: unknown dtype 'f32'") != std::string::npos);
  CHECK(actual[1].find("multi.yaml:6:22: error: '...' (the batch dims) must come first") != std::string::npos);
}

// Field names no longer depend on TensorClass's members: its method names,
// private members' names, keywords of either language and a leading '_' all
// name fields (the bad/ files show what is still refused). C++ keywords,
// `Fields` and the class's own name take a trailing '_' in C++ only.
TEST_CASE("method names, keywords and a leading underscore name fields", "[diagnostics]") {
  const std::vector<std::pair<std::string, std::string>> names = {
      {"index", "index"},   {"mean", "mean"},   {"max", "max"},       {"names", "names"},
      {"device", "device"}, {"shape", "shape"}, {"keys", "keys"},     {"log", "log"},
      {"sub", "sub"},       {"dim", "dim"},     {"numel", "numel"},   {"sizes", "sizes"},
      {"validate", "validate"}, {"batch_size", "batch_size"}, {"zero_", "zero_"},
      {"tc_batch_size_", "tc_batch_size_"}, {"_private", "_private"}, {"_", "_"},
      {"class", "class_"},  {"new", "new_"},    {"delete", "delete_"}, {"int", "int_"},
      {"NULL", "NULL_"},    {"errno", "errno_"}, {"Fields", "Fields_"}, {"Obs", "Obs_"},
      {"lambda", "lambda"}, {"from", "from"},   {"None", "None"},     {"str", "str"}};
  std::string yaml = "namespace: rl\ntensorclasses:\n  Obs:\n    fields:\n";
  for (const auto& [name, cpp] : names) yaml += "      \"" + name + "\": {}\n";  // quoted: NULL, None
  const auto dir = tcgen_test::scratch_dir("method_names");
  tcgen_test::write_file(dir / "all.yaml", yaml);
  const auto loaded = tcgen::load_schema((dir / "all.yaml").string(), {});
  const auto& fields = loaded.schema.classes.at(0).fields;
  REQUIRE(fields.size() == names.size());
  for (std::size_t i = 0; i < names.size(); ++i) {
    CHECK(fields[i].name == names[i].first);
    CHECK(fields[i].cpp_name == names[i].second);
  }
}

// The generated header opens the namespace and names std::string, ::at::Tensor
// and ::tensordict::TensorClass in it: `namespace: std` compiled to a header
// that did not compile.
TEST_CASE("namespaces of the standard library, libtorch, the runtime and the implementation are refused",
          "[diagnostics]") {
  const std::string library = "is reserved for the C++ standard library";
  const std::string libtorch = "belongs to libtorch, whose names the generated classes could clash with";
  const std::string underscores = "is a reserved identifier (names with '__', or starting with '_' and an upper-case "
                                  "letter, belong to the C++ implementation)";
  const std::pair<std::string, std::string> cases[] = {
      {"std", "'std' " + library},
      {"std::rl", "'std' " + library},
      {"posix", "'posix' " + library},
      {"rl::std", "a namespace 'std' inside another would hide ::std from the generated code, which names "
                  "std::string and std::vector"},
      {"torch", "'torch' " + libtorch},
      {"at::rl", "'at' " + libtorch},
      {"c10", "'c10' " + libtorch},
      {"tensordict", "'tensordict' belongs to the tensorclass runtime, whose names the generated classes could "
                     "clash with"},
      {"_rl", "'_rl' is a reserved identifier (at global scope, names starting with '_' belong to the C++ "
              "implementation)"},
      {"rl::_Detail", "'_Detail' " + underscores},
      {"rl::a__b", "'a__b' " + underscores},
  };
  const auto dir = tcgen_test::scratch_dir("reserved_namespaces");
  for (const auto& [ns, why] : cases) {
    INFO(ns);
    const auto file = dir / "ns.yaml";
    tcgen_test::write_file(file, "namespace: " + ns + "\ntensorclasses:\n  A: {}\n");
    std::vector<std::string> actual;
    try {
      tcgen::load_schema(file.string(), {});
    } catch (const tcgen::Error& e) {
      for (const auto& d : e.diagnostics()) actual.push_back(d.str());
    }
    CHECK(actual == std::vector<std::string>{file.string() + ":1:12: error: invalid namespace '" + ns + "': " + why});
  }
  // Only the outermost namespace is at global scope or could meet libtorch's.
  for (const std::string ns : {"rl::torch", "rl::at", "rl::_impl", "rlstd"}) {
    INFO(ns);
    const auto file = dir / "ok.yaml";
    tcgen_test::write_file(file, "namespace: " + ns + "\ntensorclasses:\n  A: {}\n");
    CHECK_NOTHROW(tcgen::load_schema(file.string(), {}));
  }
}

TEST_CASE("unknown file types are rejected", "[diagnostics]") {
  CHECK_THROWS_AS(tcgen::load_schema("schema.json", {}), tcgen::Error);
}
