#include "tcgen/validate.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <charconv>
#include <functional>
#include <map>
#include <optional>
#include <set>

#include "tcgen/names.h"

namespace tcgen {
namespace {

std::string where(const SourceLoc& l) { return fmt::format("{}:{}:{}", l.file, l.line, l.col); }

void check_name(const std::string& name, const SourceLoc& loc, std::string_view what,
                Diagnostics& diags) {
  if (!is_identifier(name))
    diags.error(loc, fmt::format("invalid {} name '{}': not a C++ identifier", what, name));
  else if (is_cpp_keyword(name))
    diags.error(loc, fmt::format("invalid {} name '{}': it is a C++ keyword", what, name));
}

// Why a field's C++ member takes a '_' (cpp_member_takes_suffix), for messages.
std::string cpp_suffix_reason(const std::string& name, const std::string& class_name) {
  if (name == class_name) return "a member cannot have its class's name";
  if (name == "Fields") return "the generated struct Fields takes that name";
  if (is_cpp_keyword(name)) return "a C++ keyword";
  return "a standard C++ macro";
}

// Why a namespace component cannot hold the generated classes; nullopt when
// it can. `outermost`: it is the first component (at global scope).
std::optional<std::string> reserved_namespace_reason(std::string_view part, bool outermost) {
  const bool underscore_upper = part.size() > 1 && part[0] == '_' && part[1] >= 'A' && part[1] <= 'Z';
  if (part.find("__") != std::string_view::npos || underscore_upper)
    return fmt::format("'{}' is a reserved identifier (names with '__', or starting with '_' and an upper-case "
                       "letter, belong to the C++ implementation)",
                       part);
  if (part == "std" && !outermost)
    return "a namespace 'std' inside another would hide ::std from the generated code, which names std::string and "
           "std::vector";
  if (!outermost) return std::nullopt;
  if (part[0] == '_')
    return fmt::format("'{}' is a reserved identifier (at global scope, names starting with '_' belong to the C++ "
                       "implementation)",
                       part);
  if (part == "std" || part == "posix") return fmt::format("'{}' is reserved for the C++ standard library", part);
  if (part == "torch" || part == "at" || part == "c10")
    return fmt::format("'{}' belongs to libtorch, whose names the generated classes could clash with", part);
  if (part == "tensordict")
    return "'tensordict' belongs to the tensorclass runtime, whose names the generated classes could clash with";
  return std::nullopt;
}

void check_namespace(const Schema& s, Diagnostics& diags) {
  const SourceLoc loc = s.ns_loc.file.empty() ? SourceLoc{s.file, 1, 1} : s.ns_loc;
  if (s.ns.empty()) {
    if (s.frontend == Frontend::Yaml && !s.ns_loc.file.empty())
      diags.error(loc, "'namespace' must not be empty");
    return;
  }
  std::size_t start = 0;
  while (true) {
    std::size_t end = s.ns.find("::", start);
    std::string part = s.ns.substr(start, end == std::string::npos ? std::string::npos : end - start);
    if (!is_identifier(part) || is_cpp_keyword(part)) {
      diags.error(loc, fmt::format("invalid namespace '{}': '{}' is not a valid C++ name", s.ns, part));
      return;
    }
    if (const auto why = reserved_namespace_reason(part, start == 0)) {
      diags.error(loc, fmt::format("invalid namespace '{}': {}", s.ns, *why));
      return;
    }
    if (end == std::string::npos) break;
    start = end + 2;
  }
}

// Hand-written scanners, not std::regex: libstdc++'s regex recurses per
// character and overflows the stack on a long token.
bool all_digits(std::string_view s) {
  return !s.empty() && std::all_of(s.begin(), s.end(), [](char c) { return c >= '0' && c <= '9'; });
}

// -?[0-9]+
bool is_integer_text(std::string_view s) {
  if (!s.empty() && s.front() == '-') s.remove_prefix(1);
  return all_digits(s);
}

// [-+]?([0-9]+\.?[0-9]*|\.[0-9]+)([eE][-+]?[0-9]+)?
bool is_float_text(std::string_view s) {
  if (!s.empty() && (s.front() == '-' || s.front() == '+')) s.remove_prefix(1);
  const auto exp = s.find_first_of("eE");
  std::string_view mantissa = s.substr(0, exp);
  if (exp != std::string_view::npos) {
    std::string_view e = s.substr(exp + 1);
    if (!e.empty() && (e.front() == '-' || e.front() == '+')) e.remove_prefix(1);
    if (!all_digits(e)) return false;
  }
  const auto dot = mantissa.find('.');
  if (dot == std::string_view::npos) return all_digits(mantissa);
  const std::string_view whole = mantissa.substr(0, dot), fraction = mantissa.substr(dot + 1);
  if (whole.empty()) return all_digits(fraction);
  return all_digits(whole) && (fraction.empty() || all_digits(fraction));
}

void check_dims(Field& f, Diagnostics& diags) {
  f.dims.clear();
  bool seen_batch = false;
  for (std::size_t i = 0; i < f.shape->size(); ++i) {
    const DimToken& t = (*f.shape)[i];
    Dim d;
    if (t.text == "...") {
      if (seen_batch) {
        diags.error(t.loc, fmt::format("'...' may appear only once in the shape of field '{}'", f.name));
        continue;
      }
      seen_batch = true;
      if (f.unbatched) {
        diags.error(t.loc, fmt::format("field '{}' is unbatched: it has no batch dims, so '...' cannot appear in its "
                                       "shape (the shape is the whole tensor's)",
                                       f.name));
        continue;
      }
      if (i != 0) {
        diags.error(t.loc, fmt::format("'...' (the batch dims) must come first in the shape of field '{}'", f.name));
        continue;
      }
      d.kind = DimKind::Batch;
    } else if (is_integer_text(t.text)) {
      if (t.text[0] == '-') {
        diags.error(t.loc, fmt::format("negative size {} in the shape of field '{}'", t.text, f.name));
        continue;
      }
      std::int64_t v = 0;
      auto [ptr, ec] = std::from_chars(t.text.data(), t.text.data() + t.text.size(), v);
      if (ec != std::errc() || ptr != t.text.data() + t.text.size()) {
        diags.error(t.loc, fmt::format("size {} is too large in the shape of field '{}'", t.text, f.name));
        continue;
      }
      d.kind = DimKind::Fixed;
      d.size = v;
    } else if (is_identifier(t.text)) {
      if (!(t.text[0] >= 'A' && t.text[0] <= 'Z')) {
        diags.error(t.loc, fmt::format("shape symbol '{}' of field '{}' must start with an upper-case letter",
                                       t.text, f.name));
        continue;
      }
      d.kind = DimKind::Symbol;
      d.symbol = t.text;
    } else {
      diags.error(t.loc, fmt::format("invalid shape entry '{}' in field '{}'; expected '...', a non-negative "
                                     "integer or an upper-case symbol",
                                     t.text, f.name));
      continue;
    }
    f.dims.push_back(std::move(d));
  }
}

const char* expected_text(ValueType t) {
  switch (t) {
    case ValueType::Int: return "an integer";
    case ValueType::Float: return "a number";
    case ValueType::Bool: return "true or false";
    default: return "a value";
  }
}

// What a default of type `t` must be, when `v` is not one; nullopt when it is.
// A number out of its type's range is refused: the C++ compiler would only
// warn and wrap it (an int) or make it inf or 0 (a float).
std::optional<std::string> default_problem(ValueType t, std::string_view v) {
  switch (t) {
    case ValueType::String: return std::nullopt;
    case ValueType::Int: {
      if (!is_integer_text(v)) return std::string(expected_text(t));
      std::int64_t x = 0;
      if (std::from_chars(v.data(), v.data() + v.size(), x).ec != std::errc())
        return "an integer from -9223372036854775808 to 9223372036854775807 (int64)";
      return std::nullopt;
    }
    case ValueType::Float: {
      if (!is_float_text(v)) return std::string(expected_text(t));
      if (v.front() == '+') v.remove_prefix(1);  // from_chars takes no '+'
      double x = 0;
      if (std::from_chars(v.data(), v.data() + v.size(), x).ec != std::errc())
        return "a number within the range of a double (at most about 1.8e308 in magnitude; other than 0, at "
               "least about 4.9e-324)";
      return std::nullopt;
    }
    case ValueType::Bool:
      if (v == "true" || v == "false") return std::nullopt;
      return std::string(expected_text(t));
    default: return std::string(expected_text(t));
  }
}

void check_default(const Field& f, Diagnostics& diags) {
  if (!f.default_value) return;
  if (f.kind == FieldKind::Tensor) {
    diags.error(f.default_loc, fmt::format("tensor field '{}' cannot have a default", f.name));
    return;
  }
  if (f.kind == FieldKind::TensorClass) {
    diags.error(f.default_loc, fmt::format("tensorclass field '{}' cannot have a default", f.name));
    return;
  }
  const std::string spelling = value_type_spelling(f.value_type, f.element_type);
  const std::string type = f.kind == FieldKind::NonTensorStack ? "NonTensorStack<" + spelling + ">" : spelling;
  if (f.value_type == ValueType::List) {
    if (!f.default_is_list) {
      diags.error(f.default_loc, fmt::format("invalid default '{}' for {} field '{}'; expected a list, e.g. []",
                                             *f.default_value, type, f.name));
      return;
    }
    for (const auto& item : f.default_items) {
      if (const auto expected = default_problem(f.element_type, item)) {
        diags.error(f.default_loc, fmt::format("invalid list item '{}' in the default of {} field '{}'; expected {}",
                                               item, type, f.name, *expected));
        return;
      }
    }
    return;
  }
  if (f.default_is_list) {
    diags.error(f.default_loc, fmt::format("invalid default {} for {} field '{}'; expected {}",
                                           *f.default_value, type, f.name, expected_text(f.value_type)));
    return;
  }
  if (const auto expected = default_problem(f.value_type, *f.default_value)) {
    diags.error(f.default_loc, fmt::format("invalid default '{}' for {} field '{}'; expected {}",
                                           *f.default_value, type, f.name, *expected));
  }
}

}  // namespace

void validate(Schema& s, const ExternalClasses& externals, Diagnostics& diags) {
  check_namespace(s, diags);
  const std::string module = python_module_of(s);

  std::map<std::string, std::size_t> local;  // name -> index of first declaration
  for (std::size_t ci = 0; ci < s.classes.size(); ++ci) {
    Class& c = s.classes[ci];
    check_name(c.name, c.loc, "class", diags);
    auto [it, inserted] = local.emplace(c.name, ci);
    if (!inserted)
      diags.error(c.loc, fmt::format("duplicate class '{}' (first declared at {})", c.name,
                                     where(s.classes[it->second].loc)));
    c.cpp_name = s.ns.empty() ? c.name : s.ns + "::" + c.name;
    c.python_type = fmt::format("<class '{}{}{}'>", module, module.empty() ? "" : ".", c.name);

    if (c.batch_names) {
      std::set<std::string> seen;
      for (const auto& b : *c.batch_names) {
        if (!is_identifier(b))
          diags.error(c.batch_loc, fmt::format("invalid batch dim name '{}' in class '{}'", b, c.name));
        else if (!seen.insert(b).second)
          diags.error(c.batch_loc, fmt::format("duplicate batch dim name '{}' in class '{}'", b, c.name));
      }
    }
  }

  for (Class& c : s.classes) {
    std::map<std::string, const Field*> seen;
    for (Field& f : c.fields) {
      bool name_ok = true;
      f.cpp_name = f.name;
      if (!is_identifier(f.name)) {
        diags.error(f.loc, fmt::format("invalid field name '{}' in class '{}': not an identifier (ASCII letters, "
                                       "digits and '_', not starting with a digit)",
                                       f.name, c.name));
        name_ok = false;
      } else if (auto why = reserved_field_name_reason(f.name)) {
        diags.error(f.loc, fmt::format("field name '{}' in class '{}' is reserved: {}", f.name, c.name, *why));
        name_ok = false;
      } else if (s.frontend == Frontend::Yaml && cpp_member_takes_suffix(f.name, c.name)) {
        f.cpp_name = f.name + "_";
      }
      if (name_ok) {
        auto [it, inserted] = seen.emplace(f.name, &f);
        if (!inserted)
          diags.error(f.loc, fmt::format("duplicate field '{}' in class '{}' (first declared at {})", f.name, c.name,
                                         where(it->second->loc)));
      }

      switch (f.kind) {
        case FieldKind::Tensor:
          if (f.dtype && !is_known_dtype(*f.dtype))
            diags.error(f.dtype_loc, fmt::format("unknown dtype '{}' for field '{}'; expected one of {}", *f.dtype,
                                                 f.name, fmt::join(known_dtypes(), ", ")));
          if (f.shape) check_dims(f, diags);
          break;
        case FieldKind::TensorClass: {
          const SourceLoc tl = f.type_loc.file.empty() ? f.loc : f.type_loc;
          if (auto it = local.find(f.type_name); it != local.end()) {
            f.type_cpp = s.classes[it->second].cpp_name;
            f.type_python = module;
            f.type_python_form = s.python_form;
          } else if (auto ext = externals.find(f.type_name); ext != externals.end()) {
            f.type_cpp = ext->second.cpp_name;
            f.type_python = ext->second.python_module;
            f.type_python_form = ext->second.python_form;
          } else {
            diags.error(tl, fmt::format("unknown type '{}' for field '{}'; expected a tensorclass of this schema or "
                                        "its imports, tensor, string, int, float, bool or list<...>",
                                        f.type_name, f.name));
          }
          break;
        }
        case FieldKind::NonTensor:
        case FieldKind::NonTensorStack:
          break;
      }
      check_default(f, diags);
    }
  }

  // A C++ spelling with the suffix must not be another field's name.
  for (Class& c : s.classes) {
    std::map<std::string, const Field*> by_name;
    for (const Field& f : c.fields) by_name.emplace(f.name, &f);
    for (const Field& f : c.fields) {
      if (f.cpp_name == f.name) continue;
      if (auto it = by_name.find(f.cpp_name); it != by_name.end())
        diags.error(f.loc, fmt::format("field '{}' in class '{}' is spelled '{}' in C++ ({}), which is the name of "
                                       "field '{}' (declared at {}); rename one of them",
                                       f.name, c.name, f.cpp_name, cpp_suffix_reason(f.name, c.name), f.cpp_name,
                                       where(it->second->loc)));
    }
  }

  // Emission order: nested classes before their users (DFS in declaration
  // order); a cycle is an error reported at the field that closes it. The
  // DFS recurses once per nesting level, hence the bound.
  constexpr std::size_t kMaxNesting = 256;
  enum class Mark { None, Active, Done };
  std::vector<Mark> mark(s.classes.size(), Mark::None);
  std::vector<std::size_t> stack;
  s.emit_order.clear();
  std::function<void(std::size_t)> visit = [&](std::size_t ci) {
    mark[ci] = Mark::Active;
    stack.push_back(ci);
    for (const Field& f : s.classes[ci].fields) {
      if (f.kind != FieldKind::TensorClass) continue;
      auto it = local.find(f.type_name);
      if (it == local.end()) continue;
      std::size_t dep = it->second;
      if (mark[dep] == Mark::Active) {
        std::string path;
        auto from = std::find(stack.begin(), stack.end(), dep);
        for (auto p = from; p != stack.end(); ++p) path += s.classes[*p].name + " -> ";
        path += s.classes[dep].name;
        diags.error(f.type_loc.file.empty() ? f.loc : f.type_loc,
                    fmt::format("cycle between tensorclasses: {} (field '{}' of class '{}')", path, f.name,
                                s.classes[ci].name));
      } else if (mark[dep] == Mark::None && stack.size() >= kMaxNesting) {
        diags.error(f.type_loc.file.empty() ? f.loc : f.type_loc,
                    fmt::format("tensorclasses nest deeper than {} levels (field '{}' of class '{}')", kMaxNesting,
                                f.name, s.classes[ci].name));
      } else if (mark[dep] == Mark::None) {
        visit(dep);
      }
    }
    stack.pop_back();
    mark[ci] = Mark::Done;
    s.emit_order.push_back(ci);
  };
  for (std::size_t ci = 0; ci < s.classes.size(); ++ci) {
    if (local.at(s.classes[ci].name) != ci) continue;  // duplicate, reported
    if (mark[ci] == Mark::None) visit(ci);
  }
}

}  // namespace tcgen
