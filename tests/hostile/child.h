// Runs a hostile case in a child process under a time and memory limit, so
// that a crash, a hang or a runaway allocation fails the one case with a
// description instead of killing the suite.
#pragma once

#include <functional>
#include <string>

namespace hostile {

struct Limits {
  unsigned seconds = 20;
  // Address-space limit; not applied under AddressSanitizer (its shadow
  // memory reserves terabytes of address space).
  std::size_t memory_mb = 3072;
};

struct Outcome {
  // How the child ended.
  enum class Status { Returned, Threw, Crashed, TimedOut } status = Status::Crashed;
  int signal = 0;        // Crashed: the signal
  std::string text;      // Returned: what the case returned; Threw: the message
  std::string describe() const;
};

// Runs `fn` in a forked child. What it returns (or its exception's message)
// comes back through a pipe.
Outcome in_child(const std::function<std::string()>& fn, Limits limits = {});

}  // namespace hostile

// The case must throw (a named error, not a crash or hang); returns the message.
#define HOSTILE_THROWS(...)                                                        \
  [&] {                                                                             \
    const auto outcome_ = hostile::in_child([&]() -> std::string { __VA_ARGS__; return ""; }); \
    INFO(outcome_.describe());                                                      \
    REQUIRE(outcome_.status == hostile::Outcome::Status::Threw);                        \
    return outcome_.text;                                                           \
  }()

// The case must return normally; returns what the body returned.
#define HOSTILE_RETURNS(...)                                           \
  [&] {                                                                 \
    const auto outcome_ = hostile::in_child([&]() -> std::string { __VA_ARGS__; }); \
    INFO(outcome_.describe());                                          \
    REQUIRE(outcome_.status == hostile::Outcome::Status::Returned);         \
    return outcome_.text;                                               \
  }()
