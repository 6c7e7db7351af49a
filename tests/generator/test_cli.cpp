// The tensorclass-gen executable: options, exit codes, atomic output, depfile.
#include <unistd.h>

#include <catch2/catch.hpp>

#include <sys/stat.h>
#include <sys/wait.h>

#include <chrono>
#include <cstdlib>
#include <thread>

#include "common.h"

namespace fs = std::filesystem;

namespace {

#if defined(__SANITIZE_ADDRESS__)
constexpr bool kSanitizedAddressSpace = true;
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
constexpr bool kSanitizedAddressSpace = true;
#else
constexpr bool kSanitizedAddressSpace = false;
#endif
#else
constexpr bool kSanitizedAddressSpace = false;
#endif

struct Result {
  int rc = -1;
  std::string out, err;
};

// `memory_mib` bounds the child's address space, `seconds` its time.
Result run(const std::string& args, int memory_mib = 8192, int seconds = 120) {
  const auto dir = fs::path(tcgen_test::kBinaryDir) / "scratch";
  fs::create_directories(dir);
  // Per process: ctest runs test cases in parallel processes.
  const std::string stem = "cli." + std::to_string(getpid());
  const auto out = dir / (stem + ".stdout"), err = dir / (stem + ".stderr");
  // Every run is a child process under a time limit and (except under ASan,
  // whose shadow memory reserves terabytes of address space) a memory limit,
  // so that a hostile schema fails its case instead of hanging or exhausting
  // the machine.
  const std::string limits =
      (kSanitizedAddressSpace ? std::string() : "ulimit -v " + std::to_string(memory_mib * 1024) + " && ") +
      "timeout " + std::to_string(seconds) + " ";
  const std::string cmd = limits + "\"" + tcgen_test::kGeneratorExe + "\" " + args + " >\"" + out.string() + "\" 2>\"" +
                          err.string() + "\"";
  const int status = std::system(cmd.c_str());
  Result r;
  r.rc = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  r.out = tcgen_test::read_file(out);
  r.err = tcgen_test::read_file(err);
  return r;
}

std::string schema(const std::string& name) {
  return "\"" + (fs::path(tcgen_test::test_dir()) / "schemas" / name).string() + "\"";
}

}  // namespace

TEST_CASE("tensorclass-gen --version prints the project's version and exits 0", "[cli]") {
  const Result r = run("--version");
  CHECK(r.rc == 0);
  CHECK(r.out == std::string("tensorclass-gen ") + TCGEN_VERSION + "\n");
}

TEST_CASE("help option documents every option", "[cli]") {
  const Result r = run("--help");
  CHECK(r.rc == 0);
  for (const char* opt :
       {"--out-dir", "-o", "--dump-ir", "-I", "-D", "--depfile", "--lang", "--python-form", "--templates", "--help"})
    CHECK(r.out.find(opt) != std::string::npos);
}

TEST_CASE("missing arguments are an error", "[cli]") {
  CHECK(run("").rc != 0);
  CHECK(run(schema("rollout.yaml")).rc != 0);  // no -o
}

TEST_CASE("generates headers and sources into the output directory", "[cli]") {
  const auto out = tcgen_test::scratch_dir("cli_ok");
  const Result r = run(schema("common.yaml") + " " + schema("rollout.yaml") + " -o \"" + out.string() + "\"");
  INFO(r.err);
  REQUIRE(r.rc == 0);
  CHECK(r.err.empty());
  const std::string golden = tcgen_test::read_file(fs::path(tcgen_test::test_dir()) / "golden" / "rollout.tc.h");
  CHECK(tcgen_test::read_file(out / "rollout.tc.h") == golden);
  CHECK(tcgen_test::read_file(out / "rollout.tc.cpp") ==
        tcgen_test::read_file(fs::path(tcgen_test::test_dir()) / "golden" / "rollout.tc.cpp"));
  CHECK(fs::exists(out / "common.tc.h"));
  CHECK(fs::exists(out / "common.tc.cpp"));
}

TEST_CASE("an error writes nothing and exits non-zero", "[cli]") {
  const auto out = tcgen_test::scratch_dir("cli_err");
  const auto bad = (fs::path(tcgen_test::test_dir()) / "bad" / "unknown_dtype.yaml").string();
  const Result r = run(schema("rollout.yaml") + " \"" + bad + "\" -o \"" + (out / "gen").string() +
                       "\" --depfile \"" + (out / "gen.d").string() + "\"");
  CHECK(r.rc != 0);
  CHECK(r.err.find(bad + ":5:23: error: unknown dtype 'float'") != std::string::npos);
  CHECK(fs::is_empty(out));
}

TEST_CASE("a header that does not compile is an error", "[cli]") {
  const auto out = tcgen_test::scratch_dir("cli_hdr_err");
  const auto bad = (fs::path(tcgen_test::test_dir()) / "bad" / "hdr_does_not_compile.h").string();
  const Result r = run("\"" + bad + "\" -o \"" + out.string() + "\"");
  CHECK(r.rc != 0);
  CHECK(r.err.find(bad + ":9:3: error: unknown type name 'UnknownType'") != std::string::npos);
  CHECK(r.err.find("does not compile") != std::string::npos);
  CHECK(fs::is_empty(out));
}

TEST_CASE("depfile lists the schema and its imports", "[cli]") {
  const auto out = tcgen_test::scratch_dir("cli_dep");
  const Result r = run(schema("rollout.yaml") + " -o \"" + out.string() + "\" --depfile \"" +
                       (out / "rollout.d").string() + "\"");
  REQUIRE(r.rc == 0);
  const fs::path dir = fs::path(tcgen_test::test_dir()) / "schemas";
  const std::string expected = (out / "rollout.tc.h").string() + " " + (out / "rollout.tc.cpp").string() +
                               ": \\\n  " + (dir / "rollout.yaml").string() +
                               " \\\n  " + (dir / "common.yaml").string() + "\n";
  CHECK(tcgen_test::read_file(out / "rollout.d") == expected);
}

TEST_CASE("header frontend: -I/-D pass through, depfile lists included headers", "[cli]") {
  const auto out = tcgen_test::scratch_dir("cli_hdr");
  tcgen_test::write_file(out / "inc" / "extra" / "dims.h", "#pragma once\n#define OBS_DTYPE \"uint8\"\n");
  tcgen_test::write_file(out / "obs.h",
                         "#pragma once\n#include <tensordict/annotations.h>\n#include <tensordict/tensorclass.h>\n"
                         "#include <extra/dims.h>\n"
                         "#ifndef WITH_OBS\n#error WITH_OBS must be defined\n#endif\n"
                         "namespace rl {\nstruct TC_TENSORCLASS() Obs : tensordict::TensorClass<Obs> {\n"
                         "  at::Tensor pixels;\n};\n}\n");
  const std::string args = "\"" + (out / "obs.h").string() + "\" -o \"" + (out / "gen").string() + "\" -I \"" +
                           (out / "inc").string() + "\" -D WITH_OBS=1 --depfile \"" + (out / "obs.d").string() +
                           "\"";
  const Result r = run(args);
  INFO(r.err);
  REQUIRE(r.rc == 0);
  CHECK(fs::exists(out / "gen" / "obs.tc.h"));
  const std::string dep = tcgen_test::read_file(out / "obs.d");
  CHECK(dep.find((out / "obs.h").string()) != std::string::npos);
  CHECK(dep.find("extra/dims.h") != std::string::npos);
  CHECK(dep.find("torch/types.h") == std::string::npos);  // stand-ins are not dependencies

  const Result without_define = run("\"" + (out / "obs.h").string() + "\" -o \"" + (out / "gen2").string() +
                                    "\" -I \"" + (out / "inc").string() + "\"");
  CHECK(without_define.rc != 0);
  CHECK(without_define.err.find("obs.h:6:2: error: WITH_OBS must be defined") != std::string::npos);
  CHECK(!fs::exists(out / "gen2"));
}

TEST_CASE("dump-ir option prints the IR as JSON", "[cli]") {
  const auto out = tcgen_test::scratch_dir("cli_ir");
  const Result r = run(schema("agent.yaml") + " --dump-ir -o \"" + out.string() + "\"");
  REQUIRE(r.rc == 0);
  CHECK(r.out.find("\"namespace\": \"rl\"") != std::string::npos);
  CHECK(r.out.find("\"cpp_name\": \"rl::Observation\"") != std::string::npos);
}

TEST_CASE("unchanged outputs are not rewritten", "[cli]") {
  const auto out = tcgen_test::scratch_dir("cli_same");
  const std::string args = schema("common.yaml") + " -o \"" + out.string() + "\"";
  REQUIRE(run(args).rc == 0);
  const auto file = out / "common.tc.h";
  const auto old_time = fs::file_time_type::clock::now() - std::chrono::hours(1);
  fs::last_write_time(file, old_time);
  REQUIRE(run(args).rc == 0);
  CHECK(fs::last_write_time(file) == old_time);
  // A changed file is rewritten.
  tcgen_test::write_file(file, "stale");
  REQUIRE(run(args).rc == 0);
  CHECK(tcgen_test::read_file(file) != "stale");
  // No temporary files are left behind: the header and the source only.
  int count = 0;
  for (const auto& e : fs::directory_iterator(out)) count += e.is_regular_file() ? 1 : 0;
  CHECK(count == 2);
}

TEST_CASE("python output: --lang python writes each schema's package module, --stamp lists them and is the depfile's target",
          "[cli][python]") {
  const auto out = tcgen_test::scratch_dir("cli_python");
  const std::string stamp = (out / "gen.stamp").string();
  const Result r = run("--lang python " + schema("rollout.yaml") + " " + schema("common.yaml") + " -o \"" +
                       out.string() + "\" --stamp \"" + stamp + "\" --depfile \"" + (out / "gen.d").string() + "\"");
  INFO(r.err);
  REQUIRE(r.rc == 0);
  CHECK(fs::is_regular_file(out / "rl" / "types" / "__init__.py"));
  CHECK(fs::is_regular_file(out / "rl" / "common" / "__init__.py"));
  CHECK(!fs::exists(out / "rollout.tc.h"));
  CHECK(tcgen_test::read_file(stamp) == (out / "rl" / "types" / "__init__.py").string() + "\n" +
                                            (out / "rl" / "common" / "__init__.py").string() + "\n");
  const std::string dep = tcgen_test::read_file(out / "gen.d");
  CHECK(dep.rfind(stamp + ":", 0) == 0);
  CHECK(dep.find("rollout.yaml") != std::string::npos);
  CHECK(run("--lang rust " + schema("rollout.yaml") + " -o \"" + out.string() + "\"").rc != 0);
}

TEST_CASE("python output: names Python cannot take are errors at their location, nothing is written",
          "[cli][python]") {
  const auto out = tcgen_test::scratch_dir("cli_python_err");
  // A Python keyword names a field (declared by the decorator); a class may not take one.
  const auto keyword = out / "keyword.yaml";
  tcgen_test::write_file(keyword, "namespace: k\ntensorclasses:\n  A:\n    fields:\n      from: {dtype: float32}\n");
  Result ok = run("--lang python \"" + keyword.string() + "\" -o \"" + (out / "gen").string() + "\"");
  CHECK(ok.rc == 0);
  CHECK(tcgen_test::read_file(out / "gen" / "k" / "__init__.py")
            .find("@_tensorclass_with_keyword_fields(((\"from\", _torch.Tensor, None),))\nclass A:") !=
        std::string::npos);
  const auto keyword_class = out / "keyword_class.yaml";
  tcgen_test::write_file(keyword_class, "namespace: k\ntensorclasses:\n  from:\n    fields:\n      x: {dtype: float32}\n");
  Result r = run("--lang python \"" + keyword_class.string() + "\" -o \"" + (out / "gen2").string() + "\"");
  CHECK(r.rc != 0);
  CHECK(r.err == keyword_class.string() + ":3:3: error: class name 'from' is a Python keyword\n");
  CHECK(!fs::exists(out / "gen2"));
  // The same schema is fine for C++.
  CHECK(run("\"" + keyword_class.string() + "\" -o \"" + (out / "cpp").string() + "\"").rc == 0);

  // YAML requires a namespace; a header may use the global one.
  const auto nameless = out / "nameless.h";
  tcgen_test::write_file(nameless,
                         "#include <tensordict/annotations.h>\n#include <tensordict/tensorclass.h>\n"
                         "struct TC_TENSORCLASS() A : tensordict::TensorClass<A> { torch::Tensor x; };\n");
  r = run("--lang python \"" + nameless.string() + "\" -o \"" + (out / "gen").string() + "\"");
  CHECK(r.rc != 0);
  CHECK(r.err.find("a Python module needs a name: give the schema a python_module or a namespace") !=
        std::string::npos);

  const auto bad_module = out / "bad_module.yaml";
  tcgen_test::write_file(bad_module, "namespace: a\npython_module: a.import\ntensorclasses:\n  A: {}\n");
  r = run("--lang python \"" + bad_module.string() + "\" -o \"" + (out / "gen").string() + "\"");
  CHECK(r.rc != 0);
  CHECK(r.err.find("'a.import' is not a Python module name (dotted identifiers, no keywords)") != std::string::npos);
}

TEST_CASE("python output: --python-form chooses the form of every schema of the run, and is for Python only",
          "[cli][python][typed]") {
  const auto out = tcgen_test::scratch_dir("cli_python_form");
  // common.yaml says nothing, typed_common.yaml both: the option wins over both.
  Result r = run("--lang python --python-form both " + schema("common.yaml") + " " + schema("typed_common.yaml") +
                 " -o \"" + (out / "both").string() + "\"");
  INFO(r.err);
  REQUIRE(r.rc == 0);
  for (const char* module : {"rl/common", "rl/common/typed", "tct/typed/common", "tct/typed/common/typed"})
    CHECK(fs::is_regular_file(out / "both" / module / "__init__.py"));
  r = run("--lang python --python-form typed_tensordict " + schema("typed_common.yaml") + " -o \"" +
          (out / "typed").string() + "\"");
  REQUIRE(r.rc == 0);
  CHECK(tcgen_test::read_file(out / "typed" / "tct" / "typed" / "common" / "__init__.py")
            .find("class Agent(_TypedTensorDict):") != std::string::npos);
  CHECK(!fs::exists(out / "typed" / "tct" / "typed" / "common" / "typed"));
  r = run("--lang python --python-form tensorclass " + schema("typed.yaml") + " -o \"" + (out / "tc").string() + "\"");
  REQUIRE(r.rc == 0);
  CHECK(tcgen_test::read_file(out / "tc" / "tct" / "typed" / "__init__.py")
            .find("@_tensorclass(**_TC_OPTIONS)\nclass Step:") != std::string::npos);

  r = run("--python-form typed_tensordict " + schema("misc.yaml") + " -o \"" + (out / "cpp").string() + "\"");
  CHECK(r.rc != 0);
  CHECK(r.err == "tensorclass-gen: error: --python-form applies to Python modules: add --lang python\n");
  CHECK(!fs::exists(out / "cpp"));
  r = run("--lang python --python-form typed " + schema("misc.yaml") + " -o \"" + (out / "bad").string() + "\"");
  CHECK(r.rc != 0);
  CHECK(r.err.find("--python-form") != std::string::npos);
  CHECK(r.err.find("--python-form: Check typed value in {both->2,tensorclass->0,typed_tensordict->1}") !=
        std::string::npos);
}

TEST_CASE("python output: fields a TypedTensorDict cannot declare are errors at their location, nothing is written",
          "[cli][python][typed]") {
  const auto out = tcgen_test::scratch_dir("cli_typed_err");
  const auto fields = out / "fields.yaml";
  tcgen_test::write_file(fields,
                         "namespace: k\n"
                         "python_form: typed_tensordict\n"
                         "tensorclasses:\n"
                         "  A:\n"
                         "    fields:\n"
                         "      _private: {dtype: float32}\n"
                         "      from: {dtype: float32}\n"
                         "      keys: {dtype: float32}\n"
                         "      depth: {type: int}\n"
                         "      fine: {dtype: float32}\n");
  Result r = run("--lang python \"" + fields.string() + "\" -o \"" + (out / "gen").string() + "\"");
  CHECK(r.rc != 0);
  const std::string tail = " (a @tensorclass can have it: python_form tensorclass)\n";
  CHECK(r.err ==
        fields.string() + ":6:7: error: field '_private' in class 'A' cannot be a TypedTensorDict field: "
                          "TypedTensorDict takes no class annotation whose name starts with '_' as a field" + tail +
        fields.string() + ":7:7: error: field 'from' in class 'A' cannot be a TypedTensorDict field: 'from' is a "
                          "Python keyword, which a class annotation cannot name" + tail +
        fields.string() + ":8:7: error: field 'keys' in class 'A' cannot be a TypedTensorDict field: it would hide "
                          "TypedTensorDict's attribute 'keys', which tensordict's own code uses" + tail +
        fields.string() + ":9:7: error: field 'depth' in class 'A' cannot be a TypedTensorDict field: it would hide "
                          "TypedTensorDict's attribute 'depth', which tensordict's own code uses" + tail);
  CHECK(!fs::exists(out / "gen"));
  // The same schema as @tensorclasses, and for C++, is fine.
  CHECK(run("--lang python --python-form tensorclass \"" + fields.string() + "\" -o \"" + (out / "tc").string() + "\"")
            .rc == 0);
  CHECK(run("\"" + fields.string() + "\" -o \"" + (out / "cpp").string() + "\"").rc == 0);

  // A TypedTensorDict nests TypedTensorDicts: an import that makes @tensorclasses only cannot be nested.
  tcgen_test::write_file(out / "inner.yaml", "namespace: k::inner\ntensorclasses:\n  In:\n    fields:\n      x:\n");
  const auto outer = out / "outer.yaml";
  tcgen_test::write_file(outer,
                         "namespace: k\npython_form: both\nimports: [inner.yaml]\ntensorclasses:\n  Out:\n"
                         "    fields:\n      inner: {type: In}\n");
  r = run("--lang python \"" + outer.string() + "\" -o \"" + (out / "gen").string() + "\"");
  CHECK(r.rc != 0);
  CHECK(r.err == outer.string() +
                     ":7:21: error: field 'inner' in class 'Out' nests 'In' of module k.inner, whose schema makes "
                     "@tensorclasses only: a TypedTensorDict nests TypedTensorDicts (give that schema python_form "
                     "typed_tensordict or both, or pass --python-form)\n");
  CHECK(!fs::exists(out / "gen"));
  // Either fix works.
  CHECK(run("--lang python --python-form both \"" + outer.string() + "\" -o \"" + (out / "gen").string() + "\"")
            .rc == 0);
  CHECK(tcgen_test::read_file(out / "gen" / "k" / "typed" / "__init__.py").find("from k.inner.typed import In\n") !=
        std::string::npos);

  // Beside the @tensorclasses, the TypedTensorDicts take the submodule typed,
  // which another schema's module cannot also be.
  tcgen_test::write_file(out / "clash.yaml", "namespace: k::typed\ntensorclasses:\n  B: {}\n");
  r = run("--lang python \"" + outer.string() + "\" \"" + (out / "inner.yaml").string() + "\" \"" +
          (out / "clash.yaml").string() + "\" --python-form both -o \"" + (out / "gen3").string() + "\"");
  CHECK(r.rc != 0);
  CHECK(r.err == (out / "clash.yaml").string() + ": error: two inputs would both generate '" +
                     (out / "gen3" / "k" / "typed" / "__init__.py").string() + "'\n");
}

TEST_CASE("control characters in docs never reach the output raw", "[cli][hostile]") {
  const auto out = tcgen_test::scratch_dir("cli_control");
  const auto s = out / "ctl.yaml";
  // GCC ends a // comment at a lone \r: the rest would be code.
  tcgen_test::write_file(s, "namespace: ctl\ntensorclasses:\n  A:\n    doc: \"x\\rinline int injected_global = 42;\\x0b\\x1b\"\n"
                            "    fields:\n      x: {dtype: float32, doc: \"a\\rb\\\\\"}\n      t: {type: string, default: \"q\\r\\x01\"}\n");
  for (const char* lang : {"cpp", "python"}) {
    INFO(lang);
    const Result r = run(std::string("--lang ") + lang + " \"" + s.string() + "\" -o \"" + out.string() + "\"");
    INFO(r.err);
    REQUIRE(r.rc == 0);
    const auto file = std::string(lang) == "cpp" ? out / "ctl.tc.h" : out / "ctl" / "__init__.py";
    const std::string text = tcgen_test::read_file(file);
    for (unsigned char c : text) CHECK((c >= 0x20 || c == '\n'));
    CHECK(text.find("injected_global") != std::string::npos);  // shown, as text
  }
  CHECK(tcgen_test::read_file(out / "ctl.tc.h").find("/// x\\x0dinline int injected_global = 42;\\x0b\\x1b") !=
        std::string::npos);
}

TEST_CASE("an import whose file name would end the #include is an error", "[cli][hostile]") {
  const auto out = tcgen_test::scratch_dir("cli_include");
  tcgen_test::write_file(out / "we\"ird.yaml", "namespace: w\ntensorclasses:\n  B: {}\n");
  const auto s = out / "user.yaml";
  tcgen_test::write_file(s, "namespace: w\nimports: ['we\"ird.yaml']\ntensorclasses:\n  A: {}\n");
  const Result r = run("\"" + s.string() + "\" -o \"" + (out / "gen").string() + "\"");
  CHECK(r.rc != 0);
  CHECK(r.err.find("cannot #include \"we\\\"ird.tc.h\": a quote, backslash or control character in a file name") !=
        std::string::npos);
}

TEST_CASE("an output that is a symbolic link is replaced, never written through", "[cli][hostile]") {
  const auto out = tcgen_test::scratch_dir("cli_link");
  tcgen_test::write_file(out / "victim.txt", "keep me");
  fs::create_symlink(out / "victim.txt", out / "rollout.tc.h");
  const Result r = run(schema("rollout.yaml") + " -o \"" + out.string() + "\"");
  REQUIRE(r.rc == 0);
  CHECK(tcgen_test::read_file(out / "victim.txt") == "keep me");
  CHECK(!fs::is_symlink(out / "rollout.tc.h"));
  CHECK(tcgen_test::read_file(out / "rollout.tc.h").find("Generated by tensorclass-gen") != std::string::npos);
}

TEST_CASE("hostile schemas: special files, deep imports and nesting, alias bombs, long tokens are bounded errors",
          "[cli][hostile]") {
  const auto out = tcgen_test::scratch_dir("cli_hostile");
  const auto gen = " -o \"" + (out / "gen").string() + "\"";

  // A FIFO as the schema or as an import would block the reader forever.
  REQUIRE(::mkfifo((out / "fifo.yaml").c_str(), 0600) == 0);
  Result r = run("\"" + (out / "fifo.yaml").string() + "\"" + gen);
  CHECK(r.rc != 0);
  CHECK(r.err == (out / "fifo.yaml").string() + ": error: cannot read schema file: not a regular file (a FIFO)\n");
  tcgen_test::write_file(out / "imports_fifo.yaml", "namespace: h\nimports: [fifo.yaml]\ntensorclasses:\n  A: {}\n");
  r = run("\"" + (out / "imports_fifo.yaml").string() + "\"" + gen);
  CHECK(r.err.find("cannot read imported schema '" + (out / "fifo.yaml").string() + "': not a regular file (a FIFO)") !=
        std::string::npos);

  // A chain of 70 imports.
  for (int i = 0; i < 70; ++i) {
    const std::string next = i + 1 < 70 ? "imports: [c" + std::to_string(i + 1) + ".yaml]\n" : "";
    tcgen_test::write_file(out / ("c" + std::to_string(i) + ".yaml"),
                           "namespace: c" + std::to_string(i) + "\n" + next + "tensorclasses:\n  A" +
                               std::to_string(i) + ": {}\n");
  }
  r = run("\"" + (out / "c0.yaml").string() + "\"" + gen);
  CHECK(r.rc != 0);
  CHECK(r.err.find("imports nest deeper than 64 schemas") != std::string::npos);

  // 300 classes, each nesting the next.
  std::string chain = "namespace: n\ntensorclasses:\n";
  for (int i = 0; i < 300; ++i)
    chain += "  C" + std::to_string(i) + ":\n    fields:\n      x: {" +
             (i + 1 < 300 ? "type: C" + std::to_string(i + 1) : std::string("dtype: float32")) + "}\n";
  tcgen_test::write_file(out / "chain.yaml", chain);
  r = run("\"" + (out / "chain.yaml").string() + "\"" + gen);
  CHECK(r.rc != 0);
  CHECK(r.err.find("tensorclasses nest deeper than 256 levels (field 'x' of class 'C255')") != std::string::npos);

  // One 100 KB text named by 3,000 aliases: 300 MB once expanded.
  std::string bomb = "namespace: b\nbig: &big \"" + std::string(100000, 'x') + "\"\ntensorclasses:\n  A:\n    fields:\n";
  for (int i = 0; i < 3000; ++i) bomb += "      f" + std::to_string(i) + ": {doc: *big}\n";
  tcgen_test::write_file(out / "bomb.yaml", bomb);
  r = run("\"" + (out / "bomb.yaml").string() + "\"" + gen);
  CHECK(r.rc != 0);
  CHECK(r.err == (out / "bomb.yaml").string() +
                     ":1:1: error: the schema expands to more than 100000 nodes or 4 MiB of text (YAML aliases "
                     "repeat what they name); nothing was read\n");

  // An alias inside the collection it names expands for ever.
  tcgen_test::write_file(out / "self.yaml", "namespace: s\ntensorclasses: &t\n  A:\n    fields:\n      x: {doc: [*t]}\n");
  r = run("\"" + (out / "self.yaml").string() + "\"" + gen);
  CHECK(r.err == (out / "self.yaml").string() +
                     ":1:1: error: the schema expands to more than 100000 nodes or 4 MiB of text (YAML aliases "
                     "repeat what they name); nothing was read\n");

  // 100 KB shape tokens and defaults (std::regex overflowed its stack on them).
  const std::string symbol = "S" + std::string(100000, 'a');
  const std::string number = std::string(100000, '1');
  tcgen_test::write_file(out / "long.yaml", "namespace: l\ntensorclasses:\n  A:\n    fields:\n      x: {dtype: float32, "
                                            "shape: [..., " + symbol + "]}\n      y: {dtype: float32, shape: [..., " +
                                            number + "]}\n      z: {type: float, default: " + number + ".5e+" + number +
                                            "}\n");
  r = run("\"" + (out / "long.yaml").string() + "\"" + gen);
  CHECK(r.rc != 0);
  CHECK(r.err.find("size " + number + " is too large in the shape of field 'y'") != std::string::npos);
  CHECK(r.err.find("field 'x'") == std::string::npos);  // a long symbol is still a symbol
}

TEST_CASE("a schema is at most 4 MiB, and one just under that is refused in bounded memory", "[cli][hostile]") {
  const auto out = tcgen_test::scratch_dir("cli_big");
  const auto gen = " -o \"" + (out / "gen").string() + "\"";
  const std::size_t limit = 4u << 20;

  tcgen_test::write_file(out / "huge.yaml", "namespace: h\n# " + std::string(limit, 'x') + "\n");
  Result r = run("\"" + (out / "huge.yaml").string() + "\"" + gen);
  CHECK(r.rc != 0);
  CHECK(r.err == (out / "huge.yaml").string() +
                     ": error: cannot read schema file: larger than 4 MiB, the limit for a schema file\n");

  // Two million one-byte items: yaml-cpp's tree of them took 1.2 GB.
  std::string items = "namespace: h\ntensorclasses:\n  A:\n    fields:\n      a: {type: list<int>, default: [";
  while (items.size() < limit - 16) items += "1,";
  items += "1]}\n";
  tcgen_test::write_file(out / "items.yaml", items);
  r = run("\"" + (out / "items.yaml").string() + "\"" + gen, 512);
  CHECK(r.rc == 1);
  CHECK(r.err == (out / "items.yaml").string() +
                     ":1:1: error: the schema expands to more than 100000 nodes or 4 MiB of text (YAML aliases "
                     "repeat what they name); nothing was read\n");
}

// clang reads what an #include names: a FIFO blocked it for good and
// /dev/zero grew it to 8 GB. Each case runs under a 20 s, 1 GiB limit.
TEST_CASE("a header's #include of a device, a FIFO or an over-large file is refused before libclang reads it",
          "[cli][hostile]") {
  const auto dir = tcgen_test::scratch_dir("cli_includes");
  REQUIRE(::mkfifo((dir / "fifo.h").c_str(), 0600) == 0);
  fs::create_directories(dir / "idir");
  REQUIRE(::mkfifo((dir / "idir" / "pipe.h").c_str(), 0600) == 0);
  tcgen_test::write_file(dir / "big.h", "");
  fs::resize_file(dir / "big.h", (16u << 20) + 1);  // sparse: no disk used
  tcgen_test::write_file(dir / "sub" / "inner.h", "#pragma once\n#include <pipe.h>\n");
  const std::string head = "#pragma once\n#include <tensordict/annotations.h>\n#include <tensordict/tensorclass.h>\n";
  const std::string body = "namespace rl {\nstruct TC_TENSORCLASS() Obs : tensordict::TensorClass<Obs> {\n"
                           "  at::Tensor x;\n};\n}  // namespace rl\n";
  const auto header = dir / "h.h";
  const std::string d = dir.string();
  const std::pair<std::string, std::string> cases[] = {
      {"#include \"/dev/zero\"\n",
       header.string() + ":4:10: error: cannot #include '/dev/zero': not a regular file (a character device)"},
      {"#include \"fifo.h\"\n",
       header.string() + ":4:10: error: cannot #include 'fifo.h' (found as " + d +
           "/fifo.h): not a regular file (a FIFO)"},
      // Found through -I, by an included header.
      {"#include \"sub/inner.h\"\n", d + "/sub/inner.h:2:10: error: cannot #include 'pipe.h' (found as " + d +
                                         "/idir/pipe.h): not a regular file (a FIFO)"},
      {"#include \"big.h\"\n", header.string() + ":4:10: error: cannot #include 'big.h' (found as " + d +
                                   "/big.h): larger than 16 MiB, the limit for an included file"},
      // Comments, a digraph and a line splice, as clang reads them.
      {"%: /* c */ include_next </dev/\\\nzero>\n",
       header.string() + ":4:25: error: cannot #include '/dev/zero': not a regular file (a character device)"},
      // Text alone cannot tell which #if branch clang takes: both are checked.
      {"#if 0\n#include \"fifo.h\"\n#endif\n",
       header.string() + ":5:10: error: cannot #include 'fifo.h' (found as " + d +
           "/fifo.h): not a regular file (a FIFO)"},
  };
  for (const auto& [directive, expected] : cases) {
    INFO(directive);
    tcgen_test::write_file(header, head + directive + body);
    const Result r = run("-I \"" + (dir / "idir").string() + "\" \"" + header.string() + "\" -o \"" +
                             (dir / "gen").string() + "\"",
                         1024, 20);
    CHECK(r.rc == 1);
    CHECK(r.err == expected + "\n");
  }
  // The generator's stand-in headers include <string>: searched in the -I
  // directories too, before the system's.
  fs::create_directories(dir / "shadow");
  REQUIRE(::mkfifo((dir / "shadow" / "string").c_str(), 0600) == 0);
  tcgen_test::write_file(header, head + body);
  Result r = run("-I \"" + (dir / "shadow").string() + "\" \"" + header.string() + "\" -o \"" + (dir / "gen").string() +
                     "\"",
                 1024, 20);
  CHECK(r.rc == 1);
  CHECK(r.err.find("error: cannot #include 'string' (found as " + d +
                   "/shadow/string): not a regular file (a FIFO)\n") != std::string::npos);

  // A commented-out include is not one.
  tcgen_test::write_file(header, head + "/* #include \"fifo.h\" */\n// #include \"fifo.h\"\n" + body);
  r = run("\"" + header.string() + "\" -o \"" + (dir / "gen").string() + "\"", 1024, 20);
  CHECK(r.rc == 0);
  CHECK(r.err.empty());
}
