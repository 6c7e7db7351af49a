// The pickle subset (pickle.h). The reader builds Python's object graph first
// (containers shared through the memo, as Python shares them, so that an
// APPEND after a BINGET lands where Python's would; the objects live in one
// arena and refer to each other by index, so a cycle or a deep chain costs no
// recursion and leaks nothing), then expands it into
// JSON under a budget: shared references can make a small pickle name a huge
// value, and a bound proportional to the message keeps the expansion
// (and every allocation) in line with what the peer actually sent.
//
// Memory while reading is bounded per opcode: an object is 32 bytes in an
// arena that never reallocates (a deque), a str is a view of the message, the
// memo is an array for the indices Python's pickler writes (0, 1, 2, ...),
// and at most kMaxStackValues values wait on the stack: 20 MB of EMPTY_LIST
// once took 2.86 GB (125 bytes per byte). A dict's keys are found through a
// hash index, so a dict of n keys costs O(n) (ordered_json searches linearly).
#include "distributed/pickle.h"

#include <nlohmann/json.hpp>

#include <fmt/format.h>

#include <bit>
#include <cmath>
#include <cstring>
#include <deque>
#include <limits>
#include <unordered_map>
#include <utility>
#include <variant>
#include <vector>

#include "core/nesting.h"  // kMaxNestingDepth
#include "tensordict/errors.h"

namespace tensordict::dist::pickle {

namespace {

// The opcodes of the subset (Python's Lib/pickle.py names).
enum Op : unsigned char {
  MARK = '(', STOP = '.', NONE = 'N', BININT = 'J', BININT1 = 'K', BININT2 = 'M', BINFLOAT = 'G',
  BINUNICODE = 'X', EMPTY_LIST = ']', APPEND = 'a', APPENDS = 'e', EMPTY_DICT = '}', SETITEM = 's',
  SETITEMS = 'u', EMPTY_TUPLE = ')', TUPLE = 't', BINGET = 'h', LONG_BINGET = 'j', BINPUT = 'q',
  LONG_BINPUT = 'r', PROTO = 0x80, TUPLE1 = 0x85, TUPLE2 = 0x86, TUPLE3 = 0x87, NEWTRUE = 0x88,
  NEWFALSE = 0x89, LONG1 = 0x8a, SHORT_BINUNICODE = 0x8c, BINUNICODE8 = 0x8d, STACK_GLOBAL = 0x93,
  MEMOIZE = 0x94, FRAME = 0x95,
};

// Each parsed value may expand to this many units (a node, or a byte of a
// string) per byte of the message, plus a constant for tiny messages.
constexpr std::size_t kExpansionPerByte = 8, kExpansionSlack = 4096;

// The most values the stack may hold at once. Python's pickler batches
// APPENDS and SETITEMS by 1000 items, so only a huge tuple (MARK ... TUPLE)
// comes near it; a run of pushes that nothing consumes is refused here
// instead of growing with the message.
constexpr std::size_t kMaxStackValues = std::size_t{1} << 20;

// An object: its index in the arena.
using Ref = std::size_t;
// A str: a view of the message (valid while it is read).
using Str = std::string_view;
// A class reference: the str objects naming its module and name.
struct Class {
  Ref module, name;
};
struct List {
  std::vector<Ref> items;
};
struct Tuple {
  std::vector<Ref> items;
};
struct Dict {
  std::vector<std::pair<Ref, Ref>> items;
};
// One Python object of the subset (32 bytes).
struct Object {
  std::variant<std::nullptr_t, bool, int64_t, double, Str, Tuple, List, Dict, Class> v;
};
static_assert(sizeof(Object) <= 32, "an opcode of one byte makes an Object: keep it small");

class Reader {
 public:
  Reader(std::string_view bytes, const std::string& context) : in_(bytes), context_(context) {}

  Json run() {
    const Ref result = parse();
    std::size_t budget = in_.size() * kExpansionPerByte + kExpansionSlack;
    return expand(result, nullptr, 0, budget);
  }

 private:
  [[noreturn]] void fail(const std::string& what) const {
    throw RuntimeError(fmt::format("{}: malformed pickle at byte {} (opcode 0x{:02x}): {}", context_, op_at_, op_, what));
  }
  // A well-formed pickle whose value the subset refuses.
  [[noreturn]] void refuse(const std::string& what) const {
    throw RuntimeError(fmt::format("{}: refused pickle: {}", context_, what));
  }

  std::string_view take(uint64_t n) {
    if (n > in_.size() - pos_) {
      fail(fmt::format("needs {} more bytes, but the message has {} left", n, in_.size() - pos_));
    }
    std::string_view out = in_.substr(pos_, static_cast<std::size_t>(n));
    pos_ += static_cast<std::size_t>(n);
    return out;
  }
  uint64_t little(std::size_t n) {
    const std::string_view b = take(n);
    uint64_t v = 0;
    for (std::size_t i = n; i-- > 0;) v = (v << 8) | static_cast<unsigned char>(b[i]);
    return v;
  }

  Ref pop() {
    if (stack_.size() <= floor()) fail("the stack is empty");
    const Ref out = stack_.back();
    stack_.pop_back();
    return out;
  }
  std::size_t floor() const { return marks_.empty() ? 0 : marks_.back(); }
  // The objects pushed since the last MARK, which is dropped.
  std::vector<Ref> pop_mark() {
    if (marks_.empty()) fail("no MARK precedes it");
    const std::size_t from = marks_.back();
    marks_.pop_back();
    std::vector<Ref> out(stack_.begin() + static_cast<std::ptrdiff_t>(from), stack_.end());
    stack_.resize(from);
    return out;
  }
  Ref top() {
    if (stack_.size() <= floor()) fail("the stack is empty");
    return stack_.back();
  }
  void push_ref(Ref r) {
    if (stack_.size() >= kMaxStackValues) {
      fail(fmt::format("more than {} values wait on the stack", kMaxStackValues));
    }
    stack_.push_back(r);
  }
  void push(Object o) {
    push_ref(arena_.size());  // (checked before the arena grows)
    arena_.push_back(std::move(o));
  }

  List& list_at(Ref r) {
    auto* l = std::get_if<List>(&arena_[r].v);
    if (!l) fail("appends to something that is not a list");
    return *l;
  }
  Dict& dict_at(Ref r) {
    auto* d = std::get_if<Dict>(&arena_[r].v);
    if (!d) fail("sets an item of something that is not a dict");
    return *d;
  }
  // Python's memo: a dict of index -> object. The indices Python writes are
  // 0, 1, 2, ... (MEMOIZE is always the next one): those live in an array,
  // any other in a map. (Deques: growing never holds two copies.)
  std::size_t memo_size() const { return memo_.size() + sparse_memo_.size(); }
  void memo_put(uint64_t index) {
    if (stack_.size() <= floor()) fail("memoizes an empty stack");
    if (index < memo_.size()) {
      memo_[static_cast<std::size_t>(index)] = stack_.back();
    } else if (index == memo_.size()) {
      memo_.push_back(stack_.back());
      sparse_memo_.erase(index);
    } else {
      sparse_memo_[index] = stack_.back();
    }
  }
  void memo_get(uint64_t index) {
    if (index < memo_.size()) return push_ref(memo_[static_cast<std::size_t>(index)]);
    auto it = sparse_memo_.find(index);
    if (it == sparse_memo_.end()) fail(fmt::format("reads memo entry {}, which was never stored", index));
    push_ref(it->second);
  }
  // A str: Python decodes it as UTF-8, and JSON holds only valid UTF-8
  // (its writer throws on anything else), so anything else is refused here.
  Str text(uint64_t n) {
    const std::string_view s = take(n);
    for (std::size_t i = 0; i < s.size();) {
      const auto c = static_cast<unsigned char>(s[i]);
      std::size_t extra = 0;
      uint32_t cp = c;
      if (c >= 0xf0 && c <= 0xf4) {
        extra = 3;
        cp = c & 0x07;
      } else if (c >= 0xe0) {
        extra = c <= 0xef ? 2 : 9;
        cp = c & 0x0f;
      } else if (c >= 0xc2) {
        extra = 1;
        cp = c & 0x1f;
      } else if (c >= 0x80) {
        extra = 9;
      }
      if (extra > 3 || extra >= s.size() - i) {
        fail(fmt::format("a str that is not valid UTF-8 (byte {} of it)", i));
      }
      for (std::size_t k = 1; k <= extra; ++k) {
        const auto next = static_cast<unsigned char>(s[i + k]);
        if ((next & 0xc0) != 0x80) fail(fmt::format("a str that is not valid UTF-8 (byte {} of it)", i + k));
        cp = (cp << 6) | (next & 0x3f);
      }
      const uint32_t least[] = {0, 0x80, 0x800, 0x10000};
      if (cp < least[extra] || cp > 0x10ffff || (cp >= 0xd800 && cp <= 0xdfff)) {
        fail(fmt::format("a str that is not valid UTF-8 (byte {} of it: an overlong form, a surrogate or past U+10FFFF)", i));
      }
      i += extra + 1;
    }
    return s;
  }
  void tuple_of(std::vector<Ref> items) {
    push(Object{Tuple{std::move(items)}});
  }

  Ref parse() {
    for (;;) {
      if (pos_ >= in_.size()) {
        op_at_ = pos_;
        op_ = 0;
        fail("the message ends before STOP");
      }
      op_at_ = pos_;
      op_ = static_cast<unsigned char>(in_[pos_++]);
      switch (op_) {
        case PROTO: {
          const uint64_t proto = little(1);
          if (proto < 2 || proto > 5) fail(fmt::format("protocol {} (expected 2 to 5)", proto));
          break;
        }
        case FRAME: little(8); break;  // frames only group reads: the bytes follow either way
        case STOP: {
          Ref out = pop();
          if (!stack_.empty() || !marks_.empty()) fail("STOP leaves values or marks on the stack");
          if (pos_ != in_.size()) fail(fmt::format("{} bytes follow STOP", in_.size() - pos_));
          return out;
        }
        case MARK:
          if (marks_.size() >= detail::kMaxNestingDepth) {
            fail(fmt::format("marks nest deeper than {}", detail::kMaxNestingDepth));
          }
          marks_.push_back(stack_.size());
          break;
        case NONE: push(Object{nullptr}); break;
        case NEWTRUE: push(Object{true}); break;
        case NEWFALSE: push(Object{false}); break;
        case BININT1: push(Object{static_cast<int64_t>(little(1))}); break;
        case BININT2: push(Object{static_cast<int64_t>(little(2))}); break;
        case BININT: push(Object{static_cast<int64_t>(static_cast<int32_t>(static_cast<uint32_t>(little(4))))}); break;
        case LONG1: {
          const uint64_t n = little(1);
          if (n > 8) fail(fmt::format("an integer of {} bytes, wider than the 64 bits this reader holds", n));
          const std::string_view b = take(n);
          uint64_t v = 0;
          for (std::size_t i = b.size(); i-- > 0;) v = (v << 8) | static_cast<unsigned char>(b[i]);
          // Sign-extend the two's complement value of n bytes.
          if (n > 0 && n < 8 && (static_cast<unsigned char>(b.back()) & 0x80)) v |= ~uint64_t{0} << (8 * n);
          push(Object{static_cast<int64_t>(v)});
          break;
        }
        case BINFLOAT: {
          const std::string_view b = take(8);
          uint64_t bits = 0;
          for (char c : b) bits = (bits << 8) | static_cast<unsigned char>(c);  // big-endian
          push(Object{std::bit_cast<double>(bits)});
          break;
        }
        case SHORT_BINUNICODE: push(Object{text(little(1))}); break;
        case BINUNICODE: push(Object{text(little(4))}); break;
        case BINUNICODE8: push(Object{text(little(8))}); break;
        case EMPTY_LIST: push(Object{List{}}); break;
        case EMPTY_DICT: push(Object{Dict{}}); break;
        case EMPTY_TUPLE: tuple_of({}); break;
        case TUPLE1:
        case TUPLE2:
        case TUPLE3: {
          const std::size_t n = op_ - TUPLE1 + 1;
          std::vector<Ref> items(n);
          for (std::size_t i = n; i-- > 0;) items[i] = pop();
          tuple_of(std::move(items));
          break;
        }
        case TUPLE: tuple_of(pop_mark()); break;
        case APPEND: {
          const Ref item = pop();
          list_at(top()).items.push_back(item);
          break;
        }
        case APPENDS: {
          std::vector<Ref> items = pop_mark();
          auto& list = list_at(top()).items;
          list.insert(list.end(), items.begin(), items.end());
          break;
        }
        case SETITEM: {
          const Ref value = pop();
          const Ref key = pop();
          dict_at(top()).items.emplace_back(key, value);
          break;
        }
        case SETITEMS: {
          std::vector<Ref> items = pop_mark();
          if (items.size() % 2 != 0) fail("an odd number of keys and values");
          auto& dict = dict_at(top()).items;
          for (std::size_t i = 0; i < items.size(); i += 2) dict.emplace_back(items[i], items[i + 1]);
          break;
        }
        case MEMOIZE: memo_put(memo_size()); break;
        case BINPUT: memo_put(little(1)); break;
        case LONG_BINPUT: memo_put(little(4)); break;
        case BINGET: memo_get(little(1)); break;
        case LONG_BINGET: memo_get(little(4)); break;
        case STACK_GLOBAL: {
          const Ref name = pop();
          const Ref module = pop();
          const auto* n = std::get_if<Str>(&arena_[name].v);
          const auto* m = std::get_if<Str>(&arena_[module].v);
          if (!n || !m) fail("a class reference whose module and name are not strings");
          push(Object{Class{module, name}});
          break;
        }
        default:
          fail("this opcode is outside the subset tensordict's metadata uses (dict, list, tuple, str, int, float, "
               "bool, None)");
      }
    }
  }

  // The JSON of `o`, spending `budget`; `key`: the dict key it is the value of.
  Json expand(Ref ref, const Str* key, std::size_t depth, std::size_t& budget) {
    if (depth > detail::kMaxNestingDepth) {
      refuse(fmt::format("the value nests deeper than {} levels (or holds itself)", detail::kMaxNestingDepth));
    }
    const auto spend = [&](std::size_t units) {
      if (units > budget) {
        refuse(fmt::format("shared references expand the value past {} units for a message of {} bytes",
                         in_.size() * kExpansionPerByte + kExpansionSlack, in_.size()));
      }
      budget -= units;
    };
    spend(1);
    return std::visit(
        [&](const auto& v) -> Json {
          using V = std::decay_t<decltype(v)>;
          if constexpr (std::is_same_v<V, Str>) {
            spend(v.size());
            return Json(std::string(v));
          } else if constexpr (std::is_same_v<V, Class>) {
            const Str module = std::get<Str>(arena_[v.module].v), name = std::get<Str>(arena_[v.name].v);
            if (!key || *key != "cls") {
              refuse(fmt::format("a class reference {}.{} outside a \"cls\" entry", module, name));
            }
            spend(module.size() + name.size());
            return Json(fmt::format("<class '{}.{}'>", module, name));
          } else if constexpr (std::is_same_v<V, List> || std::is_same_v<V, Tuple>) {
            Json out = Json::array();
            for (const Ref& item : v.items) out.push_back(expand(item, nullptr, depth + 1, budget));
            return out;
          } else if constexpr (std::is_same_v<V, Dict>) {
            // As Python's dict: a repeated key keeps its first position and its last value.
            Json out = Json::object();
            auto& object = out.get_ref<Json::object_t&>();
            std::unordered_map<Str, std::size_t> slots;
            for (const auto& [k, value] : v.items) {
              const auto* name = std::get_if<Str>(&arena_[k].v);
              if (!name) refuse("a dict key that is not a str");
              spend(name->size());
              Json item = expand(value, name, depth + 1, budget);
              const auto [slot, added] = slots.try_emplace(*name, object.size());
              if (added) {
                object.emplace_back(std::string(*name), std::move(item));
              } else {
                // (ordered_map's operator[] takes a key: index the vector through begin())
                (object.begin() + static_cast<std::ptrdiff_t>(slot->second))->second = std::move(item);
              }
            }
            return out;
          } else {
            return Json(v);
          }
        },
        arena_[ref].v);
  }

  std::string_view in_;
  const std::string& context_;
  std::size_t pos_ = 0, op_at_ = 0;
  unsigned op_ = 0;
  std::deque<Object> arena_;
  std::vector<Ref> stack_;
  std::vector<std::size_t> marks_;
  std::deque<Ref> memo_;
  std::unordered_map<uint64_t, Ref> sparse_memo_;
};

// Python's pickler batches APPENDS and SETITEMS by this many items.
constexpr std::size_t kBatch = 1000;

class Writer {
 public:
  Writer(Layout layout, const std::string& context) : layout_(layout), context_(context) {}

  std::string run(const Json& value) {
    write(value, Where::Other, 0);
    out_.push_back(static_cast<char>(STOP));
    // PROTO 4, then one FRAME holding the rest (Python's unpickler takes
    // frames of any size).
    std::string framed;
    framed.reserve(out_.size() + 11);
    framed.push_back(static_cast<char>(PROTO));
    framed.push_back(4);
    framed.push_back(static_cast<char>(FRAME));
    append_little(framed, out_.size(), 8);
    framed += out_;
    return framed;
  }

 private:
  // Where a value sits, for the layout's tuples and class references.
  enum class Where { Other, EntryOfLeaves, ClsValue, Leaves };

  static void append_little(std::string& s, uint64_t v, std::size_t n) {
    for (std::size_t i = 0; i < n; ++i, v >>= 8) s.push_back(static_cast<char>(v & 0xff));
  }
  void op(Op o) { out_.push_back(static_cast<char>(o)); }

  void str(std::string_view s) {
    if (s.size() < 256) {
      op(SHORT_BINUNICODE);
      append_little(out_, s.size(), 1);
    } else if (s.size() <= std::numeric_limits<uint32_t>::max()) {
      op(BINUNICODE);
      append_little(out_, s.size(), 4);
    } else {
      op(BINUNICODE8);
      append_little(out_, s.size(), 8);
    }
    out_ += s;
  }

  void integer(int64_t v) {
    if (v >= 0 && v < 256) {
      op(BININT1);
      append_little(out_, static_cast<uint64_t>(v), 1);
    } else if (v >= 0 && v < 65536) {
      op(BININT2);
      append_little(out_, static_cast<uint64_t>(v), 2);
    } else if (v >= std::numeric_limits<int32_t>::min() && v <= std::numeric_limits<int32_t>::max()) {
      op(BININT);
      append_little(out_, static_cast<uint32_t>(static_cast<int32_t>(v)), 4);
    } else {
      long1(static_cast<uint64_t>(v), v < 0);
    }
  }
  // LONG1: the shortest little-endian two's complement of the value.
  void long1(uint64_t bits, bool negative) {
    std::string b;
    append_little(b, bits, 8);
    while (b.size() > 1) {
      const auto last = static_cast<unsigned char>(b.back());
      const auto before = static_cast<unsigned char>(b[b.size() - 2]);
      if ((!negative && last == 0 && !(before & 0x80)) || (negative && last == 0xff && (before & 0x80))) {
        b.pop_back();
      } else {
        break;
      }
    }
    if (!negative && (static_cast<unsigned char>(b.back()) & 0x80)) b.push_back(0);  // an unsigned past int64
    op(LONG1);
    append_little(out_, b.size(), 1);
    out_ += b;
  }

  void write(const Json& v, Where where, std::size_t depth) {
    if (depth > detail::kMaxNestingDepth) {
      throw ValueError(fmt::format("{}: the value nests deeper than {} levels", context_, detail::kMaxNestingDepth));
    }
    const bool metadata = layout_ == Layout::ConsolidatedMetadata;
    switch (v.type()) {
      case Json::value_t::null: op(NONE); return;
      case Json::value_t::boolean: op(v.get<bool>() ? NEWTRUE : NEWFALSE); return;
      case Json::value_t::number_integer: integer(v.get<int64_t>()); return;
      case Json::value_t::number_unsigned: {
        const auto u = v.get<uint64_t>();
        if (u <= static_cast<uint64_t>(std::numeric_limits<int64_t>::max())) {
          integer(static_cast<int64_t>(u));
        } else {
          long1(u, false);
        }
        return;
      }
      case Json::value_t::number_float: {
        op(BINFLOAT);
        uint64_t bits = std::bit_cast<uint64_t>(v.get<double>());
        for (int i = 7; i >= 0; --i) out_.push_back(static_cast<char>((bits >> (8 * i)) & 0xff));
        return;
      }
      case Json::value_t::string: {
        const auto& s = v.get_ref<const std::string&>();
        if (metadata && where == Where::ClsValue && s.starts_with("<class '") && s.ends_with("'>")) {
          const std::string_view qualified(s.data() + 8, s.size() - 10);
          const auto dot = qualified.rfind('.');
          if (dot == std::string_view::npos || dot == 0 || dot + 1 == qualified.size()) {
            throw ValueError(fmt::format("{}: \"cls\" {} names no module", context_, s));
          }
          str(qualified.substr(0, dot));
          str(qualified.substr(dot + 1));
          op(STACK_GLOBAL);
          return;
        }
        str(s);
        return;
      }
      case Json::value_t::array: {
        const bool tuple = metadata && where == Where::EntryOfLeaves;
        if (tuple) {
          if (v.empty()) {
            op(EMPTY_TUPLE);
            return;
          }
          if (v.size() > 3) op(MARK);
          for (const auto& item : v) write(item, Where::Other, depth + 1);
          op(v.size() > 3 ? TUPLE : static_cast<Op>(TUPLE1 + v.size() - 1));
          return;
        }
        op(EMPTY_LIST);
        batched(v.size(), APPEND, APPENDS, [&](std::size_t i) { write(v[i], Where::Other, depth + 1); });
        return;
      }
      case Json::value_t::object: {
        op(EMPTY_DICT);
        std::vector<std::pair<const std::string*, const Json*>> items;
        items.reserve(v.size());
        for (const auto& [key, value] : v.items()) items.emplace_back(&key, &value);
        batched(items.size(), SETITEM, SETITEMS, [&](std::size_t i) {
          const std::string& key = *items[i].first;
          str(key);
          Where below = Where::Other;
          if (where == Where::Leaves) {
            below = Where::EntryOfLeaves;
          } else if (key == "leaves" || key == "non_tensors") {
            below = Where::Leaves;
          } else if (key == "cls") {
            below = Where::ClsValue;
          }
          write(*items[i].second, below, depth + 1);
        });
        return;
      }
      default:
        throw ValueError(fmt::format("{}: a {} value has no pickle form in the subset", context_, v.type_name()));
    }
  }

  // Items in batches as Python writes them: one item alone with `single`,
  // more between MARK and `many`.
  template <class F>
  void batched(std::size_t n, Op single, Op many, F&& item) {
    for (std::size_t from = 0; from < n; from += kBatch) {
      const std::size_t count = std::min(kBatch, n - from);
      if (count > 1) op(MARK);
      for (std::size_t i = from; i < from + count; ++i) item(i);
      op(count > 1 ? many : single);
    }
  }

  Layout layout_;
  const std::string& context_;
  std::string out_;
};

}  // namespace

Json loads(std::string_view bytes, const std::string& context) { return Reader(bytes, context).run(); }

std::string dumps(const Json& value, Layout layout, const std::string& context) {
  return Writer(layout, context).run(value);
}

}  // namespace tensordict::dist::pickle
