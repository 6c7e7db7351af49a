#include "tensordict/errors.h"

#include <c10/util/Exception.h>

#include <exception>
#include <utility>

namespace tensordict {

namespace {
// `E` with `message`, keeping a cause nested in `e` nested.
template <class E>
[[noreturn]] void throw_as(const std::exception& e, std::string message) {
  if (const auto* nested = dynamic_cast<const std::nested_exception*>(&e); nested && nested->nested_ptr()) {
    try {
      nested->rethrow_nested();
    } catch (...) {
      std::throw_with_nested(E(std::move(message)));
    }
  }
  throw E(std::move(message));
}
}  // namespace

void rethrow_reworded(const std::function<std::string(std::string_view)>& reword) {
  // Most derived first: each kind is caught as itself, not as its base.
  try {
    throw;
  } catch (const KeyError& e) {
    throw_as<KeyError>(e, reword(e.what()));
  } catch (const IndexError& e) {
    throw_as<IndexError>(e, reword(e.what()));
  } catch (const TypeError& e) {
    throw_as<TypeError>(e, reword(e.what()));
  } catch (const ValueError& e) {
    throw_as<ValueError>(e, reword(e.what()));
  } catch (const NotImplementedError& e) {
    throw_as<NotImplementedError>(e, reword(e.what()));
  } catch (const RuntimeError& e) {
    throw_as<RuntimeError>(e, reword(e.what()));
  } catch (const c10::IndexError& e) {
    throw IndexError(reword(e.what_without_backtrace()));
  } catch (const c10::ValueError& e) {
    throw ValueError(reword(e.what_without_backtrace()));
  } catch (const c10::TypeError& e) {
    throw TypeError(reword(e.what_without_backtrace()));
  } catch (const c10::NotImplementedError& e) {
    throw NotImplementedError(reword(e.what_without_backtrace()));
  } catch (const c10::Error& e) {
    throw RuntimeError(reword(e.what_without_backtrace()));
  } catch (const std::out_of_range& e) {
    throw_as<IndexError>(e, reword(e.what()));
  } catch (const std::invalid_argument& e) {
    throw_as<ValueError>(e, reword(e.what()));
  } catch (const std::logic_error& e) {
    throw_as<NotImplementedError>(e, reword(e.what()));
  } catch (const std::exception& e) {
    throw_as<RuntimeError>(e, reword(e.what()));
  }
}

}  // namespace tensordict
