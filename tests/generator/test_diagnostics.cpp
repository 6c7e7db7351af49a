// Every file under bad/ must fail with exactly the diagnostics listed in its
// trailing "expect:" comments ("# expect: 5:7: error: ..." in YAML,
// "// expect: ..." in headers). $FILE / $DIR stand for the file's path / its
// directory; an expectation without a line:col is "<file>: error: ...".
#include <catch2/catch.hpp>

#include <algorithm>

#include <tensordict/tensorclass_members.h>

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

// The bad/ files show the messages; this shows that the generator refuses
// every name of the runtime's list (tests/tensorclass checks that list against
// tensorclass.h), so a member added there is refused here with no edit.
TEST_CASE("every TensorClass member name is a reserved field name", "[diagnostics]") {
  std::vector<std::string_view> names(std::begin(tensordict::tensorclass_public_members),
                                      std::end(tensordict::tensorclass_public_members));
  names.insert(names.end(), std::begin(tensordict::tensorclass_op_members), std::end(tensordict::tensorclass_op_members));
  names.insert(names.end(), std::begin(tensordict::tensorclass_future_members),
               std::end(tensordict::tensorclass_future_members));
  std::string yaml = "namespace: rl\ntensorclasses:\n  Obs:\n    fields:\n";
  for (auto n : names) yaml += "      " + std::string(n) + ": {}\n";
  const auto dir = tcgen_test::scratch_dir("all_reserved");
  tcgen_test::write_file(dir / "all.yaml", yaml);
  std::vector<std::string> actual;
  try {
    tcgen::load_schema((dir / "all.yaml").string(), {});
  } catch (const tcgen::Error& e) {
    for (const auto& d : e.diagnostics()) actual.push_back(d.str());
  }
  REQUIRE(actual.size() == names.size());
  for (std::size_t i = 0; i < names.size(); ++i) {
    INFO(actual[i]);
    CHECK(actual[i].find(":" + std::to_string(i + 5) + ":7: error: field name '" + std::string(names[i]) +
                         "' in class 'Obs' is reserved: ") != std::string::npos);
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
