// tensordict/tensorclass_members.h, the field names tensorclass-gen refuses,
// must list exactly the public members of TensorClass<Derived>.
//
// Checked by reading tensorclass.h: C++20 cannot enumerate a class's members,
// and a requires-expression per listed name would only show that the listed
// names exist, not that a new member is missing from the list. The scan is
// strict so that it cannot silently skip a declaration: every line at member
// indentation (two spaces, clang-format's layout) in a public section must be
// a form it knows (a declaration, a comment, a template head, an operator, a
// macro defined in the file), else the test fails and names the line.
#include <catch2/catch.hpp>

#include <algorithm>
#include <fstream>
#include <optional>
#include <regex>
#include <set>
#include <sstream>
#include <string>
#include <vector>

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

// The names declared in the public sections of `class TensorClass {...};`.
MemberScan scan_public_members(const std::string& text) {
  std::set<std::string> macros;
  static const std::regex define(R"(#define (\w+))");
  for (std::sregex_iterator it(text.begin(), text.end(), define), end; it != end; ++it) macros.insert((*it)[1].str());

  MemberScan scan;
  std::istringstream in(text);
  bool inside = false, is_public = false;
  for (std::string line; std::getline(in, line);) {
    if (!inside) {
      inside = line == "class TensorClass {";
      continue;
    }
    if (line == "};") break;
    if (line == " public:" || line == " private:" || line == " protected:") {
      is_public = line == " public:";
      continue;
    }
    // Deeper lines are bodies and continuations; the name is on the first line.
    if (!is_public || line.size() < 3 || line.compare(0, 2, "  ") != 0 || line[2] == ' ') continue;
    if (auto name = declared_name(line.substr(2), macros)) {
      if (!name->empty()) scan.names.insert(*name);
    } else {
      scan.unreadable.push_back(line);
    }
  }
  return scan;
}

}  // namespace

TEST_CASE("the reserved field names are exactly TensorClass's public members", "[tensorclass][names]") {
  const std::string text = read_file(TENSORDICT_INCLUDE_DIR "/tensordict/tensorclass.h");
  REQUIRE(text.find("class TensorClass {") != std::string::npos);
  const MemberScan scan = scan_public_members(text);
  for (const auto& line : scan.unreadable) {
    INFO("teach the scan in test_member_names.cpp this declaration form: `" << line << "`");
    CHECK(false);
  }
  REQUIRE(scan.names.size() > 50);

  const std::set<std::string> listed(std::begin(tensordict::tensorclass_public_members),
                                     std::end(tensordict::tensorclass_public_members));
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
  CHECK(listed.size() == std::size(tensordict::tensorclass_public_members));  // no duplicates
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
      "  using Alias = int;\n"
      "  static constexpr int count = 3;\n"
      "  decltype(auto) odd();\n"
      " private:\n"
      "  void hidden_();\n"
      "};\n"
      "  void after();\n";
  const MemberScan scan = scan_public_members(text);
  CHECK(scan.names == std::set<std::string>{"Alias", "TensorClass", "count", "split"});
  CHECK(scan.unreadable == std::vector<std::string>{"  decltype(auto) odd();"});
}

TEST_CASE("hides_tensorclass_member: public members and names ending with '_'", "[tensorclass][names]") {
  static_assert(tensordict::hides_tensorclass_member("validate"));
  static_assert(tensordict::hides_tensorclass_member("tc_batch_size_"));
  static_assert(!tensordict::hides_tensorclass_member("pixels"));
  static_assert(!tensordict::hides_tensorclass_member("keys"));  // reserved by the generator only
  CHECK(tensordict::is_tensorclass_public_member("register_memmap"));
}
