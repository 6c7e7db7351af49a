// Exceptions thrown by the runtime: one class per Python error that
// tensordict raises, so that a caller catches by meaning, all under one root:
// `catch (const tensordict::Error& e)` catches every error the library
// throws. Each class also derives from the standard exception of the same
// meaning, so catching that still works:
//   KeyError             a missing key                  (a std::out_of_range)
//   IndexError           an index or dim out of range   (a std::out_of_range)
//   ValueError           a bad value or shape           (a std::invalid_argument)
//   TypeError            an argument or entry of the    (a std::invalid_argument)
//                        wrong kind (a tensor where a tensordict is expected,
//                        a handle of another kind, non-tensor data of another
//                        type)
//   NotImplementedError  an op the object does not define (a std::logic_error)
//   RuntimeError         shape, device, lock, file and   (a std::runtime_error)
//                        peer problems
// Python's KeyError and IndexError are both LookupErrors, as these two are
// both std::out_of_range. Where libtorch raises for a leaf, its error keeps
// its meaning the same way (c10::IndexError -> IndexError, c10::ValueError
// -> ValueError, c10::TypeError -> TypeError, other c10::Errors ->
// RuntimeError), with the op and the key path in front of libtorch's
// message: no c10::Error escapes an op on a tensordict.
// Messages name the key path and the shapes involved.
#pragma once

#include <functional>
#include <stdexcept>
#include <string>
#include <string_view>

namespace tensordict {

// The root. Not itself a std::exception: each class below already derives
// from one, and a second std::exception base would make
// `catch (const std::exception&)` miss them (an ambiguous base).
class Error {
 public:
  virtual ~Error() = default;
  // The message, as the standard exception's what().
  virtual const char* what() const noexcept = 0;

 protected:
  Error() = default;
  Error(const Error&) = default;
  Error& operator=(const Error&) = default;
};

#define TENSORDICT_DEFINE_ERROR(Name, std_base)                                      \
  class Name : public std::std_base, public Error {                                 \
   public:                                                                          \
    using std::std_base::std_base;                                                  \
    const char* what() const noexcept override { return std::std_base::what(); }    \
  };
TENSORDICT_DEFINE_ERROR(KeyError, out_of_range)
TENSORDICT_DEFINE_ERROR(IndexError, out_of_range)
TENSORDICT_DEFINE_ERROR(ValueError, invalid_argument)
TENSORDICT_DEFINE_ERROR(TypeError, invalid_argument)
TENSORDICT_DEFINE_ERROR(NotImplementedError, logic_error)
TENSORDICT_DEFINE_ERROR(RuntimeError, runtime_error)
#undef TENSORDICT_DEFINE_ERROR

// Rethrows the exception in flight (call it in a catch block) as the same
// kind, with the message reword(its message): each class above as itself; a
// standard exception or a c10::Error as the class of its meaning
// (std::out_of_range -> IndexError, std::invalid_argument -> ValueError,
// std::logic_error -> NotImplementedError; a c10::Error as above, its
// message without libtorch's backtrace); anything else as RuntimeError. A
// cause nested in it (std::throw_with_nested) stays nested. For errors that
// gain context on their way out (a file, a module).
[[noreturn]] void rethrow_reworded(const std::function<std::string(std::string_view)>& reword);

}  // namespace tensordict
