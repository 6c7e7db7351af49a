// tensordict/tensorclass_members.h, the field names tensorclass-gen refuses,
// must list exactly the public members of TensorClass<Derived>.
//
// Checked by reading tensorclass.h and the headers of TensorClass's bases
// (tensorclass_surface.h, tensorclass_persistence.h): C++20 cannot enumerate a class's members,
// and a requires-expression per listed name would only show that the listed
// names exist, not that a new member is missing from the list. The scan is
// strict so that it cannot silently skip a declaration: every line at member
// indentation (two spaces, clang-format's layout) in a public section must be
// a form it knows (a declaration, a comment, a template head, an operator, a
// macro defined in the file), else the test fails and names the line.
#include <catch2/catch.hpp>

#include <algorithm>
#include <fstream>
#include <map>
#include <optional>
#include <regex>
#include <set>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include "../suite_paths.h"
#include "tensordict/op_lists.h"
#include "tensordict/tensorclass_members.h"

namespace {

struct MemberScan {
  std::set<std::string> names;
  std::vector<std::string> unreadable;  // lines the scan does not understand
};

std::string read_file(const std::string& path) {
  std::ifstream in(path);
  std::ostringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

// The member a line at member indentation declares: "" for lines that declare
// no named member, nullopt for a line the scan cannot read.
std::optional<std::string> declared_name(const std::string& line, const std::set<std::string>& macros) {
  static const std::regex skipped(R"(^(//|#|\}|template <[^(]*$|friend .*\boperator\b))");
  static const std::regex type_member(R"(^(using|struct|class|enum( class)?) (\w+)\b)");
  static const std::regex before_paren(R"(^[^(]*?\b(\w+)\()");
  static const std::regex operator_before_paren(R"(^[^(]*\boperator\b)");
  static const std::regex data_member(R"(^[^(]*?\b(\w+)\s*(;|=|\{))");
  // A keyword before the first '(' (a decltype return type, a function type
  // in a template argument): the name is elsewhere on the line.
  static const std::set<std::string> not_names = {
      "decltype", "requires", "noexcept", "alignas", "sizeof", "static_assert", "void", "bool", "int", "auto", "const"};
  std::smatch m;
  if (std::regex_search(line, skipped) || std::regex_search(line, operator_before_paren)) return "";
  if (std::regex_search(line, m, type_member)) return m[3].str();
  if (std::regex_search(line, m, before_paren) || std::regex_search(line, m, data_member)) {
    const std::string name = m[1].str();
    if (macros.count(name)) return "";  // its #define lines are scanned as members too
    if (not_names.count(name)) return std::nullopt;
    return name;
  }
  return std::nullopt;
}

// The op lists of op_lists.h, by macro name: a line `TENSORDICT_X(LOCAL)`
// declares LOCAL's members for every op of list X.
#define TEST_OP_NAME(name) #name,
const std::map<std::string, std::vector<std::string>>& op_lists() {
  static const std::map<std::string, std::vector<std::string>> lists = {
      {"TENSORDICT_UNARY_OPS", {TENSORDICT_UNARY_OPS(TEST_OP_NAME)}},
      {"TENSORDICT_BINARY_OPS", {TENSORDICT_BINARY_OPS(TEST_OP_NAME)}},
      {"TENSORDICT_BINARY_OPS_NO_INPLACE", {TENSORDICT_BINARY_OPS_NO_INPLACE(TEST_OP_NAME)}},
      {"TENSORDICT_COMPARISONS", {TENSORDICT_COMPARISONS(TEST_OP_NAME)}},
      {"TENSORDICT_PREDICATES", {TENSORDICT_PREDICATES(TEST_OP_NAME)}},
      {"TENSORDICT_REDUCTIONS", {TENSORDICT_REDUCTIONS(TEST_OP_NAME)}},
  };
  return lists;
}
#undef TEST_OP_NAME

// A function-like macro defined in the file, with the member names its body
// declares from its last parameter `p`: "p" for `p(`, "p_" for `p##_(`.
struct LocalMacro {
  std::vector<std::string> suffixes;  // "" and/or "_"
};

// The members a line `MACRO(args)` at member indentation declares, or nullopt
// when the line is no such invocation.
std::optional<std::vector<std::string>> expanded_names(const std::string& line,
                                                       const std::map<std::string, LocalMacro>& local) {
  static const std::regex invocation(R"(^(\w+)\(([^()]*)\)\s*$)");
  std::smatch m;
  if (!std::regex_search(line, m, invocation)) return std::nullopt;
  const std::string macro = m[1].str(), args = m[2].str();
  std::vector<std::string> names;
  auto declare = [&](const LocalMacro& def, const std::string& op) {
    for (const auto& suffix : def.suffixes) names.push_back(op + suffix);
  };
  if (auto list = op_lists().find(macro); list != op_lists().end()) {
    const auto def = local.find(args);
    if (def == local.end()) return std::nullopt;
    for (const auto& op : list->second) declare(def->second, op);
    return names;
  }
  const auto def = local.find(macro);
  if (def == local.end()) return std::nullopt;
  const std::string last = args.substr(args.find_last_of(',') == std::string::npos ? 0 : args.find_last_of(',') + 1);
  declare(def->second, std::regex_replace(last, std::regex(R"(\s)"), ""));
  return names;
}

// The names declared in the public sections of the class whose head is the
// line `head` (`class TensorClass {` by default) up to its `};`.
MemberScan scan_public_members(const std::string& text, const std::string& head = "class TensorClass {") {
  // Function-like macros, and what each body declares from its last parameter.
  std::map<std::string, LocalMacro> local;
  static const std::regex define(R"(#define (\w+)\(([^)]*)\)((?:[^\n]*\\\n)*[^\n]*))");
  for (std::sregex_iterator it(text.begin(), text.end(), define), end; it != end; ++it) {
    const std::string params = (*it)[2].str();
    const std::string param = std::regex_replace(
        params.substr(params.find_last_of(',') == std::string::npos ? 0 : params.find_last_of(',') + 1),
        std::regex(R"(\s)"), "");
    // `operator op(` declares an operator, not a member named after `op`.
    const std::string body = std::regex_replace((*it)[3].str(), std::regex("operator\\s*" + param), "");
    LocalMacro def;
    if (std::regex_search(body, std::regex("[^\\w#]" + param + "\\("))) def.suffixes.push_back("");
    if (std::regex_search(body, std::regex("[^\\w#]" + param + "##_\\("))) def.suffixes.push_back("_");
    local[(*it)[1].str()] = def;
  }
  std::set<std::string> macros;
  for (const auto& [name, def] : local) macros.insert(name);

  MemberScan scan;
  std::istringstream in(text);
  bool inside = false, is_public = false, in_define = false;
  for (std::string line; std::getline(in, line);) {
    // A macro's body declares nothing itself: its invocations do.
    const bool continued = !line.empty() && line.back() == '\\';
    if (in_define || line.rfind("#define", 0) == 0) {
      in_define = continued;
      continue;
    }
    if (!inside) {
      inside = line == head;
      continue;
    }
    if (line == "};") break;
    if (line == " public:" || line == " private:" || line == " protected:") {
      is_public = line == " public:";
      continue;
    }
    // Deeper lines are bodies and continuations; the name is on the first line.
    if (!is_public || line.size() < 3 || line.compare(0, 2, "  ") != 0 || line[2] == ' ') continue;
    if (auto names = expanded_names(line.substr(2), local)) {
      scan.names.insert(names->begin(), names->end());
    } else if (auto name = declared_name(line.substr(2), macros)) {
      if (!name->empty()) scan.names.insert(*name);
    } else {
      scan.unreadable.push_back(line);
    }
  }
  return scan;
}

}  // namespace

TEST_CASE("the reserved field names are exactly TensorClass's public members", "[tensorclass][names]") {
  // TensorClass's members are its own and its CRTP bases', each in its own
  // header. The head line pins the list of bases: a new base must be added here.
  const std::vector<std::pair<std::string, std::string>> parts = {
      {"tensorclass.h",
       "class TensorClass : public TensorClassSurface<Derived>, public TensorClassPersistence<Derived> {"},
      {"tensorclass_surface.h", "class TensorClassSurface {"},
      {"tensorclass_persistence.h", "class TensorClassPersistence {"},
  };
  MemberScan scan;
  for (const auto& [file, head] : parts) {
    const std::string text = read_file(td_test::paths::source("runtime/include/tensordict").string() + "/" + file);
    INFO(file << " has no line `" << head << "`: TensorClass's bases changed; list each base's header here");
    REQUIRE(text.find("\n" + head + "\n") != std::string::npos);
    MemberScan part = scan_public_members(text, head);
    scan.names.insert(part.names.begin(), part.names.end());
    scan.unreadable.insert(scan.unreadable.end(), part.unreadable.begin(), part.unreadable.end());
  }
  for (const auto& line : scan.unreadable) {
    INFO("teach the scan in test_member_names.cpp this declaration form: `" << line << "`");
    CHECK(false);
  }
  REQUIRE(scan.names.size() > 50);

  std::set<std::string> listed(std::begin(tensordict::tensorclass_public_members),
                               std::end(tensordict::tensorclass_public_members));
  listed.insert(std::begin(tensordict::tensorclass_op_members), std::end(tensordict::tensorclass_op_members));
  for (const auto& name : scan.names) {
    INFO("TensorClass declares `" << name << "`: add it to tensorclass_public_members in tensorclass_members.h");
    CHECK(listed.count(name) == 1);
  }
  for (const auto& name : listed) {
    INFO("tensorclass_public_members lists `" << name << "`, which TensorClass does not declare");
    CHECK(scan.names.count(name) == 1);
  }
  for (auto name : tensordict::tensorclass_future_members) {
    INFO("`" << name << "` is a TensorClass member now: move it to tensorclass_public_members");
    CHECK(scan.names.count(std::string(name)) == 0);
  }
  CHECK(std::is_sorted(std::begin(tensordict::tensorclass_public_members),
                       std::end(tensordict::tensorclass_public_members)));
  // No name twice (in one list or in both).
  CHECK(listed.size() ==
        std::size(tensordict::tensorclass_public_members) + std::size(tensordict::tensorclass_op_members));
}

TEST_CASE("the scan reads the declaration forms it claims to", "[tensorclass][names]") {
  const std::string text =
      "class TensorClass {\n"
      " public:\n"
      "  TensorClass() = default;\n"
      "  // a comment(with parens)\n"
      "  template <class Fn>\n"
      "  static std::vector<Derived> split(int64_t n,\n"
      "                                    int64_t dim = 0) const {\n"
      "  }\n"
      "  explicit operator bool() const = delete;\n"
      "  friend std::ostream& operator<<(std::ostream& os, const Derived& x) { return os << x.repr(); }\n"
      "#define OPS(op) \\\n"
      "  friend Derived operator op(const Derived& a) { return a; }\n"
      "  OPS(+)\n"
      "#define UNARY(name) \\\n"
      "  Derived name() const { return x; } \\\n"
      "  Derived& name##_() { return y; }\n"
      "  UNARY(sqrt)\n"
      "#define PREDICATE(name) \\\n"
      "  TensorDict name() const;\n"
      "  TENSORDICT_PREDICATES(PREDICATE)\n"
      "  using Alias = int;\n"
      "  static constexpr int count = 3;\n"
      "  decltype(auto) odd();\n"
      " private:\n"
      "  void hidden_();\n"
      "};\n"
      "  void after();\n";
  const MemberScan scan = scan_public_members(text);
  std::set<std::string> expected{"Alias", "TensorClass", "count", "split", "sqrt", "sqrt_"};
  for (const auto& name : op_lists().at("TENSORDICT_PREDICATES")) expected.insert(name);
  CHECK(scan.names == expected);
  CHECK(scan.unreadable == std::vector<std::string>{"  decltype(auto) odd();"});
}

TEST_CASE("hides_tensorclass_member: public members and names ending with '_'", "[tensorclass][names]") {
  static_assert(tensordict::hides_tensorclass_member("validate"));
  static_assert(tensordict::hides_tensorclass_member("tc_batch_size_"));
  static_assert(!tensordict::hides_tensorclass_member("pixels"));
  static_assert(!tensordict::hides_tensorclass_member("keys"));  // reserved by the generator only
  CHECK(tensordict::is_tensorclass_public_member("register_memmap"));
}
