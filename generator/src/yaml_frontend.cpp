#include "tcgen/yaml_frontend.h"

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <yaml-cpp/eventhandler.h>
#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <map>
#include <sstream>
#include <string_view>

#include "tcgen/names.h"

namespace tcgen {
namespace {

std::size_t edit_distance(std::string_view a, std::string_view b) {
  std::vector<std::size_t> row(b.size() + 1);
  for (std::size_t j = 0; j <= b.size(); ++j) row[j] = j;
  for (std::size_t i = 1; i <= a.size(); ++i) {
    std::size_t diag = row[0];
    row[0] = i;
    for (std::size_t j = 1; j <= b.size(); ++j) {
      std::size_t up = row[j];
      row[j] = std::min({row[j] + 1, row[j - 1] + 1, diag + (a[i - 1] == b[j - 1] ? 0 : 1)});
      diag = up;
    }
  }
  return row[b.size()];
}

// Docs are compared across frontends: no trailing blank lines or spaces
// (a YAML block scalar keeps its final newline).
std::string trim_doc(std::string doc) {
  while (!doc.empty() && (doc.back() == '\n' || doc.back() == ' ' || doc.back() == '\r' || doc.back() == '\t'))
    doc.pop_back();
  return doc;
}

class YamlReader {
 public:
  YamlReader(const std::string& file, Diagnostics& diags) : file_(file), diags_(diags) {}

  SourceLoc loc(const YAML::Node& node, const SourceLoc& fallback = {}) const {
    const YAML::Mark m = node.Mark();
    if (m.is_null() || m.line < 0) return fallback.file.empty() ? SourceLoc{file_, 0, 0} : fallback;
    return SourceLoc{file_, m.line + 1, m.column + 1};
  }
  SourceLoc loc(const YAML::Mark& m) const { return SourceLoc{file_, m.line + 1, m.column + 1}; }

  void error(const SourceLoc& l, std::string msg) { diags_.error(l, std::move(msg)); }

  // Reports an unknown key, suggesting the closest known one.
  void unknown_key(const YAML::Node& key, std::string_view where,
                   const std::vector<std::string_view>& known) {
    const std::string k = key.Scalar();
    std::string msg = fmt::format("unknown key '{}' in {}", k, where);
    std::string_view best;
    std::size_t best_d = 3;
    for (auto cand : known) {
      std::size_t d = edit_distance(k, cand);
      if (d < best_d) {
        best_d = d;
        best = cand;
      }
    }
    if (!best.empty()) msg += fmt::format("; did you mean '{}'?", best);
    else msg += fmt::format("; expected one of {}", fmt::join(known, ", "));
    error(loc(key), std::move(msg));
  }

  bool expect_scalar(const YAML::Node& node, const SourceLoc& at, std::string_view what) {
    if (node.IsScalar()) return true;
    error(loc(node, at), fmt::format("{} must be a scalar", what));
    return false;
  }

  // A true/false key's value; nullopt (and an error naming `what`) otherwise.
  std::optional<bool> expect_bool(const YAML::Node& node, const SourceLoc& at, std::string_view what) {
    if (!expect_scalar(node, at, what)) return std::nullopt;
    bool b = false;
    if (!YAML::convert<bool>::decode(node, b)) {
      error(loc(node, at), fmt::format("{} must be true or false, not '{}'", what, node.Scalar()));
      return std::nullopt;
    }
    return b;
  }

  Schema read(const YAML::Node& root) {
    Schema s;
    s.file = file_;
    s.frontend = Frontend::Yaml;
    const SourceLoc file_loc{file_, 1, 1};
    if (!root.IsMap()) {
      error(root.IsDefined() && !root.IsNull() ? loc(root, file_loc) : file_loc,
            "a schema must be a mapping with 'namespace' and 'tensorclasses'");
      return s;
    }
    static const std::vector<std::string_view> top_keys = {"namespace", "python_module", "python_form", "imports",
                                                           "tensorclasses"};
    bool have_ns = false;
    bool have_classes = false;
    for (auto it = root.begin(); it != root.end(); ++it) {
      const YAML::Node key = it->first;
      const YAML::Node value = it->second;
      const SourceLoc kl = loc(key);
      const std::string k = key.IsScalar() ? key.Scalar() : std::string();
      if (k == "namespace") {
        have_ns = true;
        if (!expect_scalar(value, kl, "'namespace'")) continue;
        s.ns = value.Scalar();
        s.ns_loc = loc(value, kl);
      } else if (k == "python_module") {
        if (!expect_scalar(value, kl, "'python_module'")) continue;
        s.python_module = value.Scalar();
      } else if (k == "python_form") {
        if (!expect_scalar(value, kl, "'python_form'")) continue;
        s.python_form = parse_python_form(value.Scalar());
        if (!s.python_form) error(loc(value, kl), unknown_python_form(value.Scalar()));
      } else if (k == "imports") {
        if (!value.IsSequence()) {
          error(loc(value, kl), "'imports' must be a sequence of schema file names");
          continue;
        }
        for (const auto& item : value) {
          if (!expect_scalar(item, kl, "an import")) continue;
          s.imports.push_back({item.Scalar(), loc(item, kl)});
        }
      } else if (k == "tensorclasses") {
        have_classes = true;
        if (!value.IsMap()) {
          error(loc(value, kl), "'tensorclasses' must be a mapping of class names to classes");
          continue;
        }
        for (auto c = value.begin(); c != value.end(); ++c) read_class(s, c->first, c->second);
      } else {
        unknown_key(key, "schema", top_keys);
      }
    }
    if (!have_ns) error(file_loc, "missing 'namespace'");
    if (!have_classes) error(file_loc, "missing 'tensorclasses'");
    return s;
  }

  void read_class(Schema& s, const YAML::Node& key, const YAML::Node& value) {
    Class c;
    c.loc = loc(key);
    if (!expect_scalar(key, c.loc, "a class name")) return;
    c.name = key.Scalar();
    if (value.IsNull()) {
      s.classes.push_back(std::move(c));
      return;
    }
    if (!value.IsMap()) {
      error(loc(value, c.loc), fmt::format("class '{}' must be a mapping", c.name));
      return;
    }
    static const std::vector<std::string_view> class_keys = {"doc", "batch", "fields"};
    for (auto it = value.begin(); it != value.end(); ++it) {
      const YAML::Node k = it->first;
      const YAML::Node v = it->second;
      const SourceLoc kl = loc(k);
      const std::string ks = k.IsScalar() ? k.Scalar() : std::string();
      if (ks == "doc") {
        if (expect_scalar(v, kl, "'doc'")) c.doc = trim_doc(v.Scalar());
      } else if (ks == "batch") {
        c.batch_loc = loc(v, kl);
        if (!v.IsSequence()) {
          error(c.batch_loc, "'batch' must be a sequence of batch dim names");
          continue;
        }
        std::vector<std::string> names;
        for (const auto& item : v) {
          if (expect_scalar(item, kl, "a batch dim name")) names.push_back(item.Scalar());
        }
        c.batch_names = std::move(names);
      } else if (ks == "fields") {
        if (v.IsNull()) continue;
        if (!v.IsMap()) {
          error(loc(v, kl), fmt::format("'fields' of class '{}' must be a mapping", c.name));
          continue;
        }
        for (auto f = v.begin(); f != v.end(); ++f) read_field(c, f->first, f->second);
      } else {
        unknown_key(k, fmt::format("class '{}'", c.name), class_keys);
      }
    }
    s.classes.push_back(std::move(c));
  }

  void read_field(Class& c, const YAML::Node& key, const YAML::Node& value) {
    Field f;
    f.loc = loc(key);
    if (!expect_scalar(key, f.loc, "a field name")) return;
    f.name = key.Scalar();
    if (value.IsNull()) {  // `name:` alone: a tensor of any dtype and shape
      c.fields.push_back(std::move(f));
      return;
    }
    if (!value.IsMap()) {
      error(loc(value, f.loc),
            fmt::format("field '{}' must be a mapping, e.g. {{dtype: float32, shape: [...]}}", f.name));
      return;
    }
    static const std::vector<std::string_view> field_keys = {"dtype",   "shape", "type", "optional",
                                                             "unbatched", "default", "doc"};
    std::optional<YAML::Node> dk, sk, uk;
    for (auto it = value.begin(); it != value.end(); ++it) {
      const YAML::Node k = it->first;
      const YAML::Node v = it->second;
      const SourceLoc kl = loc(k);
      const std::string ks = k.IsScalar() ? k.Scalar() : std::string();
      if (ks == "dtype") {
        dk = k;
        if (!expect_scalar(v, kl, "'dtype'")) continue;
        f.dtype = v.Scalar();
        f.dtype_loc = loc(v, kl);
      } else if (ks == "shape") {
        sk = k;
        f.shape_loc = loc(v, kl);
        if (!v.IsSequence()) {
          error(f.shape_loc, fmt::format("'shape' of field '{}' must be a sequence, e.g. [..., H, W]", f.name));
          continue;
        }
        std::vector<DimToken> dims;
        for (const auto& item : v) {
          if (!item.IsScalar()) {
            error(loc(item, f.shape_loc), "a shape entry must be '...', an integer or an upper-case symbol");
            continue;
          }
          dims.push_back({item.Scalar(), loc(item, f.shape_loc)});
        }
        f.shape = std::move(dims);
      } else if (ks == "type") {
        if (!expect_scalar(v, kl, "'type'")) continue;
        f.type_loc = loc(v, kl);
        const std::string t = v.Scalar();
        if (t == "tensor") {
          f.kind = FieldKind::Tensor;
        } else if (auto vt = parse_value_type(t)) {
          f.kind = FieldKind::NonTensor;
          f.value_type = vt->type;
          f.element_type = vt->element;
        } else if (t.rfind("NonTensorStack<", 0) == 0) {
          // One value per batch element, as tensordict's NonTensorStack.
          const auto inner = t.back() == '>' ? parse_value_type(t.substr(15, t.size() - 16)) : std::nullopt;
          if (inner && inner->type != ValueType::List) {
            f.kind = FieldKind::NonTensorStack;
            f.value_type = inner->type;
          } else {
            error(f.type_loc, fmt::format("unknown NonTensorStack type '{}'; expected NonTensorStack<string>, "
                                          "NonTensorStack<int>, NonTensorStack<float> or NonTensorStack<bool>",
                                          t));
          }
        } else if (t.rfind("list<", 0) == 0) {
          error(f.type_loc, fmt::format("unknown list type '{}'; expected list<string>, list<int>, "
                                        "list<float> or list<bool>",
                                        t));
        } else {
          f.kind = FieldKind::TensorClass;
          f.type_name = t;
        }
      } else if (ks == "optional") {
        if (const auto b = expect_bool(v, kl, "'optional'")) f.optional = *b;
      } else if (ks == "unbatched") {
        uk = k;
        if (const auto b = expect_bool(v, kl, "'unbatched'")) f.unbatched = *b;
      } else if (ks == "default") {
        f.default_loc = loc(v, kl);
        if (v.IsScalar()) {
          f.default_value = v.Scalar();
        } else if (v.IsSequence()) {
          std::string text = "[";
          for (const auto& item : v) {
            if (!item.IsScalar()) {
              error(loc(item, f.default_loc), "a list default may only contain scalars");
              continue;
            }
            if (!f.default_items.empty()) text += ", ";
            text += item.Scalar();
            f.default_items.push_back(item.Scalar());
          }
          f.default_value = text + "]";
          f.default_is_list = true;
        } else {
          error(f.default_loc, fmt::format("'default' of field '{}' must be a scalar or a list", f.name));
        }
      } else if (ks == "doc") {
        if (expect_scalar(v, kl, "'doc'")) f.doc = trim_doc(v.Scalar());
      } else {
        unknown_key(k, fmt::format("field '{}'", f.name), field_keys);
      }
    }
    if (f.kind != FieldKind::Tensor) {
      if (dk) error(loc(*dk), fmt::format("'dtype' applies only to tensor fields, but field '{}' has type '{}'",
                                          f.name, f.kind == FieldKind::TensorClass ? f.type_name : value_type_spelling(f.value_type, f.element_type)));
      if (sk) error(loc(*sk), fmt::format("'shape' applies only to tensor fields, but field '{}' has type '{}'",
                                          f.name, f.kind == FieldKind::TensorClass ? f.type_name : value_type_spelling(f.value_type, f.element_type)));
      if (uk) error(loc(*uk), fmt::format("'unbatched' applies only to tensor fields, but field '{}' has type '{}'",
                                          f.name, f.kind == FieldKind::TensorClass ? f.type_name : value_type_spelling(f.value_type, f.element_type)));
    }
    c.fields.push_back(std::move(f));
  }

 private:
  std::string file_;
  Diagnostics& diags_;
};

// YAML aliases repeat a node wherever they stand: a small file can name the
// same long text or big mapping millions of times. The whole document, as its
// readers will see it, must stay within these bounds. yaml-cpp spends some
// hundreds of bytes per node it builds (a 4 MiB file of "[1,1,...]" took
// 1.2 GB), so the bounds are checked on its parse events, before a node is
// built: the tree and what is generated from it stay within a few hundred MB.
// A real schema is a few hundred nodes.
constexpr std::size_t kMaxExpandedNodes = 100'000;
constexpr std::size_t kMaxExpandedBytes = 4u << 20;

// Counts the nodes and scalar bytes of a document, an alias counting as all
// it names; throws TooLarge at the first bound passed.
class ExpansionCounter : public YAML::EventHandler {
 public:
  struct TooLarge {};

  void OnDocumentStart(const YAML::Mark&) override {}
  void OnDocumentEnd() override {}
  void OnNull(const YAML::Mark&, YAML::anchor_t anchor) override { leaf(anchor, 0); }
  void OnScalar(const YAML::Mark&, const std::string&, YAML::anchor_t anchor, const std::string& value) override {
    leaf(anchor, value.size());
  }
  // An alias of a collection still open names itself: it expands for ever.
  void OnAlias(const YAML::Mark&, YAML::anchor_t anchor) override {
    const auto it = anchors_.find(anchor);
    if (it == anchors_.end()) throw TooLarge{};
    add(it->second);
  }
  void OnSequenceStart(const YAML::Mark&, const std::string&, YAML::anchor_t anchor,
                       YAML::EmitterStyle::value) override {
    open(anchor);
  }
  void OnSequenceEnd() override { close(); }
  void OnMapStart(const YAML::Mark&, const std::string&, YAML::anchor_t anchor, YAML::EmitterStyle::value) override {
    open(anchor);
  }
  void OnMapEnd() override { close(); }

 private:
  struct Size {
    std::size_t nodes = 0, bytes = 0;
  };

  // Each term is within the bounds, so the sums cannot overflow before the check.
  void add(const Size& s) {
    total_.nodes += s.nodes;
    total_.bytes += s.bytes;
    if (total_.nodes > kMaxExpandedNodes || total_.bytes > kMaxExpandedBytes) throw TooLarge{};
  }
  void leaf(YAML::anchor_t anchor, std::size_t bytes) {
    const Size s{1, bytes};
    add(s);
    if (anchor != YAML::NullAnchor) anchors_[anchor] = s;
  }
  // A collection's size is what the total grew by between its start and end.
  void open(YAML::anchor_t anchor) {
    add({1, 0});
    open_.push_back({anchor, {total_.nodes - 1, total_.bytes}});
  }
  void close() {
    const auto [anchor, start] = open_.back();
    open_.pop_back();
    if (anchor != YAML::NullAnchor) anchors_[anchor] = {total_.nodes - start.nodes, total_.bytes - start.bytes};
  }

  Size total_;
  std::vector<std::pair<YAML::anchor_t, Size>> open_;
  std::map<YAML::anchor_t, Size> anchors_;
};

// False when the first document of `text` expands past the bounds.
bool within_expansion_bounds(const std::string& text) {
  std::istringstream in(text);
  YAML::Parser parser(in);
  ExpansionCounter counter;
  try {
    parser.HandleNextDocument(counter);
  } catch (const ExpansionCounter::TooLarge&) {
    return false;
  }
  return true;
}

}  // namespace

Schema parse_yaml_schema(const std::string& file, const std::string& text, Diagnostics& diags) {
  YamlReader reader(file, diags);
  Schema unread;
  unread.file = file;
  YAML::Node root;
  try {
    if (!within_expansion_bounds(text)) {
      diags.error(SourceLoc{file, 1, 1},
                  fmt::format("the schema expands to more than {} nodes or {} MiB of text (YAML aliases repeat what "
                              "they name); nothing was read",
                              kMaxExpandedNodes, kMaxExpandedBytes >> 20));
      return unread;
    }
    root = YAML::Load(text);
  } catch (const YAML::ParserException& e) {
    diags.error(reader.loc(e.mark), fmt::format("invalid YAML: {}", e.msg));
    return unread;
  }
  try {
    return reader.read(root);
  } catch (const YAML::Exception& e) {
    diags.error(reader.loc(e.mark), fmt::format("invalid schema: {}", e.msg));
    return unread;
  }
}

}  // namespace tcgen
