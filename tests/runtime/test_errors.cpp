// errors.h: one exception class per Python error tensordict raises, thrown
// where tensordict raises it, and kept when an error gains context.
#include <c10/util/Exception.h>
#include <nlohmann/json.hpp>

#include "persist_helpers.h"

using namespace tensordict;
using namespace td_test;

namespace {
// The most derived kind `fn()` throws, by name.
template <class Fn>
std::string kind_thrown(Fn&& fn) {
  try {
    fn();
  } catch (const KeyError&) {
    return "KeyError";
  } catch (const IndexError&) {
    return "IndexError";
  } catch (const std::out_of_range&) {
    return "std::out_of_range";
  } catch (const TypeError&) {
    return "TypeError";
  } catch (const ValueError&) {
    return "ValueError";
  } catch (const std::invalid_argument&) {
    return "std::invalid_argument";
  } catch (const NotImplementedError&) {
    return "NotImplementedError";
  } catch (const std::logic_error&) {
    return "std::logic_error";
  } catch (const RuntimeError&) {
    return "RuntimeError";
  } catch (const c10::Error&) {
    return "c10::Error";
  } catch (const std::runtime_error&) {
    return "std::runtime_error";
  } catch (...) {
    return "other";
  }
  return "<no exception>";
}
#define KIND(expr) kind_thrown([&] { (void)(expr); })
}  // namespace

TEST_CASE("errors.h: each Python error is a class deriving from the standard exception of its meaning", "[errors]") {
  STATIC_REQUIRE(std::is_base_of_v<std::out_of_range, KeyError>);
  STATIC_REQUIRE(std::is_base_of_v<std::out_of_range, IndexError>);
  STATIC_REQUIRE(std::is_base_of_v<std::invalid_argument, ValueError>);
  STATIC_REQUIRE(std::is_base_of_v<std::invalid_argument, TypeError>);
  STATIC_REQUIRE(std::is_base_of_v<std::logic_error, NotImplementedError>);
  STATIC_REQUIRE(std::is_base_of_v<std::runtime_error, RuntimeError>);
  // Siblings, as in Python: catching one does not catch the other.
  STATIC_REQUIRE_FALSE(std::is_base_of_v<ValueError, TypeError>);
  STATIC_REQUIRE_FALSE(std::is_base_of_v<TypeError, ValueError>);
  STATIC_REQUIRE_FALSE(std::is_base_of_v<IndexError, KeyError>);
  STATIC_REQUIRE_FALSE(std::is_base_of_v<KeyError, IndexError>);
}

TEST_CASE("a misuse throws the kind tensordict raises, with its message", "[errors]") {
  TensorDict td = sample({2});
  // KeyError: no such key.
  CHECK(KIND(td.get("missing")) == "KeyError");
  // IndexError: an index or a dim out of range, ours or libtorch's.
  CHECK(KIND(td.index({5})) == "IndexError");
  CHECK(TD_MESSAGE(td.index({5})) == "index 5 is out of range for batch dim 0 of size 2 (batch_size [2])");
  CHECK(KIND(td.index({at::tensor({7})})) == "IndexError");
  CHECK(KIND(td.unbind(3)) == "IndexError");
  // ValueError: a key path through a tensor (_td.py _get_tuple), bad permute dims.
  CHECK(KIND(td.get({"a", "x"})) == "ValueError");
  CHECK(KIND(td.permute({3})) == "ValueError");
  CHECK(KIND(td.set_("a", at::zeros({2, 5}))) == "ValueError");
  // TypeError: an entry or a handle of another kind than asked for.
  CHECK(KIND(td.get("nested")) == "TypeError");
  CHECK(TD_MESSAGE(td.get("nested")) ==
        "key 'nested' holds a TensorDict, not a tensor; use get_td() for nested tensordicts");
  CHECK(KIND(td.get_td("a")) == "TypeError");
  CHECK(TD_MESSAGE(td.get_td("a")) == "key 'a' holds a tensor of shape [2, 4], not a tensordict; use get()");
  CHECK(KIND(td.get_non_tensor("a")) == "TypeError");
  CHECK(KIND(LazyStackedTensorDict(td)) == "TypeError");
  CHECK(TD_MESSAGE(LazyStackedTensorDict(td)) ==
        "cannot view a TensorDict as a LazyStackedTensorDict: it is another kind of tensordict");
  CHECK(TD_MESSAGE(td.as<SubTensorDict>()) ==
        "cannot view a TensorDict as a SubTensorDict: it is another kind of tensordict");
  CHECK(KIND(td.get_value("a")->tensordict()) == "TypeError");
}

TEST_CASE("libtorch's error for a leaf keeps its meaning, named by op and key", "[errors]") {
  const TensorDict td = sample({2});
  auto failing = [&](auto check) {
    return [&td, check] {
      (void)td.apply([&](const at::Tensor& t) {
        check();
        return t;
      });
    };
  };
  CHECK(kind_thrown(failing([] { TORCH_CHECK_INDEX(false, "bad index"); })) == "IndexError");
  CHECK(kind_thrown(failing([] { TORCH_CHECK_VALUE(false, "bad value"); })) == "ValueError");
  CHECK(kind_thrown(failing([] { TORCH_CHECK_TYPE(false, "bad type"); })) == "TypeError");
  CHECK(kind_thrown(failing([] { TORCH_CHECK(false, "bad"); })) == "RuntimeError");
  CHECK(kind_thrown(failing([] { TORCH_CHECK_NOT_IMPLEMENTED(false, "no"); })) == "NotImplementedError");
  CHECK(message_of(failing([] { TORCH_CHECK_TYPE(false, "bad type"); })) == "apply failed for key 'a': bad type");
}

TEST_CASE("rethrow_reworded keeps the kind, the nested cause, and drops libtorch's backtrace", "[errors]") {
  auto reworded = [](auto thrower) {
    return [thrower] {
      try {
        thrower();
      } catch (...) {
        rethrow_reworded([](std::string_view what) { return "ctx: " + std::string(what); });
      }
    };
  };
  CHECK(kind_thrown(reworded([] { throw KeyError("k"); })) == "KeyError");
  CHECK(kind_thrown(reworded([] { throw IndexError("i"); })) == "IndexError");
  // A standard exception becomes the class of its meaning.
  CHECK(kind_thrown(reworded([] { throw std::out_of_range("o"); })) == "IndexError");
  CHECK(kind_thrown(reworded([] { throw TypeError("t"); })) == "TypeError");
  CHECK(kind_thrown(reworded([] { throw ValueError("v"); })) == "ValueError");
  CHECK(kind_thrown(reworded([] { throw std::invalid_argument("a"); })) == "ValueError");
  CHECK(kind_thrown(reworded([] { throw NotImplementedError("n"); })) == "NotImplementedError");
  CHECK(kind_thrown(reworded([] { throw std::logic_error("l"); })) == "NotImplementedError");
  CHECK(kind_thrown(reworded([] { throw std::runtime_error("r"); })) == "RuntimeError");
  CHECK(kind_thrown(reworded([] { throw RuntimeError("r"); })) == "RuntimeError");
  CHECK(kind_thrown(reworded([] { TORCH_CHECK_INDEX(false, "c10 index"); })) == "IndexError");
  CHECK(kind_thrown(reworded([] { TORCH_CHECK_VALUE(false, "c10 value"); })) == "ValueError");
  CHECK(kind_thrown(reworded([] { TORCH_CHECK_TYPE(false, "c10 type"); })) == "TypeError");
  CHECK(kind_thrown(reworded([] { TORCH_CHECK_NOT_IMPLEMENTED(false, "c10 ni"); })) == "NotImplementedError");
  CHECK(kind_thrown(reworded([] { TORCH_CHECK(false, "c10"); })) == "RuntimeError");
  CHECK(message_of(reworded([] { throw TypeError("t"); })) == "ctx: t");
  CHECK(message_of(reworded([] { TORCH_CHECK(false, "c10 message"); })) == "ctx: c10 message");
  // A throw that is no std::exception passes unchanged.
  CHECK(kind_thrown(reworded([] { throw 7; })) == "other");
  // The nested cause stays nested.
  auto nested = reworded([] {
    try {
      throw ValueError("cause");
    } catch (...) {
      std::throw_with_nested(KeyError("outer"));
    }
  });
  try {
    nested();
    FAIL("no exception");
  } catch (const KeyError& e) {
    CHECK(std::string(e.what()) == "ctx: outer");
    CHECK(kind_thrown([&] { std::rethrow_if_nested(e); }) == "ValueError");
  }
}

namespace {
// What `fn()` threw, caught as the root: its class name (by the standard
// base it also has) and message; "<not an Error>" when the root missed it.
template <class Fn>
std::string caught_as_root(Fn&& fn) {
  try {
    fn();
  } catch (const Error& e) {
    // Still a std::exception: the standard catch sees the same object.
    const auto* std_exception = dynamic_cast<const std::exception*>(&e);
    if (!std_exception || std::string(std_exception->what()) != e.what()) return "<two messages>";
    return kind_thrown([&] { throw; });
  } catch (...) {
    return "<not an Error>";
  }
  return "<no exception>";
}
#define ROOT(expr) caught_as_root([&] { (void)(expr); })
}  // namespace

TEST_CASE("every error the library throws is caught as tensordict::Error", "[errors]") {
  STATIC_REQUIRE(std::is_base_of_v<Error, KeyError>);
  STATIC_REQUIRE(std::is_base_of_v<Error, IndexError>);
  STATIC_REQUIRE(std::is_base_of_v<Error, ValueError>);
  STATIC_REQUIRE(std::is_base_of_v<Error, TypeError>);
  STATIC_REQUIRE(std::is_base_of_v<Error, NotImplementedError>);
  STATIC_REQUIRE(std::is_base_of_v<Error, RuntimeError>);
  TensorDict td = sample({2});
  TempDir tmp;
  // One of each class, thrown by the library itself.
  CHECK(ROOT(td.get("missing")) == "KeyError");
  CHECK(ROOT(td.index({5})) == "IndexError");
  CHECK(ROOT(td.permute({3})) == "ValueError");
  CHECK(ROOT(td.as<LazyStackedTensorDict>()) == "TypeError");
  CHECK(ROOT(td.apply([](const at::Tensor&) -> at::Tensor { TORCH_CHECK_NOT_IMPLEMENTED(false, "no"); })) ==
        "NotImplementedError");
  CHECK(ROOT(td.clone().lock_().set("new", at::zeros({2}))) == "RuntimeError");
  // libtorch's errors inside an op, wrapped with the op and the key.
  CHECK(ROOT(td.apply([](const at::Tensor& x) { return x.view({7, 7}); })) == "RuntimeError");
  CHECK(ROOT(td.apply([](const at::Tensor& x) { return x.index({at::tensor({9})}); })) == "IndexError");
  // Files: a missing tree, a corrupt meta.json, a file that is not HDF5.
  CHECK(ROOT(TensorDict::load_memmap((tmp.path() / "absent").string())) == "RuntimeError");
  fs::create_directories(tmp.path() / "corrupt");
  write_text(tmp.path() / "corrupt" / "meta.json", "{not json");
  CHECK(ROOT(TensorDict::load_memmap((tmp.path() / "corrupt").string())) == "RuntimeError");
  write_text(tmp.path() / "not.h5", "plain text");
  CHECK(ROOT(PersistentTensorDict::from_h5((tmp.path() / "not.h5").string())) == "RuntimeError");
  // Shapes, stacks and keys.
  CHECK(ROOT(stack({td, sample({3})})) != "<not an Error>");
  CHECK(ROOT(td.set("bad", at::zeros({5}))) != "<not an Error>");
  CHECK(ROOT(NestedKey("a").parent()) == "ValueError");
  CHECK(ROOT(td.rename_key_("missing", "other")) == "KeyError");
  // The tree walker's bound on nesting, and a key path through a tensor.
  CHECK(ROOT(td.get({"a", "x"})) == "ValueError");
  CHECK(ROOT(remove_tree(tmp.path() / "corrupt" / "meta.json" / "below")) != "<not an Error>");
}
