#include "tcgen/include_scan.h"

#include <fmt/format.h>

#include <cctype>
#include <filesystem>
#include <optional>
#include <set>
#include <string_view>

#include "tcgen/files.h"

namespace fs = std::filesystem;

namespace tcgen {
namespace {

// Included headers are often larger than schemas (generated or single-file
// libraries) but still far below this.
constexpr std::uintmax_t kMaxIncludedBytes = 16u << 20;

struct Directive {
  std::string name;  // between the quotes or the angle brackets
  bool angled = false;
  bool next = false;  // #include_next: every later candidate counts too
  int line = 0;
  int col = 0;  // of the opening quote or '<'
};

bool is_blank(char c) { return c == ' ' || c == '\t' || c == '\v' || c == '\f' || c == '\r'; }

// Skips blanks and block comments (clang reads a comment as a space); false
// when a comment runs past the line.
bool skip_blanks(std::string_view s, std::size_t& p) {
  while (p < s.size()) {
    if (is_blank(s[p])) {
      ++p;
    } else if (s.compare(p, 2, "/*") == 0) {
      const auto end = s.find("*/", p + 2);
      if (end == std::string_view::npos) return false;
      p = end + 2;
    } else {
      return true;
    }
  }
  return true;
}

// The directive that logical line `s` holds from `p` on, if any.
std::optional<Directive> directive_at(std::string_view s, std::size_t p) {
  if (!skip_blanks(s, p)) return std::nullopt;
  if (s.compare(p, 1, "#") == 0)
    p += 1;
  else if (s.compare(p, 2, "%:") == 0)
    p += 2;  // the digraph of '#'
  else
    return std::nullopt;
  if (!skip_blanks(s, p)) return std::nullopt;
  const std::size_t word = p;
  while (p < s.size() && (std::isalnum(static_cast<unsigned char>(s[p])) || s[p] == '_')) ++p;
  const std::string_view keyword = s.substr(word, p - word);
  if (keyword != "include" && keyword != "include_next" && keyword != "import") return std::nullopt;
  if (!skip_blanks(s, p) || p >= s.size() || (s[p] != '"' && s[p] != '<')) return std::nullopt;  // NAME: a macro
  const auto end = s.find(s[p] == '"' ? '"' : '>', p + 1);
  if (end == std::string_view::npos) return std::nullopt;  // clang refuses it
  return Directive{std::string(s.substr(p + 1, end - p - 1)), s[p] == '<', keyword == "include_next", 0,
                   static_cast<int>(p) + 1};
}

// Every directive of `text`, line by line (physical lines joined at a
// backslash-newline, as clang joins them). Comments are not tracked across
// lines, so a line inside one is read too, and a line that may end one is
// also read from after its "*/".
std::vector<Directive> directives(std::string_view text) {
  if (text.substr(0, 3) == "\xEF\xBB\xBF") text.remove_prefix(3);  // a UTF-8 byte order mark
  std::vector<Directive> out;
  int line_no = 0;
  std::size_t pos = 0;
  while (pos < text.size()) {
    const int first = line_no + 1;
    std::string line;
    while (pos < text.size()) {
      const auto nl = text.find('\n', pos);
      std::string_view physical = text.substr(pos, nl == std::string_view::npos ? std::string_view::npos : nl - pos);
      pos = nl == std::string_view::npos ? text.size() : nl + 1;
      ++line_no;
      while (!physical.empty() && is_blank(physical.back())) physical.remove_suffix(1);
      if (physical.empty() || physical.back() != '\\') {
        line.append(physical);
        break;
      }
      physical.remove_suffix(1);
      line.append(physical);
    }
    auto d = directive_at(line, 0);
    if (const auto end = line.find("*/"); !d && end != std::string::npos) d = directive_at(line, end + 2);
    if (d) {
      d->line = first;
      out.push_back(std::move(*d));
    }
  }
  return out;
}

}  // namespace

bool check_includes(const std::string& file, const std::vector<std::string>& search_dirs, Diagnostics& diags) {
  struct Pending {
    std::string file;
    std::vector<Directive> directives;
  };
  std::string text;
  if (read_regular_file(file, kMaxIncludedBytes, "an included file", text)) return true;  // the caller reports it
  std::vector<Pending> todo{{file, directives(text)}};
  std::set<fs::path> seen{fs::weakly_canonical(file)};
  bool ok = true;
  while (!todo.empty()) {
    const Pending p = std::move(todo.back());
    todo.pop_back();
    for (const Directive& d : p.directives) {
      std::vector<fs::path> candidates;
      if (fs::path(d.name).is_absolute()) {
        candidates.push_back(d.name);
      } else {
        if (!d.angled) candidates.push_back(fs::path(p.file).parent_path() / d.name);
        for (const auto& dir : search_dirs) candidates.push_back(fs::path(dir) / d.name);
      }
      for (const fs::path& candidate : candidates) {
        std::error_code ec;
        const auto status = fs::status(candidate, ec);
        if (ec || fs::is_directory(status)) continue;  // clang looks on
        const fs::path canonical = fs::weakly_canonical(candidate, ec);
        if (ec) break;
        if (seen.count(canonical)) {
          if (d.next) continue;
          break;
        }
        if (const auto why = read_regular_file(candidate.string(), kMaxIncludedBytes, "an included file", text)) {
          const std::string found =
              candidate.string() == d.name ? "" : fmt::format(" (found as {})", candidate.string());
          diags.error(SourceLoc{p.file, d.line, d.col}, fmt::format("cannot #include '{}'{}: {}", d.name, found, *why));
          ok = false;
          break;
        }
        seen.insert(canonical);
        todo.push_back({candidate.string(), directives(text)});
        if (!d.next) break;
      }
    }
  }
  return ok;
}

}  // namespace tcgen
