// Exceptions thrown by the runtime: one class per Python error that
// tensordict raises, so that a caller catches by meaning. Each derives from
// the standard exception of the same meaning, so catching that still works:
//   KeyError             a missing key                  (a std::out_of_range)
//   IndexError           an index or dim out of range   (a std::out_of_range)
//   ValueError           a bad value or shape           (a std::invalid_argument)
//   TypeError            an argument or entry of the    (a std::invalid_argument)
//                        wrong kind (a tensor where a tensordict is expected,
//                        a handle of another kind, non-tensor data of another
//                        type)
//   NotImplementedError  an op the object does not define (a std::logic_error)
//   RuntimeError         std::runtime_error (shape, device, lock, file problems)
// Python's KeyError and IndexError are both LookupErrors, as these two are
// both std::out_of_range. Where libtorch raises for a leaf, its error keeps
// its meaning the same way (c10::IndexError -> IndexError, c10::ValueError
// -> ValueError, c10::TypeError -> TypeError, other c10::Errors ->
// std::runtime_error), with the op and the key path in front of libtorch's
// message: no c10::Error escapes an op on a tensordict.
// Messages name the key path and the shapes involved.
#pragma once

#include <functional>
#include <stdexcept>
#include <string>
#include <string_view>

namespace tensordict {

class KeyError : public std::out_of_range {
 public:
  using std::out_of_range::out_of_range;
};

class IndexError : public std::out_of_range {
 public:
  using std::out_of_range::out_of_range;
};

class ValueError : public std::invalid_argument {
 public:
  using std::invalid_argument::invalid_argument;
};

class TypeError : public std::invalid_argument {
 public:
  using std::invalid_argument::invalid_argument;
};

class NotImplementedError : public std::logic_error {
 public:
  using std::logic_error::logic_error;
};

// Rethrows the exception in flight (call it in a catch block) as the same
// kind, with the message reword(its message): the classes above, then the
// standard kinds they derive from, a c10::Error as its meaning above (its
// message without libtorch's backtrace), anything else as
// std::runtime_error. A cause nested in it (std::throw_with_nested) stays
// nested. For errors that gain context on their way out (a file, a module).
[[noreturn]] void rethrow_reworded(const std::function<std::string(std::string_view)>& reword);

}  // namespace tensordict
